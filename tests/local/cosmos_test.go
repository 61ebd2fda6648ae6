//go:build e2elocal

package local

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// cosmosAccount talks to the embedded server started by hack/e2e-local.sh:
// the Cosmos DB REST API for everything an application or a change feed
// processor does, and the server's control API for what only the service
// itself does (creating containers with a given number of physical
// partitions, splitting one).
type cosmosAccount struct {
	endpoint string // https://host:port/
	key      string // base64 account key
	control  *control.Client
	http     *http.Client
}

func cosmosAccountFromEnv() (*cosmosAccount, error) {
	a := &cosmosAccount{
		endpoint: os.Getenv("COSMOS_ENDPOINT"),
		key:      os.Getenv("COSMOS_KEY"),
	}
	controlURL := os.Getenv("COSMOS_CONTROL_URL")
	if a.endpoint == "" || a.key == "" || controlURL == "" {
		return nil, fmt.Errorf("COSMOS_ENDPOINT, COSMOS_KEY and COSMOS_CONTROL_URL must be set (run through hack/e2e-local.sh)")
	}
	pemBytes, err := os.ReadFile(os.Getenv("COSMOS_CA_FILE"))
	if err != nil {
		return nil, fmt.Errorf("COSMOS_CA_FILE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("COSMOS_CA_FILE holds no certificate")
	}
	a.http = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	a.control = control.NewClient(controlURL, a.http)
	return a, nil
}

// connectionString is what the Secret of the TriggerAuthentication holds.
func (a *cosmosAccount) connectionString() string {
	return "AccountEndpoint=" + a.endpoint + ";AccountKey=" + a.key + ";"
}

// rest sends one signed Cosmos DB REST request. resourcePath has no leading
// slash ("dbs/e2e/colls/items/docs"). A status other than want is an error.
func (a *cosmosAccount) rest(ctx context.Context, method, resourcePath string, header http.Header, body any, want ...int) (http.Header, []byte, int, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, 0, err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.endpoint+resourcePath, reader)
	if err != nil {
		return nil, nil, 0, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(a.key, method, "/"+resourcePath, date)
	if err != nil {
		return nil, nil, 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2018-12-31")
	req.Header.Set("Authorization", auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return resp.Header, b, resp.StatusCode, nil
		}
	}
	return resp.Header, b, resp.StatusCode, fmt.Errorf("%s /%s: %s: %.300s", method, resourcePath, resp.Status, b)
}

func partitionKeyHeader(pk string) http.Header {
	b, _ := json.Marshal([]string{pk})
	return http.Header{"X-Ms-Documentdb-Partitionkey": {string(b)}}
}

// writeItems inserts n orders whose partition key lands in the given
// physical range, as an application would (POST …/docs).
func (a *cosmosAccount) writeItems(ctx context.Context, db, coll, rangeID string, n int) error {
	pk, err := a.control.PartitionKey(ctx, db, coll, rangeID)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		doc := map[string]any{"id": fmt.Sprintf("order-%d-%d", time.Now().UnixNano(), i), "customerId": pk, "amount": i}
		if _, _, _, err := a.rest(ctx, http.MethodPost, "dbs/"+db+"/colls/"+coll+"/docs", partitionKeyHeader(pk), doc, http.StatusCreated); err != nil {
			return err
		}
	}
	return nil
}

// processor moves leases the way a change feed processor host does: read
// the change feed of the lease's range from its continuation, then write the
// new continuation back into the lease document.
type processor struct {
	account              *cosmosAccount
	db, monitored, lease string
	prefix               string
}

func (p *processor) leasePath(token string) string {
	return "dbs/" + p.db + "/colls/" + p.lease + "/docs/" + p.prefix + ".." + token
}

func (p *processor) readLease(ctx context.Context, token string) (map[string]any, error) {
	_, b, _, err := p.account.rest(ctx, http.MethodGet, p.leasePath(token), partitionKeyHeader(p.prefix+".."+token), nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, json.Unmarshal(b, &doc)
}

// catchUp drains the change feed of the lease's range and checkpoints the
// lease at its end.
func (p *processor) catchUp(ctx context.Context, token string) error {
	lease, err := p.readLease(ctx, token)
	if err != nil {
		return err
	}
	continuation, _ := lease["ContinuationToken"].(string)
	for {
		h := http.Header{
			"A-Im":                                {"Incremental feed"},
			"X-Ms-Documentdb-Partitionkeyrangeid": {token},
			"X-Ms-Max-Item-Count":                 {"1000"},
		}
		if continuation != "" {
			h.Set("If-None-Match", continuation)
		}
		respHeader, _, status, err := p.account.rest(ctx, http.MethodGet, "dbs/"+p.db+"/colls/"+p.monitored+"/docs", h, nil, http.StatusOK, http.StatusNotModified)
		if err != nil {
			return fmt.Errorf("lease %s: %w", token, err)
		}
		continuation = respHeader.Get("Etag")
		if status == http.StatusNotModified {
			break
		}
	}
	lease["ContinuationToken"] = continuation
	lease["timestamp"] = time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	_, _, _, err = p.account.rest(ctx, http.MethodPut, p.leasePath(token), partitionKeyHeader(p.prefix+".."+token), lease, http.StatusOK)
	return err
}

// setOwner writes owner into the lease, as the processor host that holds
// it does.
func (p *processor) setOwner(ctx context.Context, token, owner string) error {
	lease, err := p.readLease(ctx, token)
	if err != nil {
		return err
	}
	lease["Owner"] = owner
	_, _, _, err = p.account.rest(ctx, http.MethodPut, p.leasePath(token), partitionKeyHeader(p.prefix+".."+token), lease, http.StatusOK)
	return err
}

// followSplit does what a processor does when its range answers 410 after a
// split: one lease per child range, starting from the parent's
// continuation, then the parent lease goes.
func (p *processor) followSplit(ctx context.Context, parent control.Range) ([]string, error) {
	lease, err := p.readLease(ctx, parent.ID)
	if err != nil {
		return nil, err
	}
	live, err := p.account.control.Container(ctx, p.db, p.monitored)
	if err != nil {
		return nil, err
	}
	var children []string
	for _, r := range live.Ranges {
		if r.MinInclusive < parent.MinInclusive || (parent.MaxExclusive != "" && r.MaxExclusive > parent.MaxExclusive) || r.ID == parent.ID {
			continue
		}
		child := map[string]any{}
		for k, v := range lease {
			if !strings.HasPrefix(k, "_") {
				child[k] = v
			}
		}
		id := p.prefix + ".." + r.ID
		child["id"] = id
		child["LeaseToken"] = r.ID
		child["FeedRange"] = map[string]any{"Range": map[string]any{"min": r.MinInclusive, "max": r.MaxExclusive}}
		if _, _, _, err := p.account.rest(ctx, http.MethodPost, "dbs/"+p.db+"/colls/"+p.lease+"/docs", partitionKeyHeader(id), child, http.StatusCreated); err != nil {
			return nil, err
		}
		children = append(children, r.ID)
	}
	if len(children) < 2 {
		return nil, fmt.Errorf("range %s has %d live children, want 2", parent.ID, len(children))
	}
	_, _, _, err = p.account.rest(ctx, http.MethodDelete, p.leasePath(parent.ID), partitionKeyHeader(p.prefix+".."+parent.ID), nil, http.StatusNoContent)
	return children, err
}

// firstStart makes the account as a change feed processor finds it on its
// first start: the monitored container with physicalPartitions ranges, the
// lease container, and the leases a .NET processor creates then, one per
// physical range (dotnet-v0), starting now.
func firstStart(ctx context.Context, t *testing.T, account *cosmosAccount, database string) (control.Container, *processor) {
	t.Helper()
	ranges, one := physicalPartitions, 1
	items, err := account.control.CreateContainer(ctx, control.CreateContainerRequest{
		Database: database, ID: monitored, PartitionKeyPath: "/customerId", Ranges: &ranges})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.control.CreateContainer(ctx, control.CreateContainerRequest{
		Database: database, ID: leases, PartitionKeyPath: "/id", Ranges: &one}); err != nil {
		t.Fatal(err)
	}
	return items, startProcessor(ctx, t, account, database, processorName)
}

// startProcessor creates the leases of processor name on its first start
// (dotnet-v0, one per physical range of the monitored container, starting
// now) in the database firstStart made.
func startProcessor(ctx context.Context, t *testing.T, account *cosmosAccount, database, name string) *processor {
	t.Helper()
	started, err := account.control.CreateLeases(ctx, control.CreateLeasesRequest{
		Name: name, Database: database, Monitored: monitored, Leases: leases,
		Format: "dotnet-v0", StartFromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(started.Leases) != physicalPartitions {
		t.Fatalf("processor %s started with %d leases, want %d", name, len(started.Leases), physicalPartitions)
	}
	return &processor{account: account, db: database, monitored: monitored, lease: leases, prefix: started.Prefix}
}

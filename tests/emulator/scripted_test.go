package emulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// scriptedAccount is a Cosmos DB account in memory, for driving package
// azure's estimator through its exported names with exact wire data: it
// is the transport of the estimator's clients and answers the reads of the
// database and container RIDs, the lease query (one page of documents),
// the partition key ranges (one range, ["", "FF")) and each change feed
// read, by default with 304. Its account is myaccount.documents.azure.com,
// its database and container RIDs "dbRID" and "collRID==".
type scriptedAccount struct {
	mu sync.Mutex
	// leases is the lease query's page: raw JSON documents.
	leases []string
	// page, when set, replaces the whole lease query body.
	page string
	// feed answers a change feed read; nil is 304 Not Modified.
	feed func(h http.Header) *http.Response
	// every, when set, answers every request instead.
	every func() *http.Response
	// reads holds the headers of every change feed read.
	reads []http.Header
}

const (
	scriptedEndpoint   = "https://myaccount.documents.azure.com:443/"
	scriptedConnection = "AccountEndpoint=" + scriptedEndpoint + ";AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=;"
	// scriptedPrefix starts the ids of processor "p"'s leases on appdb/orders.
	scriptedPrefix = "pmyaccount.documents.azure.com_dbRID_collRID==.."
)

func (a *scriptedAccount) Do(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.every != nil {
		return withRequest(a.every(), req), nil
	}
	path := strings.TrimPrefix(req.URL.Path, "/")
	switch {
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/docs"):
		body := a.page
		if body == "" {
			body = `{"_rid":"leasesRID","Documents":[` + strings.Join(a.leases, ",") + `],"_count":` + jsonNumber(len(a.leases)) + `}`
		}
		return jsonResponse(req, http.StatusOK, body, nil), nil
	case strings.HasSuffix(path, "/pkranges"):
		return jsonResponse(req, http.StatusOK, `{"PartitionKeyRanges":[{"id":"0","minInclusive":"","maxExclusive":"FF","parents":[]}]}`, nil), nil
	case strings.HasSuffix(path, "/docs"):
		a.reads = append(a.reads, req.Header.Clone())
		if a.feed == nil {
			return jsonResponse(req, http.StatusNotModified, "", http.Header{"X-Ms-Session-Token": {"0:-1#1"}}), nil
		}
		return withRequest(a.feed(req.Header), req), nil
	case strings.Count(path, "/") == 1: // dbs/{db}
		return jsonResponse(req, http.StatusOK, `{"_rid":"dbRID"}`, nil), nil
	case strings.Count(path, "/") == 3: // dbs/{db}/colls/{c}
		return jsonResponse(req, http.StatusOK, `{"_rid":"collRID=="}`, nil), nil
	}
	return jsonResponse(req, http.StatusNotFound, `{"code":"NotFound","message":"no such resource"}`, nil), nil
}

func (a *scriptedAccount) lastRead() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reads) == 0 {
		return nil
	}
	return a.reads[len(a.reads)-1]
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func jsonResponse(req *http.Request, status int, body string, header http.Header) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}, "X-Ms-Request-Charge": {"1"}}
	for k, v := range header {
		h[k] = v
	}
	return &http.Response{StatusCode: status, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

func withRequest(resp *http.Response, req *http.Request) *http.Response {
	resp.Request = req
	return resp
}

// feedPage answers a change feed read with a page and a session token.
func feedPage(body, sessionToken string) func(http.Header) *http.Response {
	return func(http.Header) *http.Response {
		return jsonResponse(nil, http.StatusOK, body, http.Header{"X-Ms-Session-Token": {sessionToken}, "Etag": {`"9"`}})
	}
}

// estimator is package azure's estimator for processor "p" on appdb/orders,
// leases in appdb/leases, both accounts answered by a.
func (a *scriptedAccount) estimator(t testing.TB) *azure.CosmosDBLagEstimator {
	t.Helper()
	return scriptedEstimator(t, a, azure.CosmosDBContainers{Database: "appdb", Container: "orders", LeaseDatabase: "appdb", LeaseContainer: "leases", Processor: "p"})
}

func scriptedEstimator(t testing.TB, a *scriptedAccount, names azure.CosmosDBContainers) *azure.CosmosDBLagEstimator {
	t.Helper()
	data, leases, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: scriptedConnection}, a, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return azure.NewCosmosDBLagEstimator(azure.NewCosmosDBClient(data, a), azure.NewCosmosDBClient(leases, a), names)
}

// estimate runs one estimate over a.
func (a *scriptedAccount) estimate(t testing.TB) (azure.CosmosDBLagEstimate, error) {
	t.Helper()
	return a.estimator(t).Estimate(context.Background())
}

// inspect runs one estimate over a through a recorder, as the commands do,
// and returns what it recorded.
func (a *scriptedAccount) inspect(t testing.TB) (azure.CosmosDBInspection, error) {
	t.Helper()
	return scriptedInspection(t, a, azure.CosmosDBContainers{Database: "appdb", Container: "orders", LeaseDatabase: "appdb", LeaseContainer: "leases", Processor: "p"})
}

func scriptedInspection(t testing.TB, a *scriptedAccount, names azure.CosmosDBContainers) (azure.CosmosDBInspection, error) {
	t.Helper()
	recorder := &azure.CosmosDBRecorder{Next: a}
	data, leases, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: scriptedConnection}, recorder, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	e := azure.NewCosmosDBLagEstimator(azure.NewCosmosDBClient(data, recorder), azure.NewCosmosDBClient(leases, recorder), names)
	estimate, err := e.Estimate(context.Background())
	return recorder.Inspect(e, estimate), err
}

// leaseDoc gives a lease document of processor "p" the id its token calls
// for: doc holds the other fields ("id" excluded), token the lease token.
func leaseDoc(token, fields string) string {
	id, _ := json.Marshal(scriptedPrefix + token)
	if fields == "" {
		return `{"id":` + string(id) + `}`
	}
	return `{"id":` + string(id) + `,` + fields + `}`
}

// bodyReader is a response body from a reader, for bodies that fail or
// never end.
func bodyResponse(body io.Reader, contentLength int64) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(body), ContentLength: contentLength}
}

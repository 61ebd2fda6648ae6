//go:build e2e

package helper

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kedacore/keda/v2/tests/helper"
)

// The suites' Secret (the connection string) and the Deployment of KEDA's
// test processor image, configured with the helper's names.
const (
	CosmosDBSecretTemplate = `
apiVersion: v1
kind: Secret
metadata:
  name: {{.SecretName}}
  namespace: {{.TestNamespace}}
data:
  connection: {{.Connection}}
`
	CosmosDBProcessorTemplate = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.DeploymentName}}
  namespace: {{.TestNamespace}}
  labels:
    app: {{.DeploymentName}}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{.DeploymentName}}
  template:
    metadata:
      labels:
        app: {{.DeploymentName}}
    spec:
      containers:
        - name: {{.DeploymentName}}
          image: ghcr.io/kedacore/tests-azure-cosmosdb
          env:
            - name: RUN_MODE
              value: processor
            - name: CosmosDbConfig__Connection
              valueFrom:
                secretKeyRef:
                  name: {{.SecretName}}
                  key: connection
            - name: CosmosDbConfig__DatabaseId
              value: {{.DatabaseID}}
            - name: CosmosDbConfig__ContainerId
              value: {{.ContainerID}}
            - name: CosmosDbConfig__LeaseDatabaseId
              value: {{.DatabaseID}}
            - name: CosmosDbConfig__LeaseContainerId
              value: {{.LeaseContainerID}}
            - name: CosmosDbConfig__ProcessorName
              value: {{.ProcessorName}}
`
)

// CosmosDBHelper prepares an account for the azure-cosmosdb e2e tests (a
// database, monitored containers, a lease container, items) and reads the
// leases. It speaks the REST API with the account key: the physical partition
// key ranges and one range's change feed are not exposed by the Go SDK.
type CosmosDBHelper struct {
	endpoint string
	key      []byte
	client   *http.Client
	dbRID    string

	DatabaseID       string
	Container        CosmosDBContainer // the monitored container
	LeaseContainerID string
	ProcessorName    string
}

// CosmosDBContainer is a monitored container and its physical partitions.
type CosmosDBContainer struct {
	ID     string
	rid    string
	ranges []string // partition key range ids
}

// PartitionCount is the number of physical partitions of the container.
func (c CosmosDBContainer) PartitionCount() int { return len(c.ranges) }

// CosmosDBLag is what a processor's leases show.
type CosmosDBLag struct {
	Leases       int // lease documents (not the .info and .lock documents)
	Checkpointed int // leases that carry a continuation
	Pending      int // items written after those continuations
	Lagging      int // leases with pending items
}

// NewCosmosDBHelper reads the account endpoint and key from a connection
// string and names a fresh database and processor for one test run.
func NewCosmosDBHelper(t *testing.T, connectionString, testName string) *CosmosDBHelper {
	var endpoint, key string
	for _, part := range strings.Split(connectionString, ";") {
		name, value, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "accountendpoint":
			endpoint = strings.TrimSpace(value)
		case "accountkey":
			key = strings.TrimSpace(value)
		}
	}
	require.NotEmpty(t, endpoint, "the Cosmos DB connection string has no AccountEndpoint")
	decodedKey, err := base64.StdEncoding.DecodeString(key)
	require.True(t, err == nil && len(decodedKey) > 0, "the Cosmos DB connection string has no base64 AccountKey")

	suffix := helper.GetRandomNumber()
	return &CosmosDBHelper{
		endpoint:         strings.TrimSuffix(endpoint, "/"),
		key:              decodedKey,
		client:           &http.Client{Timeout: 20 * time.Second},
		DatabaseID:       fmt.Sprintf("%s-db-%d", testName, suffix),
		LeaseContainerID: "leases",
		ProcessorName:    fmt.Sprintf("%s-processor-%d", testName, suffix),
	}
}

// Endpoint is the account endpoint, as a trigger names it for bearer tokens.
func (c *CosmosDBHelper) Endpoint() string { return c.endpoint + "/" }

// CleanupTimeout bounds each Cosmos DB deletion a cleanup makes.
const CleanupTimeout = 30 * time.Second

// ProvisionedThroughputEnv names the environment variable that says the
// account is a provisioned-throughput one ("true"). Only then does a suite
// create a container with throughput: a serverless account (the one
// kedacore/testing-infrastructure creates) refuses throughput, and its
// containers start with one physical partition.
const ProvisionedThroughputEnv = "TF_AZURE_COSMOSDB_PROVISIONED_THROUGHPUT"

// Provisioned reports whether ProvisionedThroughputEnv is "true".
func Provisioned() bool { return strings.EqualFold(os.Getenv(ProvisionedThroughputEnv), "true") }

// Deadline bounds a suite: every wait of its steps is cut to the time left
// before it, so that the steps end by it and the cleanups (which have
// timeouts of their own) follow.
type Deadline time.Time

// NewDeadline is the deadline for a suite's steps: d from now.
func NewDeadline(d time.Duration) Deadline { return Deadline(time.Now().Add(d)) }

// Iterations is n, or fewer, so that n polls intervalSeconds apart end by
// the deadline; at least 1 (KEDA's wait helpers then wait one interval).
func (d Deadline) Iterations(n, intervalSeconds int) int {
	left := int(time.Until(time.Time(d)) / (time.Duration(intervalSeconds) * time.Second))
	return max(1, min(n, left))
}

// Seconds is s, or the seconds left before the deadline if fewer; at least 1.
func (d Deadline) Seconds(s int) int {
	return max(1, min(s, int(time.Until(time.Time(d))/time.Second)))
}

// Context is a context that ends after timeout or at the deadline, whichever is first.
func (d Deadline) Context(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(timeout)
	if time.Time(d).Before(deadline) {
		deadline = time.Time(d)
	}
	return context.WithDeadline(parent, deadline)
}

// CreateDatabase creates the database with a monitored container ("items")
// and a lease container, both partitioned by /id and created without
// throughput, as a serverless account requires (on a provisioned-throughput
// account each gets the service's default, 400 RU/s); each starts with one
// physical partition. The database's deletion is registered (t.Cleanup)
// before it is created, and deletes the containers with it.
func (c *CosmosDBHelper) CreateDatabase(ctx context.Context, t *testing.T) {
	t.Cleanup(func() { c.delete(t, "dbs/"+c.DatabaseID) })
	reply, err := c.send(ctx, http.MethodPost, "dbs", nil, map[string]string{"id": c.DatabaseID})
	require.NoErrorf(t, err, "cannot create database %s", c.DatabaseID)
	c.dbRID = rid(t, reply)
	c.Container = c.createContainer(ctx, t, "items", 0)
	c.createContainer(ctx, t, c.LeaseContainerID, 0)
}

// CreateContainer creates another monitored container with at least the
// given number of physical partitions, on a provisioned-throughput account
// only (Provisioned; the caller skips otherwise); its deletion is registered
// (t.Cleanup) before it is created, so it goes when t (a step's subtest) ends.
//
// It is given the least autoscale maximum that yields its partitions: one
// physical partition per 10,000 RU/s of the maximum, rounded up
// (learn.microsoft.com/azure/cosmos-db/: concepts-limits,
// scaling-provisioned-throughput-best-practices), so n partitions take
// (n-1)*10,000 + 1,000 RU/s: 11,000 for two. The helper checks the count
// the service reports.
func (c *CosmosDBHelper) CreateContainer(ctx context.Context, t *testing.T, id string, partitions int) CosmosDBContainer {
	require.Truef(t, Provisioned(), "CreateContainer needs a provisioned-throughput account (%s=true)", ProvisionedThroughputEnv)
	t.Cleanup(func() { c.delete(t, c.containerLink(id)) })
	return c.createContainer(ctx, t, id, partitions)
}

// createContainer creates a container: without throughput for partitions 0,
// else with the autoscale maximum CreateContainer describes.
func (c *CosmosDBHelper) createContainer(ctx context.Context, t *testing.T, id string, partitions int) CosmosDBContainer {
	headers := map[string]string{}
	if partitions > 0 {
		headers["x-ms-cosmos-offer-autopilot-settings"] = fmt.Sprintf(`{"maxThroughput":%d}`, (partitions-1)*10000+1000)
	}
	reply, err := c.send(ctx, http.MethodPost, "dbs/"+c.DatabaseID+"/colls", headers, map[string]any{
		"id":           id,
		"partitionKey": map[string]any{"paths": []string{"/id"}, "kind": "Hash", "version": 2},
	})
	require.NoErrorf(t, err, "cannot create container %s", id)
	container := CosmosDBContainer{ID: id, rid: rid(t, reply)}
	for continuation := ""; ; {
		reply, err := c.send(ctx, http.MethodGet, c.containerLink(id)+"/pkranges", map[string]string{"x-ms-continuation": continuation}, nil)
		require.NoError(t, err, "cannot read the partition key ranges")
		var page struct {
			PartitionKeyRanges []struct {
				ID string `json:"id"`
			} `json:"PartitionKeyRanges"`
		}
		require.NoError(t, json.Unmarshal(reply.body, &page), "cannot decode the partition key ranges")
		for _, r := range page.PartitionKeyRanges {
			container.ranges = append(container.ranges, r.ID)
		}
		if continuation = reply.header.Get("x-ms-continuation"); continuation == "" {
			break
		}
	}
	require.GreaterOrEqualf(t, len(container.ranges), max(partitions, 1), "container %s should have at least %d physical partitions", id, partitions)
	t.Logf("container %s/%s has %d physical partition(s)", c.DatabaseID, id, len(container.ranges))
	return container
}

// WriteLeases writes, for each physical partition of the container, the
// lease a .NET change feed processor named processor writes once it has
// checkpointed there (a partition key range lease: id
// <processor><host>_<database rid>_<container rid>..<range id>, the range id
// as LeaseToken, the etag of the partition's change feed end as
// ContinuationToken), so that a step can measure lag without starting a
// processor.
func (c *CosmosDBHelper) WriteLeases(ctx context.Context, t *testing.T, container CosmosDBContainer, processor string) {
	host := strings.TrimPrefix(strings.TrimPrefix(c.endpoint, "https://"), "http://")
	host, _, _ = strings.Cut(host, ":")
	for _, r := range container.ranges {
		_, end, err := c.readChangeFeed(ctx, container.ID, r, "*")
		require.NoErrorf(t, err, "cannot read the change feed of partition %s", r)
		id := fmt.Sprintf("%s%s_%s_%s..%s", processor, host, c.dbRID, container.rid, r)
		_, err = c.send(ctx, http.MethodPost, c.containerLink(c.LeaseContainerID)+"/docs", map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf("[%q]", id)},
			map[string]any{"id": id, "version": 0, "LeaseToken": r, "ContinuationToken": end, "Owner": "", "properties": map[string]string{}, "timestamp": time.Now().UTC().Format(time.RFC3339)})
		require.NoErrorf(t, err, "cannot write lease %s", id)
	}
}

// delete deletes a resource (a 404 is no error), within CleanupTimeout of its own.
func (c *CosmosDBHelper) delete(t *testing.T, link string) {
	ctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout)
	defer cancel()
	if reply, err := c.send(ctx, http.MethodDelete, link, nil, nil); err != nil && reply.status != http.StatusNotFound {
		t.Errorf("cannot delete %s: %v", link, err)
	}
}

func rid(t *testing.T, reply cosmosDBReply) string {
	var resource struct {
		RID string `json:"_rid"`
	}
	require.NoError(t, json.Unmarshal(reply.body, &resource), "cannot decode a created resource")
	require.NotEmpty(t, resource.RID, "a created resource has no _rid")
	return resource.RID
}

// InsertItems writes n items with random ids, so random partitions. Each write
// is one transaction: one more item of lag in the partition it lands in.
func (c *CosmosDBHelper) InsertItems(ctx context.Context, t *testing.T, container CosmosDBContainer, n int) {
	link := c.containerLink(container.ID)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("item-%d-%d", time.Now().UnixNano(), helper.GetRandomNumber())
		_, err := c.send(ctx, http.MethodPost, link+"/docs", map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf("[%q]", id)},
			map[string]any{"id": id, "createdAt": time.Now().UTC().Format(time.RFC3339Nano)})
		require.NoErrorf(t, err, "cannot insert item %d of %d", i+1, n)
	}
}

// InsertItemsIntoEveryPartition writes n items, then more until every
// partition of the container has received some.
func (c *CosmosDBHelper) InsertItemsIntoEveryPartition(ctx context.Context, t *testing.T, container CosmosDBContainer, n int) {
	ends := make(map[string]string, len(container.ranges))
	for _, r := range container.ranges {
		var err error
		_, ends[r], err = c.readChangeFeed(ctx, container.ID, r, "*")
		require.NoErrorf(t, err, "cannot read the change feed of partition %s", r)
	}
	c.InsertItems(ctx, t, container, n)
	for round := 1; ; round++ {
		missed := 0
		for _, r := range container.ranges {
			count, _, err := c.readChangeFeed(ctx, container.ID, r, ends[r])
			require.NoErrorf(t, err, "cannot read the change feed of partition %s", r)
			if count == 0 {
				missed++
			}
		}
		if missed == 0 {
			return
		}
		require.Lessf(t, round, 10, "%d partition(s) got none of the items after %d rounds of writes", missed, round)
		c.InsertItems(ctx, t, container, 5*len(container.ranges))
	}
}

// ReadLag reads the leases of a processor of the container (documents whose
// id starts with the processor name and holds "..") and counts the items
// written after each lease's continuation, reading the partition's change
// feed from there. A fresh container's leases are partition key range
// leases: the lease token is a range id, the continuation a quoted LSN.
func (c *CosmosDBHelper) ReadLag(ctx context.Context, container CosmosDBContainer, processor string) (CosmosDBLag, error) {
	var lag CosmosDBLag
	link := c.containerLink(c.LeaseContainerID)
	query := map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": processor}},
	}
	for continuation := ""; ; {
		reply, err := c.send(ctx, http.MethodPost, link+"/docs", map[string]string{
			"Content-Type":                               "application/query+json",
			"x-ms-documentdb-isquery":                    "true",
			"x-ms-continuation":                          continuation,
			"x-ms-documentdb-query-enablecrosspartition": "true",
		}, query)
		if err != nil {
			return lag, fmt.Errorf("querying the lease container: %w", err)
		}
		var page struct {
			Documents []struct {
				ID                string  `json:"id"`
				LeaseToken        string  `json:"LeaseToken"`
				ContinuationToken *string `json:"ContinuationToken"`
			} `json:"Documents"`
		}
		if err := json.Unmarshal(reply.body, &page); err != nil {
			return lag, fmt.Errorf("decoding the lease documents: %w", err)
		}
		for _, lease := range page.Documents {
			if !strings.Contains(lease.ID, "..") {
				continue
			}
			lag.Leases++
			if lease.ContinuationToken == nil || *lease.ContinuationToken == "" {
				continue
			}
			lag.Checkpointed++
			etag := *lease.ContinuationToken
			if _, err := strconv.ParseInt(etag, 10, 64); err == nil {
				etag = strconv.Quote(etag)
			}
			pending, _, err := c.readChangeFeed(ctx, container.ID, lease.LeaseToken, etag)
			if err != nil {
				return lag, fmt.Errorf("lease %s: %w", lease.LeaseToken, err)
			}
			lag.Pending += pending
			if pending > 0 {
				lag.Lagging++
			}
		}
		if continuation = reply.header.Get("x-ms-continuation"); continuation == "" {
			return lag, nil
		}
	}
}

// WaitForCheckpoints waits up to timeout for the processor (ProcessorName) to
// hold a lease for every partition of the monitored container, each with a
// continuation at the end of its partition's change feed. While some lease
// has no continuation, every partition is written to, again every 30 seconds,
// so that the processor has a batch to checkpoint.
func (c *CosmosDBHelper) WaitForCheckpoints(ctx context.Context, t *testing.T, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := c.Container.PartitionCount()
	var lag CosmosDBLag
	var wrote time.Time
	err := helper.KedaEventually(ctx, func(ctx context.Context) (bool, error) {
		var err error
		if lag, err = c.ReadLag(ctx, c.Container, c.ProcessorName); err != nil {
			return false, err
		}
		if lag.Leases >= n && lag.Checkpointed < lag.Leases && time.Since(wrote) > 30*time.Second {
			c.InsertItemsIntoEveryPartition(ctx, t, c.Container, 2*n)
			wrote = time.Now()
		}
		return lag.Leases >= n && lag.Checkpointed == lag.Leases && lag.Pending == 0, nil
	}, 5*time.Second)
	t.Logf("leases of %s: %+v (%v)", c.ProcessorName, lag, err)
	return err == nil
}

func (c *CosmosDBHelper) containerLink(id string) string {
	return fmt.Sprintf("dbs/%s/colls/%s", c.DatabaseID, id)
}

// readChangeFeed reads one partition's change feed after etag (a quoted LSN,
// or "*" for now) to its end, returning how many items it holds and the etag
// of its end.
func (c *CosmosDBHelper) readChangeFeed(ctx context.Context, containerID, rangeID, etag string) (int, string, error) {
	link := c.containerLink(containerID)
	count := 0
	for {
		reply, err := c.send(ctx, http.MethodGet, link+"/docs", map[string]string{
			"A-IM":                                "Incremental feed",
			"If-None-Match":                       etag,
			"x-ms-max-item-count":                 "1000",
			"x-ms-documentdb-partitionkeyrangeid": rangeID,
		}, nil)
		if err != nil {
			return 0, "", fmt.Errorf("reading the change feed of partition %s: %w", rangeID, err)
		}
		var page struct {
			Count int `json:"_count"`
		}
		if reply.status == http.StatusOK {
			if err := json.Unmarshal(reply.body, &page); err != nil {
				return 0, "", fmt.Errorf("decoding the change feed of partition %s: %w", rangeID, err)
			}
		}
		if next := reply.header.Get("etag"); next != "" {
			etag = next
		}
		count += page.Count
		if reply.status == http.StatusNotModified || page.Count == 0 {
			return count, etag, nil
		}
	}
}

// cosmosDBReply is a response already read and closed.
type cosmosDBReply struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request signed with the account key (the signature covers
// the verb, resource type, resource link and date; the key is never logged),
// retries throttled ones, and returns an error for any status but 2xx and 304.
// The path is a resource (dbs/x) or a feed (dbs/x/colls); empty headers are
// not sent.
func (c *CosmosDBHelper) send(ctx context.Context, method, path string, headers map[string]string, body any) (cosmosDBReply, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return cosmosDBReply{}, err
		}
	}
	segments := strings.Split(path, "/")
	resourceType, resourceLink := segments[len(segments)-1], strings.Join(segments[:len(segments)-1], "/")
	if len(segments)%2 == 0 {
		resourceType, resourceLink = segments[len(segments)-2], path
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.endpoint+"/"+path, bytes.NewReader(payload))
		if err != nil {
			return cosmosDBReply{}, err
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		mac := hmac.New(sha256.New, c.key)
		fmt.Fprintf(mac, "%s\n%s\n%s\n%s\n\n", strings.ToLower(method), resourceType, resourceLink, strings.ToLower(date))
		req.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+base64.StdEncoding.EncodeToString(mac.Sum(nil))))
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2020-11-05")
		req.Header.Set("Content-Type", "application/json")
		for name, value := range headers {
			if value != "" {
				req.Header.Set(name, value)
			}
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return cosmosDBReply{}, fmt.Errorf("%s %s: %w", method, path, err)
		}
		reply := cosmosDBReply{status: resp.StatusCode, header: resp.Header}
		reply.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return reply, fmt.Errorf("%s %s: reading the body: %w", method, path, err)
		case resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified:
			return reply, nil
		case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < 5:
			select { // within ctx, which bounds every request of a step
			case <-ctx.Done():
				return reply, ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		default:
			return reply, fmt.Errorf("%s %s: HTTP %d (substatus %s): %s", method, path, resp.StatusCode, resp.Header.Get("x-ms-substatus"), reply.body)
		}
	}
}

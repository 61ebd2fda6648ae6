//go:build e2e

package helper

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"
)

// CosmosDBHelper sets up what a change feed processor leaves in a real
// account: a database, a monitored container, a lease container holding the
// processor's leases exactly as the .NET v3 processor (and the Azure
// Functions trigger) writes them, and items in the monitored container. It
// plays the processor's part in the e2e tests: it plants leases checkpointed
// at the end of each partition's change feed, and later moves those
// checkpoints forward as if the backlog had been processed.
//
// Data-plane calls go through azcosmos. The two reads azcosmos does not
// expose — the physical partition key ranges with their ids, and one range's
// change feed from a raw etag — are signed GETs made here.
type CosmosDBHelper struct {
	endpoint string
	key      []byte
	http     *http.Client

	client    *azcosmos.Client
	database  *azcosmos.DatabaseClient
	monitored *azcosmos.ContainerClient
	leases    *azcosmos.ContainerClient

	DatabaseID         string
	MonitoredContainer string
	LeaseContainer     string
	ProcessorName      string
	// MonitoredPartitionKey is the monitored container's partition key
	// path: /customerId unless set before CreateContainers. A real
	// processor that creates its containers if missing (KEDA's test image)
	// needs /id, the path it would create.
	MonitoredPartitionKey string

	leasePrefix string
	ranges      []CosmosDBPartitionKeyRange
	// checkpoints holds each lease's continuation (a quoted LSN etag) by range id.
	checkpoints map[string]string
	random      *rand.Rand
}

// CosmosDBPartitionKeyRange is one physical partition of the monitored container.
type CosmosDBPartitionKeyRange struct {
	ID           string `json:"id"`
	MinInclusive string `json:"minInclusive"`
	MaxExclusive string `json:"maxExclusive"`
}

// CosmosDBMonitoredMaxThroughput is the autoscale maximum of the monitored
// container. Cosmos DB gives a new container one physical partition per
// 10,000 RU/s of autoscale maximum, so this yields two partitions — enough to
// see the active-partition cap — while billing only 10% of it when idle.
const CosmosDBMonitoredMaxThroughput = 20000

// NewCosmosDBHelper parses an account connection string
// (AccountEndpoint=...;AccountKey=...;) and names a fresh database and
// processor for one test run.
func NewCosmosDBHelper(t *testing.T, connectionString, testName string) *CosmosDBHelper {
	t.Helper()
	var endpoint, key string
	for _, part := range strings.Split(connectionString, ";") {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "accountendpoint":
			endpoint = strings.TrimSpace(value)
		case "accountkey":
			key = strings.TrimSpace(value)
		}
	}
	require.NotEmpty(t, endpoint, "the Cosmos DB connection string has no AccountEndpoint")
	require.NotEmpty(t, key, "the Cosmos DB connection string has no AccountKey")
	decodedKey, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err, "the Cosmos DB account key is not base64")

	client, err := azcosmos.NewClientFromConnectionString(connectionString, nil)
	require.NoError(t, err, "cannot create the Cosmos DB client")

	random := rand.New(rand.NewSource(time.Now().UnixNano()))
	suffix := random.Intn(100000)
	return &CosmosDBHelper{
		endpoint:              strings.TrimSuffix(endpoint, "/"),
		key:                   decodedKey,
		http:                  &http.Client{Timeout: 30 * time.Second},
		client:                client,
		DatabaseID:            fmt.Sprintf("%s-db-%d", testName, suffix),
		MonitoredContainer:    "orders",
		LeaseContainer:        "leases",
		ProcessorName:         fmt.Sprintf("%s-processor-%d", testName, suffix),
		MonitoredPartitionKey: "/customerId",
		checkpoints:           map[string]string{},
		random:                random,
	}
}

// Endpoint is the account endpoint, as a workload-identity trigger names it.
func (c *CosmosDBHelper) Endpoint() string { return c.endpoint + "/" }

// PartitionCount is the number of physical partitions of the monitored container.
func (c *CosmosDBHelper) PartitionCount() int { return len(c.ranges) }

// CreateContainers creates the database, the monitored container (partition
// key MonitoredPartitionKey, several physical partitions) and the lease container
// (partition key /id, as the .NET processor requires by default), and reads
// what the processor's lease ids are built from.
func (c *CosmosDBHelper) CreateContainers(ctx context.Context, t *testing.T) {
	t.Helper()
	_, err := c.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: c.DatabaseID}, nil)
	require.NoErrorf(t, err, "cannot create database %s", c.DatabaseID)
	c.database, err = c.client.NewDatabase(c.DatabaseID)
	require.NoError(t, err)

	throughput := azcosmos.NewAutoscaleThroughputProperties(CosmosDBMonitoredMaxThroughput)
	_, err = c.database.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     c.MonitoredContainer,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{c.MonitoredPartitionKey}, Version: 2},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: &throughput})
	require.NoErrorf(t, err, "cannot create monitored container %s", c.MonitoredContainer)
	_, err = c.database.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     c.LeaseContainer,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
	}, nil)
	require.NoErrorf(t, err, "cannot create lease container %s", c.LeaseContainer)
	c.monitored, err = c.database.NewContainer(c.MonitoredContainer)
	require.NoError(t, err)
	c.leases, err = c.database.NewContainer(c.LeaseContainer)
	require.NoError(t, err)

	// Lease ids: {processorName}{accountHost}_{databaseRid}_{containerRid}..{leaseToken}.
	database, err := c.database.Read(ctx, nil)
	require.NoError(t, err, "cannot read the database")
	container, err := c.monitored.Read(ctx, nil)
	require.NoError(t, err, "cannot read the monitored container")
	endpointURL, err := url.Parse(c.endpoint)
	require.NoError(t, err)
	c.leasePrefix = fmt.Sprintf("%s%s_%s_%s", c.ProcessorName, endpointURL.Hostname(),
		database.DatabaseProperties.ResourceID, container.ContainerProperties.ResourceID)

	c.ranges = c.readPartitionKeyRanges(ctx, t)
	t.Logf("monitored container %s/%s has %d physical partition(s)", c.DatabaseID, c.MonitoredContainer, len(c.ranges))
}

// DeleteDatabase deletes the database and with it both containers.
func (c *CosmosDBHelper) DeleteDatabase(ctx context.Context, t *testing.T) {
	t.Helper()
	if c.database == nil {
		return
	}
	if _, err := c.database.Delete(ctx, nil); err != nil {
		t.Errorf("cannot delete database %s: %v", c.DatabaseID, err)
	}
}

// PlantLeases writes the processor's store marker and one PK-range (version 0)
// lease per physical partition, each checkpointed at the end of its
// partition's change feed: a processor that has caught up and was scaled to
// zero (no owner). Partitions whose feed is still empty first get a few
// items, so that every checkpoint is a real LSN.
func (c *CosmosDBHelper) PlantLeases(ctx context.Context, t *testing.T) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		empty := 0
		for _, r := range c.ranges {
			_, etag := c.readChangeFeed(ctx, t, r.ID, "")
			if etag == "" {
				empty++
				continue
			}
			c.checkpoints[r.ID] = etag
		}
		if empty == 0 {
			break
		}
		require.Lessf(t, attempt, 20, "%d partition(s) still have no change feed after %d rounds of writes", empty, attempt)
		c.InsertItems(ctx, t, 10*len(c.ranges))
	}

	c.upsertLease(ctx, t, map[string]any{"id": c.leasePrefix + ".info"})
	for _, r := range c.ranges {
		c.writeLease(ctx, t, r)
	}
}

// CatchUpCheckpoints moves every lease's checkpoint to the end of its
// partition's change feed, as the processor does once it has processed
// everything written so far.
func (c *CosmosDBHelper) CatchUpCheckpoints(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, r := range c.ranges {
		_, etag := c.readChangeFeed(ctx, t, r.ID, c.checkpoints[r.ID])
		if etag != "" {
			c.checkpoints[r.ID] = etag
		}
		c.writeLease(ctx, t, r)
	}
}

// InsertItems writes n new items with random partition keys, spreading them
// over the physical partitions. Each write is one transaction, so it adds
// one to the lag of the partition it lands in.
func (c *CosmosDBHelper) InsertItems(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		fields := map[string]any{
			"id":         fmt.Sprintf("order-%d", c.random.Int63()),
			"customerId": fmt.Sprintf("customer-%d", c.random.Int63()),
			"total":      c.random.Intn(1000),
			"createdAt":  time.Now().UTC().Format(time.RFC3339Nano),
		}
		item, err := json.Marshal(fields)
		require.NoError(t, err)
		partitionKey, _ := fields[strings.TrimPrefix(c.MonitoredPartitionKey, "/")].(string)
		_, err = c.monitored.CreateItem(ctx, azcosmos.NewPartitionKeyString(partitionKey), item, nil)
		require.NoErrorf(t, err, "cannot insert item %d of %d", i+1, n)
	}
}

// InsertItemsIntoEveryPartition writes at least n items, then more until every
// partition has items past its checkpoint, so that every lease lags.
func (c *CosmosDBHelper) InsertItemsIntoEveryPartition(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	c.InsertItems(ctx, t, n)
	for attempt := 0; ; attempt++ {
		lagging := 0
		for _, pending := range c.PendingPerPartition(ctx, t) {
			if pending > 0 {
				lagging++
			}
		}
		if lagging == len(c.ranges) {
			return
		}
		require.Lessf(t, attempt, 20, "only %d of %d partitions lag after %d rounds of writes", lagging, len(c.ranges), attempt)
		c.InsertItems(ctx, t, 10*len(c.ranges))
	}
}

// PendingPerPartition counts, by range id, the items written after each
// lease's checkpoint — the lag the scaler should see, one transaction per
// item. It reads the change feed without moving any checkpoint.
func (c *CosmosDBHelper) PendingPerPartition(ctx context.Context, t *testing.T) map[string]int {
	t.Helper()
	pending := make(map[string]int, len(c.ranges))
	for _, r := range c.ranges {
		pending[r.ID], _ = c.readChangeFeed(ctx, t, r.ID, c.checkpoints[r.ID])
	}
	return pending
}

// CosmosDBLeaseProgress is what a real processor has written to the lease
// container: its leases, and how many of them carry a checkpoint.
type CosmosDBLeaseProgress struct {
	Leases       int
	Checkpointed int
}

// LeaseProgress reads the lease documents of ProcessorName as a real
// processor wrote them (any SDK, any lease version): documents whose id
// starts with the processor name and holds "..", the lease separator.
func (c *CosmosDBHelper) LeaseProgress(ctx context.Context, t *testing.T) CosmosDBLeaseProgress {
	t.Helper()
	query := "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)"
	pager := c.leases.NewQueryItemsPager(query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@processor", Value: c.ProcessorName}},
	})
	var progress CosmosDBLeaseProgress
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err, "querying the lease container")
		for _, raw := range page.Items {
			var lease struct {
				ID                string `json:"id"`
				ContinuationToken string `json:"ContinuationToken"`
			}
			require.NoError(t, json.Unmarshal(raw, &lease), "decoding a lease document")
			if !strings.Contains(lease.ID, "..") {
				continue // the processor's .info and .lock documents
			}
			progress.Leases++
			if lease.ContinuationToken != "" {
				progress.Checkpointed++
			}
		}
	}
	return progress
}

// CosmosDBExpectedReplicas is what the scaler's metric makes the HPA choose, with the
// default AverageValue target: min(lagging partitions, ceil(total lag /
// threshold)), within maxReplicas.
func CosmosDBExpectedReplicas(pending map[string]int, threshold, maxReplicas int) int {
	total, active := 0, 0
	for _, n := range pending {
		if n > 0 {
			total += n
			active++
		}
	}
	replicas := min(active, (total+threshold-1)/threshold)
	return min(replicas, maxReplicas)
}

// writeLease writes the .NET v3 PK-range lease of one range with its current checkpoint.
func (c *CosmosDBHelper) writeLease(ctx context.Context, t *testing.T, r CosmosDBPartitionKeyRange) {
	t.Helper()
	c.upsertLease(ctx, t, map[string]any{
		"id":                c.leasePrefix + ".." + r.ID,
		"version":           0,
		"LeaseToken":        r.ID,
		"FeedRange":         map[string]any{"Range": map[string]string{"min": r.MinInclusive, "max": r.MaxExclusive}},
		"Owner":             nil,
		"ContinuationToken": c.checkpoints[r.ID],
		"properties":        map[string]string{},
		"timestamp":         time.Now().UTC().Format(time.RFC3339Nano),
		"Mode":              "Incremental Feed",
	})
}

func (c *CosmosDBHelper) upsertLease(ctx context.Context, t *testing.T, lease map[string]any) {
	t.Helper()
	body, err := json.Marshal(lease)
	require.NoError(t, err)
	id, _ := lease["id"].(string)
	_, err = c.leases.UpsertItem(ctx, azcosmos.NewPartitionKeyString(id), body, nil)
	require.NoErrorf(t, err, "cannot write lease document %s", id)
}

func (c *CosmosDBHelper) readPartitionKeyRanges(ctx context.Context, t *testing.T) []CosmosDBPartitionKeyRange {
	t.Helper()
	link := fmt.Sprintf("dbs/%s/colls/%s", c.DatabaseID, c.MonitoredContainer)
	var ranges []CosmosDBPartitionKeyRange
	continuation := ""
	for {
		headers := map[string]string{}
		if continuation != "" {
			headers["x-ms-continuation"] = continuation
		}
		resp := c.get(ctx, t, link+"/pkranges", "pkranges", link, headers)
		require.Equalf(t, http.StatusOK, resp.status, "reading partition key ranges: %s", resp.body)
		var page struct {
			PartitionKeyRanges []CosmosDBPartitionKeyRange `json:"PartitionKeyRanges"`
		}
		require.NoError(t, json.Unmarshal(resp.body, &page), "decoding partition key ranges")
		ranges = append(ranges, page.PartitionKeyRanges...)
		if continuation = resp.header.Get("x-ms-continuation"); continuation == "" {
			break
		}
	}
	require.NotEmpty(t, ranges, "the monitored container has no partition key ranges")
	return ranges
}

// readChangeFeed reads one range's change feed after etag ("" = from the
// beginning) to its end, returning how many items it holds and the etag of
// its end ("" when the range has never been written to).
func (c *CosmosDBHelper) readChangeFeed(ctx context.Context, t *testing.T, rangeID, etag string) (int, string) {
	t.Helper()
	link := fmt.Sprintf("dbs/%s/colls/%s", c.DatabaseID, c.MonitoredContainer)
	count := 0
	for {
		headers := map[string]string{
			"A-IM":                                "Incremental feed",
			"x-ms-max-item-count":                 "1000",
			"x-ms-documentdb-partitionkeyrangeid": rangeID,
		}
		if etag != "" {
			headers["If-None-Match"] = etag
		}
		resp := c.get(ctx, t, link+"/docs", "docs", link, headers)
		switch resp.status {
		case http.StatusNotModified:
			if next := resp.header.Get("etag"); next != "" {
				etag = next
			}
			return count, etag
		case http.StatusOK:
			var page struct {
				Count int `json:"_count"`
			}
			require.NoErrorf(t, json.Unmarshal(resp.body, &page), "decoding the change feed of range %s", rangeID)
			next := resp.header.Get("etag")
			require.NotEmptyf(t, next, "change feed page of range %s has no etag", rangeID)
			count += page.Count
			if page.Count == 0 || next == etag {
				return count, next
			}
			etag = next
		default:
			require.Failf(t, "change feed read failed", "range %s: HTTP %d (substatus %s): %s",
				rangeID, resp.status, resp.header.Get("x-ms-substatus"), resp.body)
		}
	}
}

// cosmosDBReply is a response already read and closed.
type cosmosDBReply struct {
	status int
	header http.Header
	body   []byte
}

// get sends one GET signed with the account key: the signature covers the
// verb, resource type, resource link and date.
func (c *CosmosDBHelper) get(ctx context.Context, t *testing.T, path, resourceType, resourceLink string, headers map[string]string) cosmosDBReply {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint+"/"+path, nil)
	require.NoError(t, err)
	date := time.Now().UTC().Format(http.TimeFormat)
	mac := hmac.New(sha256.New, c.key)
	fmt.Fprintf(mac, "get\n%s\n%s\n%s\n\n", resourceType, resourceLink, strings.ToLower(date))
	signature := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	req.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+signature))
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	for name, value := range headers {
		req.Header.Set(name, value)
	}
	resp, err := c.http.Do(req)
	require.NoErrorf(t, err, "GET %s", path)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoErrorf(t, err, "GET %s: reading the body", path)
	return cosmosDBReply{status: resp.StatusCode, header: resp.Header, body: body}
}

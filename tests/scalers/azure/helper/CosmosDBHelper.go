//go:build e2e
// +build e2e

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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kedacore/keda/v2/tests/helper"
)

// CosmosDBHelper prepares an account for the azure-cosmosdb e2e tests and
// reads what the change feed processor they scale (KEDA's test image, the .NET
// SDK's processor) writes there: a database, a monitored container with the
// physical partitions a suite needs, a lease container, items, and the leases.
//
// It speaks the REST API with the account key, so the tests need no Cosmos DB
// SDK: the physical partition key ranges and one range's change feed, which
// the tests read, are not exposed by the Go SDK anyway.
type CosmosDBHelper struct {
	endpoint string
	key      []byte
	client   *http.Client
	ranges   []string // ids of the monitored container's physical partitions

	DatabaseID       string
	ContainerID      string
	LeaseContainerID string
	ProcessorName    string
}

// CosmosDBLag is what the processor's leases show.
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
		client:           &http.Client{Timeout: 30 * time.Second},
		DatabaseID:       fmt.Sprintf("%s-db-%d", testName, suffix),
		ContainerID:      "items",
		LeaseContainerID: "leases",
		ProcessorName:    fmt.Sprintf("%s-processor-%d", testName, suffix),
	}
}

// Endpoint is the account endpoint, as a trigger names it for bearer tokens.
func (c *CosmosDBHelper) Endpoint() string { return c.endpoint + "/" }

// PartitionCount is the number of physical partitions of the monitored container.
func (c *CosmosDBHelper) PartitionCount() int { return len(c.ranges) }

// CreateContainers creates the database, the monitored container with the given
// number of physical partitions, and a one-partition lease container, both
// partitioned by /id as the processor image would create them.
//
// Each gets the least throughput that yields its partitions: a physical
// partition serves at most 10,000 RU/s, and a new autoscale container gets one
// per 10,000 RU/s of its maximum (learn.microsoft.com/azure/cosmos-db/:
// concepts-limits, scaling-provisioned-throughput-best-practices, autoscale-faq).
// So n partitions take a maximum of (n-1)*10,000 + 1,000 (maxima step by
// 1,000): 1,000, the lowest, for one; 11,000 for two. Autoscale bills each hour
// from 10% of the maximum (100 or 1,100 RU/s) at 1.5 times the manual rate;
// manual throughput would bill 400 RU/s, or over 6,000 for two partitions (a
// new manual container gets one per 6,000 RU/s), every hour. Serverless
// accounts refuse throughput: the suites need a provisioned-throughput account.
func (c *CosmosDBHelper) CreateContainers(ctx context.Context, t *testing.T, partitions int) {
	_, err := c.send(ctx, http.MethodPost, "dbs", nil, map[string]string{"id": c.DatabaseID})
	require.NoErrorf(t, err, "cannot create database %s", c.DatabaseID)
	dbLink := "dbs/" + c.DatabaseID
	for id, n := range map[string]int{c.ContainerID: partitions, c.LeaseContainerID: 1} {
		headers := map[string]string{"x-ms-cosmos-offer-autopilot-settings": fmt.Sprintf(`{"maxThroughput":%d}`, (n-1)*10000+1000)}
		_, err = c.send(ctx, http.MethodPost, dbLink+"/colls", headers, map[string]any{
			"id":           id,
			"partitionKey": map[string]any{"paths": []string{"/id"}, "kind": "Hash", "version": 2},
		})
		require.NoErrorf(t, err, "cannot create container %s", id)
	}

	link := c.containerLink(c.ContainerID)
	for continuation := ""; ; {
		reply, err := c.send(ctx, http.MethodGet, link+"/pkranges", map[string]string{"x-ms-continuation": continuation}, nil)
		require.NoError(t, err, "cannot read the partition key ranges")
		var page struct {
			PartitionKeyRanges []struct {
				ID string `json:"id"`
			} `json:"PartitionKeyRanges"`
		}
		require.NoError(t, json.Unmarshal(reply.body, &page), "cannot decode the partition key ranges")
		for _, r := range page.PartitionKeyRanges {
			c.ranges = append(c.ranges, r.ID)
		}
		if continuation = reply.header.Get("x-ms-continuation"); continuation == "" {
			break
		}
	}
	require.GreaterOrEqualf(t, len(c.ranges), partitions, "the monitored container should have at least %d physical partitions", partitions)
	t.Logf("container %s/%s has %d physical partition(s)", c.DatabaseID, c.ContainerID, len(c.ranges))
}

// DeleteDatabase deletes the database and with it both containers.
func (c *CosmosDBHelper) DeleteDatabase(ctx context.Context, t *testing.T) {
	link := "dbs/" + c.DatabaseID
	if _, err := c.send(ctx, http.MethodDelete, link, nil, nil); err != nil {
		t.Errorf("cannot delete database %s: %v", c.DatabaseID, err)
	}
}

// InsertItems writes n items with random ids, so random partitions. Each write
// is one transaction: one more item of lag in the partition it lands in.
func (c *CosmosDBHelper) InsertItems(ctx context.Context, t *testing.T, n int) {
	link := c.containerLink(c.ContainerID)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("item-%d-%d", time.Now().UnixNano(), helper.GetRandomNumber())
		_, err := c.send(ctx, http.MethodPost, link+"/docs", map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf("[%q]", id)},
			map[string]any{"id": id, "createdAt": time.Now().UTC().Format(time.RFC3339Nano)})
		require.NoErrorf(t, err, "cannot insert item %d of %d", i+1, n)
	}
}

// InsertItemsIntoEveryPartition writes n items, then more until every
// partition has received some.
func (c *CosmosDBHelper) InsertItemsIntoEveryPartition(ctx context.Context, t *testing.T, n int) {
	ends := make(map[string]string, len(c.ranges))
	for _, r := range c.ranges {
		var err error
		_, ends[r], err = c.readChangeFeed(ctx, r, "*")
		require.NoErrorf(t, err, "cannot read the change feed of partition %s", r)
	}
	c.InsertItems(ctx, t, n)
	for round := 1; ; round++ {
		missed := 0
		for _, r := range c.ranges {
			count, _, err := c.readChangeFeed(ctx, r, ends[r])
			require.NoErrorf(t, err, "cannot read the change feed of partition %s", r)
			if count == 0 {
				missed++
			}
		}
		if missed == 0 {
			return
		}
		require.Lessf(t, round, 10, "%d partition(s) got none of the items after %d rounds of writes", missed, round)
		c.InsertItems(ctx, t, 5*len(c.ranges))
	}
}

// ReadLag reads the processor's leases (documents whose id starts with the
// processor name and holds "..") and counts the items written after each
// lease's continuation, reading the partition's change feed from there. A
// fresh container's leases are the .NET processor's partition key range
// leases: the lease token is a range id, the continuation a quoted LSN.
func (c *CosmosDBHelper) ReadLag(ctx context.Context) (CosmosDBLag, error) {
	var lag CosmosDBLag
	link := c.containerLink(c.LeaseContainerID)
	query := map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": c.ProcessorName}},
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
			pending, _, err := c.readChangeFeed(ctx, lease.LeaseToken, etag)
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

// WaitForCheckpoints waits up to five minutes for the processor to hold a
// lease for every partition, each checkpointed at the end of its partition's
// change feed. A .NET processor checkpoints a lease only after processing a
// batch from it, so while some lease has no continuation, every partition is
// written to (again every 30 seconds: a processor that reads from "now" skips
// what was written before it started).
func (c *CosmosDBHelper) WaitForCheckpoints(ctx context.Context, t *testing.T) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var lag CosmosDBLag
	var wrote time.Time
	err := helper.KedaEventually(ctx, func(ctx context.Context) (bool, error) {
		var err error
		if lag, err = c.ReadLag(ctx); err != nil {
			return false, err
		}
		if lag.Leases >= len(c.ranges) && lag.Checkpointed < lag.Leases && time.Since(wrote) > 30*time.Second {
			c.InsertItemsIntoEveryPartition(ctx, t, 2*len(c.ranges))
			wrote = time.Now()
		}
		return lag.Leases >= len(c.ranges) && lag.Checkpointed == lag.Leases && lag.Pending == 0, nil
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
func (c *CosmosDBHelper) readChangeFeed(ctx context.Context, rangeID, etag string) (int, string, error) {
	link := c.containerLink(c.ContainerID)
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
			time.Sleep(time.Duration(attempt) * time.Second)
		default:
			return reply, fmt.Errorf("%s %s: HTTP %d (substatus %s): %s", method, path, resp.StatusCode, resp.Header.Get("x-ms-substatus"), reply.body)
		}
	}
}

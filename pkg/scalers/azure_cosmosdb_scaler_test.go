package scalers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// Placeholder credentials: tests assert they never appear in an error or event.
const (
	testCosmosDBAccountKey   = "dGVzdC1hY2NvdW50LWtleS1ub3QtZm9yLWxvZ3MtN2YzYTlj"
	testCosmosDBWrongKey     = "d3JvbmctYWNjb3VudC1rZXktbm90LWZvci1sb2dzLTQ0MQ=="
	testCosmosDBSecret       = "client-secret-not-for-logs"
	testCosmosDBDatabaseRID  = "Dm0aAA=="
	testCosmosDBItemsRID     = "Dm0aAKj0eAc="
	testCosmosDBLeasesRID    = "Dm0aAOw3cFE="
	testCosmosDBPublicHost   = "https://myaccount.documents.azure.com:443/"
	testCosmosDBAVADFormat   = "2021-09-15"
	testCosmosDBQueryPattern = "STARTSWITH(c.id, @processor)"
)

type testCosmosDBObject = map[string]any

// testCosmosDBRange is a physical partition key range of the monitored container.
type testCosmosDBRange struct {
	id, min, max string
	parents      []string
}

// testCosmosDBFault answers the change feed reads of one range: times
// answers (-1: every one), then calls then (with the server locked).
type testCosmosDBFault struct {
	status, substatus, retryAfterMs, times int
	then                                   func()
}

type testCosmosDBRequest struct {
	kind   string // database, container, pkranges, query, changefeed or unknown
	header http.Header
}

// testCosmosDBServer is a compact Cosmos DB account (database db,
// monitored container items, lease container leases) on an httptest TLS
// server (keys and tokens never go over plain HTTP, loopback included): it checks every request's master-key signature and records its
// headers, serves the RIDs, the partition key ranges and the lease query
// in pages, and the change feed from per-range LSNs in both modes, with
// injectable faults.
type testCosmosDBServer struct {
	server *httptest.Server
	key    string

	mu        sync.Mutex
	leases    []string            // lease container documents
	ranges    []testCosmosDBRange // the monitored container's ranges
	feeds     map[string][]int64  // pending LSNs by range id, or "id[min,max)" for an EPK part
	faults    map[string][]*testCosmosDBFault
	leasePage int // lease query page cap besides x-ms-max-item-count
	rangePage int // partition key ranges per page (0: all)
	requests  []testCosmosDBRequest
}

func newTestCosmosDBServer(t *testing.T) *testCosmosDBServer {
	s := &testCosmosDBServer{key: testCosmosDBAccountKey, feeds: map[string][]int64{}, faults: map[string][]*testCosmosDBFault{},
		ranges: []testCosmosDBRange{{id: "0", min: "", max: "80"}, {id: "1", min: "80", max: "FF"}}}
	s.server = httptest.NewTLSServer(s)
	t.Cleanup(s.server.Close)
	return s
}

// testCosmosDBClient is KEDA's HTTP client (its timeout) trusting the
// httptest TLS servers' certificate, which they all share: the scaler's
// transport in these tests.
func testCosmosDBClient(t *testing.T, config *scalersconfig.ScalerConfig) *http.Client {
	server := httptest.NewTLSServer(http.NotFoundHandler())
	client := server.Client()
	server.Close()
	client.Timeout = config.GlobalHTTPTimeout
	t.Cleanup(client.CloseIdleConnections)
	return client
}

func (s *testCosmosDBServer) connection() string {
	return "AccountEndpoint=" + s.server.URL + "/;AccountKey=" + testCosmosDBAccountKey
}

// leaseID is the id a .NET processor gives the lease of token on this
// account's db/items.
func (s *testCosmosDBServer) leaseID(processor, token string) string {
	return processor + s.host() + "_" + testCosmosDBDatabaseRID + "_" + testCosmosDBItemsRID + ".." + token
}

func (s *testCosmosDBServer) host() string {
	u, _ := url.Parse(s.server.URL)
	return u.Hostname()
}

// changes records pending changes with LSNs from..to on a range (or EPK part).
func (s *testCosmosDBServer) changes(key string, from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for lsn := from; lsn <= to; lsn++ {
		s.feeds[key] = append(s.feeds[key], lsn)
	}
}

func (s *testCosmosDBServer) fail(rangeID string, f testCosmosDBFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[rangeID] = append(s.faults[rangeID], &f)
}

func (s *testCosmosDBServer) recorded(kind string) []testCosmosDBRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []testCosmosDBRequest
	for _, r := range s.requests {
		if kind == "" || r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// reads returns the change feed reads of one range id.
func (s *testCosmosDBServer) reads(rangeID string) []testCosmosDBRequest {
	var out []testCosmosDBRequest
	for _, r := range s.recorded("changefeed") {
		if r.header.Get("x-ms-documentdb-partitionkeyrangeid") == rangeID {
			out = append(out, r)
		}
	}
	return out
}

func testCosmosDBSign(key, verb, resourceType, resourceLink, date string) string {
	k, _ := base64.StdEncoding.DecodeString(key)
	mac := hmac.New(sha256.New, k)
	fmt.Fprintf(mac, "%s\n%s\n%s\n%s\n\n", strings.ToLower(verb), strings.ToLower(resourceType), resourceLink, strings.ToLower(date))
	return url.QueryEscape("type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

func (s *testCosmosDBServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	kind, resourceType, link := testCosmosDBRoute(r.Method, seg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, testCosmosDBRequest{kind: kind, header: r.Header.Clone()})
	h := r.Header
	switch {
	case kind == "unknown":
		s.reply(w, http.StatusNotFound, 0, nil, testCosmosDBObject{"code": "NotFound", "message": "no such resource"})
		return
	case h.Get("x-ms-date") == "" || h.Get("x-ms-version") == "" || h.Get("Authorization") != testCosmosDBSign(s.key, r.Method, resourceType, link, h.Get("x-ms-date")):
		s.reply(w, http.StatusUnauthorized, 0, nil, testCosmosDBObject{"code": "Unauthorized", "message": "The input authorization token can't serve the request."})
		return
	}
	rids := map[string]string{"dbs/db": testCosmosDBDatabaseRID, "dbs/db/colls/items": testCosmosDBItemsRID, "dbs/db/colls/leases": testCosmosDBLeasesRID}
	container := strings.Join(seg[:min(len(seg), 4)], "/")
	if _, ok := rids[container]; !ok {
		s.reply(w, http.StatusNotFound, 0, nil, testCosmosDBObject{"code": "NotFound", "message": "Resource Not Found"})
		return
	}
	switch kind {
	case "database", "container":
		s.reply(w, http.StatusOK, 0, nil, testCosmosDBObject{"id": seg[len(seg)-1], "_rid": rids[container]})
	case "pkranges":
		var all []testCosmosDBObject
		for _, pk := range s.ranges {
			all = append(all, testCosmosDBObject{"id": pk.id, "minInclusive": pk.min, "maxExclusive": pk.max, "parents": append([]string{}, pk.parents...)})
		}
		page, next := testCosmosDBPage(all, h.Get("x-ms-continuation"), s.rangePage)
		s.reply(w, http.StatusOK, 0, http.Header{"x-ms-continuation": next}, testCosmosDBObject{"_rid": testCosmosDBItemsRID, "PartitionKeyRanges": page, "_count": len(page)})
	case "query":
		s.query(w, h, body)
	case "changefeed":
		s.changeFeed(w, h)
	}
}

// testCosmosDBRoute names a request's kind and the resource type and link
// its signature covers.
func testCosmosDBRoute(method string, seg []string) (kind, resourceType, link string) {
	switch {
	case len(seg) == 2 && seg[0] == "dbs" && method == http.MethodGet:
		return "database", "dbs", strings.Join(seg, "/")
	case len(seg) == 4 && seg[0] == "dbs" && seg[2] == "colls" && method == http.MethodGet:
		return "container", "colls", strings.Join(seg, "/")
	case len(seg) == 5 && seg[4] == "pkranges" && method == http.MethodGet:
		return "pkranges", "pkranges", strings.Join(seg[:4], "/")
	case len(seg) == 5 && seg[4] == "docs" && method == http.MethodPost:
		return "query", "docs", strings.Join(seg[:4], "/")
	case len(seg) == 5 && seg[4] == "docs" && method == http.MethodGet:
		return "changefeed", "docs", strings.Join(seg[:4], "/")
	}
	return "unknown", "", ""
}

// testCosmosDBPage cuts a page of at most size items at the offset a
// continuation names, and the continuation of the next page.
func testCosmosDBPage[T any](all []T, continuation string, size int) ([]T, []string) {
	offset, _ := strconv.Atoi(continuation)
	if size <= 0 {
		size = len(all)
	}
	end := min(offset+size, len(all))
	if end < len(all) {
		return all[offset:end], []string{strconv.Itoa(end)}
	}
	return all[offset:end], nil
}

func (s *testCosmosDBServer) query(w http.ResponseWriter, h http.Header, body []byte) {
	var q struct {
		Query      string
		Parameters []struct{ Name, Value string }
	}
	if h.Get("x-ms-documentdb-isquery") != "True" || h.Get("Content-Type") != "application/query+json" || json.Unmarshal(body, &q) != nil ||
		!strings.Contains(q.Query, testCosmosDBQueryPattern) || len(q.Parameters) != 1 || q.Parameters[0].Name != "@processor" {
		s.reply(w, http.StatusBadRequest, 0, nil, testCosmosDBObject{"code": "BadRequest", "message": "unsupported query"})
		return
	}
	var matching []json.RawMessage
	for _, doc := range s.leases {
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(doc), &d) == nil && strings.HasPrefix(d.ID, q.Parameters[0].Value) {
			matching = append(matching, json.RawMessage(doc))
		}
	}
	size, _ := strconv.Atoi(h.Get("x-ms-max-item-count"))
	if size <= 0 || size > 1000 {
		size = 100
	}
	if s.leasePage > 0 {
		size = min(size, s.leasePage)
	}
	page, next := testCosmosDBPage(matching, h.Get("x-ms-continuation"), size)
	s.reply(w, http.StatusOK, 0, http.Header{"x-ms-continuation": next}, testCosmosDBObject{"_rid": testCosmosDBLeasesRID, "Documents": page, "_count": len(page)})
}

func (s *testCosmosDBServer) changeFeed(w http.ResponseWriter, h http.Header) {
	rangeID := h.Get("x-ms-documentdb-partitionkeyrangeid")
	if s.injectFault(w, rangeID) {
		return
	}
	pk, gone := s.rangeOf(rangeID)
	if gone {
		s.reply(w, http.StatusGone, 1002, nil, testCosmosDBObject{"code": "Gone", "message": "PartitionKeyRangeGone"})
		return
	}
	if pk == nil {
		s.reply(w, http.StatusNotFound, 0, nil, testCosmosDBObject{"code": "NotFound", "message": "no such partition key range"})
		return
	}
	key := rangeID
	if h.Get("x-ms-read-key-type") == "EffectivePartitionKeyRange" {
		start, end := h.Get("x-ms-start-epk"), h.Get("x-ms-end-epk")
		if start < pk.min || end > pk.max || start >= end {
			s.reply(w, http.StatusBadRequest, 0, nil, testCosmosDBObject{"code": "BadRequest", "message": "EPK range outside the partition key range"})
			return
		}
		key = rangeID + "[" + start + "," + end + ")"
	}
	allVersions := strings.EqualFold(h.Get("A-IM"), "Full-Fidelity Feed")
	etag := h.Get("If-None-Match")
	switch {
	case !allVersions && !strings.EqualFold(h.Get("A-IM"), "Incremental feed"):
		s.reply(w, http.StatusBadRequest, 0, nil, testCosmosDBObject{"code": "BadRequest", "message": "not a change feed read"})
		return
	case allVersions && (h.Get("x-ms-cosmos-changefeed-wire-format-version") != testCosmosDBAVADFormat || etag == ""):
		s.reply(w, http.StatusBadRequest, 0, nil, testCosmosDBObject{"code": "BadRequest", "message": "all versions and deletes needs the wire format and a continuation"})
		return
	}
	after := int64(-1) // no If-None-Match: from the beginning
	switch etag {
	case "":
	case "*":
		after = int64(1) << 62
	default:
		var err error
		if after, err = strconv.ParseInt(strings.Trim(etag, `"`), 10, 64); err != nil {
			s.reply(w, http.StatusBadRequest, 0, nil, testCosmosDBObject{"code": "BadRequest", "message": "malformed continuation"})
			return
		}
	}
	// The session token is the physical range's, whichever part was read.
	var session int64
	for k, lsns := range s.feeds {
		if (k == rangeID || strings.HasPrefix(k, rangeID+"[")) && len(lsns) > 0 {
			session = max(session, lsns[len(lsns)-1])
		}
	}
	header := http.Header{"x-ms-session-token": {fmt.Sprintf("%s:-1#%d", rangeID, session)}, "x-ms-request-charge": {"1"}}
	for _, lsn := range s.feeds[key] {
		if lsn <= after {
			continue
		}
		doc := testCosmosDBObject{"id": fmt.Sprintf("item-%d", lsn), "_lsn": lsn, "_ts": 1700000000 + lsn}
		if allVersions { // no top-level _lsn: the change's LSN is metadata.lsn
			doc = testCosmosDBObject{"current": testCosmosDBObject{"id": fmt.Sprintf("item-%d", lsn)},
				"metadata": testCosmosDBObject{"operationType": "create", "lsn": lsn, "crts": 1700000000 + lsn}}
		}
		header.Set("etag", fmt.Sprintf(`"%d"`, lsn))
		s.reply(w, http.StatusOK, 0, header, testCosmosDBObject{"_rid": testCosmosDBItemsRID, "Documents": []testCosmosDBObject{doc}, "_count": 1})
		return
	}
	header.Set("etag", etag)
	s.reply(w, http.StatusNotModified, 0, header, nil)
}

// injectFault answers a change feed read of rangeID with its next fault.
func (s *testCosmosDBServer) injectFault(w http.ResponseWriter, rangeID string) bool {
	q := s.faults[rangeID]
	if len(q) == 0 {
		return false
	}
	f := q[0]
	if f.times > 0 {
		if f.times--; f.times == 0 {
			s.faults[rangeID] = q[1:]
		}
	}
	header := http.Header{}
	if f.retryAfterMs > 0 {
		header.Set("x-ms-retry-after-ms", strconv.Itoa(f.retryAfterMs))
	}
	if f.then != nil {
		f.then()
	}
	s.reply(w, f.status, f.substatus, header, testCosmosDBObject{"code": http.StatusText(f.status), "message": "injected fault"})
	return true
}

// rangeOf finds a range by id; gone reports a range a split or merge replaced.
func (s *testCosmosDBServer) rangeOf(id string) (pk *testCosmosDBRange, gone bool) {
	for i := range s.ranges {
		if s.ranges[i].id == id {
			pk = &s.ranges[i]
		}
		for _, parent := range s.ranges[i].parents {
			gone = gone || parent == id
		}
	}
	return pk, gone
}

func (s *testCosmosDBServer) reply(w http.ResponseWriter, status, substatus int, header http.Header, body any) {
	for k, v := range header {
		for _, value := range v {
			w.Header().Add(k, value)
		}
	}
	if substatus != 0 {
		w.Header().Set("x-ms-substatus", strconv.Itoa(substatus))
	}
	w.Header().Set("x-ms-activity-id", "00000000-0000-0000-0000-000000000001")
	if body == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// testCosmosDBLease is a lease document; fields are added to (or, when
// nil, removed from) a .NET v0 lease of token with continuation.
func testCosmosDBLease(t *testing.T, id, token, continuation string, fields testCosmosDBObject) string {
	t.Helper()
	doc := testCosmosDBObject{"id": id, "partitionKey": id, "version": 0, "LeaseToken": token, "ContinuationToken": continuation, "Owner": "host-1",
		"FeedRange": testCosmosDBObject{"Range": testCosmosDBObject{"min": "", "max": "FF"}}, "properties": testCosmosDBObject{}, "timestamp": "2026-06-28T14:42:40Z", "Mode": "Incremental Feed"}
	for k, v := range fields {
		if v == nil {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	return string(raw)
}

// testCosmosDBEPK is the fields of an EPK (v1) lease of [min, max).
func testCosmosDBEPK(lower, upper string) testCosmosDBObject {
	return testCosmosDBObject{"version": 1, "FeedRange": testCosmosDBObject{"Range": testCosmosDBObject{"min": lower, "max": upper}}}
}

// testCosmosDBJavaEPK is the fields of a Java v4 EPK lease of [min, max)
// whose Base64 URL-safe state holds etag for that range.
func testCosmosDBJavaEPK(t *testing.T, lower, upper, etag, mode string) testCosmosDBObject {
	state, err := json.Marshal(testCosmosDBObject{"V": 1, "Rid": testCosmosDBItemsRID, "Mode": mode, "StartFrom": testCosmosDBObject{"Type": "NOW"},
		"Continuation": testCosmosDBObject{"V": 1, "Rid": testCosmosDBItemsRID, "Range": testCosmosDBObject{"min": lower, "max": upper},
			"Continuation": []testCosmosDBObject{{"token": etag, "range": testCosmosDBObject{"min": lower, "max": upper}}}}})
	require.NoError(t, err)
	return testCosmosDBObject{"version": 1, "FeedRange": nil, "Mode": nil, "properties": nil, "partitionKey": nil,
		"feedRange":         testCosmosDBObject{"Range": testCosmosDBObject{"min": lower, "max": upper, "isMinInclusive": true, "isMaxInclusive": false}},
		"ContinuationToken": base64.URLEncoding.EncodeToString(state)}
}

func testCosmosDBMetadata(overrides map[string]string) map[string]string {
	metadata := map[string]string{"databaseId": "db", "containerId": "items", "leaseDatabaseId": "db", "leaseContainerId": "leases", "processorName": "orders"}
	for k, v := range overrides {
		if v == "-" {
			delete(metadata, k)
		} else {
			metadata[k] = v
		}
	}
	return metadata
}

func (s *testCosmosDBServer) config(overrides map[string]string) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(overrides), GlobalHTTPTimeout: 10 * time.Second,
		AuthParams: map[string]string{"connection": s.connection()}, ResolvedEnv: map[string]string{},
		ScalableObjectName: "orders-processor", ScalableObjectNamespace: "default", ScalableObjectType: "ScaledObject",
	}
}

// testCosmosDBPoll builds the scaler and polls it once, as KEDA does.
func testCosmosDBPoll(t *testing.T, config *scalersconfig.ScalerConfig) (metric int64, active bool, err error) {
	t.Helper()
	scaler, err := newAzureCosmosDBScaler(config, testCosmosDBClient(t, config))
	require.NoError(t, err)
	defer func() { assert.NoError(t, scaler.Close(context.Background())) }()
	specs := scaler.GetMetricSpecForScaling(context.Background())
	require.Len(t, specs, 1)
	name := specs[0].External.Metric.Name
	values, active, err := scaler.GetMetricsAndActivity(context.Background(), name)
	if err != nil {
		assert.Empty(t, values)
		assert.False(t, active)
		return 0, false, err
	}
	require.Len(t, values, 1)
	assert.Equal(t, name, values[0].MetricName)
	assert.Zero(t, values[0].Value.MilliValue()%1000, "the metric is a whole number of transactions")
	return values[0].Value.MilliValue() / 1000, active, nil
}

func TestCosmosDBMetadata(t *testing.T) {
	connection := "AccountEndpoint=" + testCosmosDBPublicHost + ";AccountKey=" + testCosmosDBAccountKey
	keys := map[string]string{"connection": connection}
	servicePrincipal := map[string]string{"endpoint": testCosmosDBPublicHost, "tenantId": "tenant-1", "clientId": "client-1", "clientSecret": testCosmosDBSecret}
	tests := []struct {
		name       string
		metadata   map[string]string // overrides of the valid metadata; "-" removes
		auth       map[string]string // default: keys
		metricType v2.MetricTargetType
		wantErr    string
		wantTarget int64
	}{
		{name: "defaults", wantTarget: 100},
		{name: "explicit thresholds", metadata: map[string]string{"changeFeedLagThreshold": "25", "activationChangeFeedLagThreshold": "24"}, wantTarget: 25},
		{name: "missing databaseId", metadata: map[string]string{"databaseId": "-"}, wantErr: `missing required parameter "databaseId"`},
		{name: "missing containerId", metadata: map[string]string{"containerId": "-"}, wantErr: `missing required parameter "containerId"`},
		{name: "missing leaseDatabaseId", metadata: map[string]string{"leaseDatabaseId": "-"}, wantErr: `missing required parameter "leaseDatabaseId"`},
		{name: "missing leaseContainerId", metadata: map[string]string{"leaseContainerId": "-"}, wantErr: `missing required parameter "leaseContainerId"`},
		{name: "missing processorName", metadata: map[string]string{"processorName": "-"}, wantErr: `missing required parameter "processorName"`},
		{name: "processorName empty (an Azure Functions app without LeaseContainerPrefix)", metadata: map[string]string{"processorName": ""}, wantTarget: 100},
		{name: "threshold zero", metadata: map[string]string{"changeFeedLagThreshold": "0"}, wantErr: "changeFeedLagThreshold must be greater than 0, got 0"},
		{name: "threshold negative", metadata: map[string]string{"changeFeedLagThreshold": "-5"}, wantErr: "changeFeedLagThreshold must be greater than 0, got -5"},
		{name: "activation negative", metadata: map[string]string{"activationChangeFeedLagThreshold": "-1"}, wantErr: "activationChangeFeedLagThreshold must be greater than or equal to 0, got -1"},
		{name: "activation equal to threshold", metadata: map[string]string{"changeFeedLagThreshold": "10", "activationChangeFeedLagThreshold": "10"},
			wantErr: "activationChangeFeedLagThreshold (10) must be less than changeFeedLagThreshold (10)"},
		{name: "activation above the default threshold", metadata: map[string]string{"activationChangeFeedLagThreshold": "150"},
			wantErr: "activationChangeFeedLagThreshold (150) must be less than changeFeedLagThreshold (100)"},
		{name: "threshold not an integer", metadata: map[string]string{"changeFeedLagThreshold": "abc"}, wantErr: `unable to set param "changeFeedLagThreshold" value "abc"`},
		{name: "threshold fractional", metadata: map[string]string{"changeFeedLagThreshold": "1.5"}, wantErr: `unable to set param "changeFeedLagThreshold" value "1.5"`},
		{name: "activation not an integer", metadata: map[string]string{"activationChangeFeedLagThreshold": "x"}, wantErr: `unable to set param "activationChangeFeedLagThreshold" value "x"`},
		{name: "cloud AzurePublicCloud", metadata: map[string]string{"cloud": "AzurePublicCloud"}, wantTarget: 100},
		{name: "cloud AzureUSGovernmentCloud", metadata: map[string]string{"cloud": "AzureUSGovernmentCloud"}, wantTarget: 100},
		{name: "cloud azurechinacloud (case-insensitive)", metadata: map[string]string{"cloud": "azurechinacloud"}, wantTarget: 100},
		{name: "cloud AzureGermanCloud", metadata: map[string]string{"cloud": "AzureGermanCloud"}, wantTarget: 100},
		{name: "cloud unknown", metadata: map[string]string{"cloud": "Mars"},
			wantErr: "cloud must be one of AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud, AzureGermanCloud, AzureStackCloud (with the KEDA operator's environment file, AZURE_ENVIRONMENT_FILEPATH) or Private"},
		{name: "cloud Private with bearer token and cosmosDBResourceURL", wantTarget: 100,
			auth: withParams(servicePrincipal, "cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", "https://login.private.example/")},
		{name: "cloud Private in metadata refused for the TriggerAuthentication's service principal", auth: servicePrincipal,
			metadata: map[string]string{"cloud": "Private", "cosmosDBResourceURL": "https://cosmos.private.example", "activeDirectoryEndpoint": "https://login.private.example/"},
			wantErr:  "cloud: Private with the TriggerAuthentication's service principal needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication"},
		{name: "the TriggerAuthentication's cloud wins over metadata", wantTarget: 100, metadata: map[string]string{"cloud": "Mars"},
			auth: withParams(servicePrincipal, "cloud", "AzurePublicCloud")},
		{name: "cloud Private with bearer token requires cosmosDBResourceURL", auth: withParams(servicePrincipal, "cloud", "private", "activeDirectoryEndpoint", "https://login.private.example/"),
			wantErr: "cloud: Private with the TriggerAuthentication's service principal needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint"},
		{name: "metricType Value", metricType: v2.ValueMetricType, wantTarget: 100},
		{name: "metricType Utilization refused", metricType: v2.UtilizationMetricType, wantErr: "'Utilization' metric type is unsupported"},
		{name: "service principal", auth: servicePrincipal, wantTarget: 100},
		{name: "partial service principal refused for a keyless endpoint", auth: map[string]string{"endpoint": testCosmosDBPublicHost, "tenantId": "tenant-1", "clientSecret": testCosmosDBSecret},
			wantErr: "missing clientId"},
		{name: "keys for both accounts with only tenantId accepted", wantTarget: 100,
			auth: map[string]string{"connection": connection, "leaseConnection": "AccountEndpoint=https://leases.documents.azure.com:443/;AccountKey=" + testCosmosDBWrongKey, "tenantId": "tenant-1"}},
		{name: "leaseCosmosDBKey without leaseEndpoint refused", auth: map[string]string{"connection": connection, "leaseCosmosDBKey": testCosmosDBWrongKey},
			wantErr: "leaseCosmosDBKey is set but neither leaseEndpoint nor leaseConnection is"},
		{name: "no account", auth: map[string]string{}, wantErr: "no endpoint"},
		{name: "databaseId with a slash", metadata: map[string]string{"databaseId": "a/b"}, wantErr: `databaseId must not contain '/'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := tt.auth
			if auth == nil {
				auth = keys
			}
			config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(tt.metadata), AuthParams: auth, MetricType: tt.metricType}
			scaler, err := NewAzureCosmosDBScaler(config)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				for _, secret := range []string{testCosmosDBAccountKey, testCosmosDBWrongKey, testCosmosDBSecret} {
					assert.NotContains(t, err.Error(), secret, "the error quotes a secret")
				}
				return
			}
			require.NoError(t, err)
			specs := scaler.GetMetricSpecForScaling(context.Background())
			require.Len(t, specs, 1)
			assert.Equal(t, v2.ExternalMetricSourceType, specs[0].Type)
			target := specs[0].External.Target
			if tt.metricType == v2.ValueMetricType {
				assert.Equal(t, v2.ValueMetricType, target.Type)
				require.NotNil(t, target.Value)
				assert.Nil(t, target.AverageValue)
				assert.Equal(t, tt.wantTarget, target.Value.Value())
				return
			}
			assert.Equal(t, v2.AverageValueMetricType, target.Type)
			require.NotNil(t, target.AverageValue)
			assert.Equal(t, tt.wantTarget, target.AverageValue.Value())
		})
	}
}

func TestCosmosDBMetricName(t *testing.T) {
	tests := []struct {
		index                     int
		leaseContainer, processor string
		want                      string
	}{
		{0, "leases", "orders", "s0-azure-cosmosdb-leases-orders"},
		{3, "leases", "orders", "s3-azure-cosmosdb-leases-orders"},
		{1, "my.leases", "proc:v1", "s1-azure-cosmosdb-my-leases-proc-v1"},
		{2, "leases(eu)", "a%b", "s2-azure-cosmosdb-leases-eu--a-b"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerIndex: tt.index,
				TriggerMetadata: testCosmosDBMetadata(map[string]string{"leaseContainerId": tt.leaseContainer, "processorName": tt.processor}),
				AuthParams:      map[string]string{"connection": "AccountEndpoint=" + testCosmosDBPublicHost + ";AccountKey=" + testCosmosDBAccountKey}}
			scaler, err := NewAzureCosmosDBScaler(config)
			require.NoError(t, err)
			assert.Equal(t, tt.want, scaler.GetMetricSpecForScaling(context.Background())[0].External.Metric.Name)
		})
	}
}

func TestCosmosDBGetMetricsAndActivity(t *testing.T) {
	tests := []struct {
		name       string
		metadata   map[string]string
		setup      func(t *testing.T, s *testCosmosDBServer)
		wantMetric int64
		wantActive bool
		wantErr    string
		check      func(t *testing.T, s *testCosmosDBServer)
	}{
		{name: "one lease: session LSN - first LSN + 1", wantMetric: 50, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil)}
			s.changes("0", 90, 150)
		}},
		{name: "lag summed over leases", wantMetric: 50, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"7"`, nil)}
			s.changes("0", 101, 130)
			s.changes("1", 8, 27)
		}},
		{name: "caught up (304) is zero", wantMetric: 0, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"150"`, nil)}
			s.changes("0", 101, 150)
		}, check: func(t *testing.T, s *testCosmosDBServer) { assert.Len(t, s.reads("0"), 1) }},
		{name: "default activation 0: lag 1 is active", wantMetric: 1, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"150"`, nil)}
			s.changes("0", 151, 151)
		}},
		{name: "an empty processorName selects the leases without a prefix (Azure Functions)", metadata: map[string]string{"processorName": ""}, wantMetric: 7, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("", "0"), "0", `"0"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil)}
			s.changes("0", 1, 7)
			s.changes("1", 1, 50)
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Empty(t, s.reads("1"), "a prefixed processor's lease was read")
		}},
		{name: "lag at the activation threshold is inactive", metadata: map[string]string{"activationChangeFeedLagThreshold": "10"}, wantMetric: 10, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil)}
			s.changes("0", 1, 10)
		}},
		{name: "lag above the activation threshold is active", metadata: map[string]string{"activationChangeFeedLagThreshold": "10"}, wantMetric: 11, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil)}
			s.changes("0", 1, 11)
		}},
		{name: "empty lease container", wantMetric: 0, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Len(t, s.recorded("query"), 1)
			assert.Empty(t, s.recorded("changefeed"))
		}},
		{name: "leases without a continuation are ignored", wantMetric: 5, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.ranges = []testCosmosDBRange{{id: "0", min: "", max: "40"}, {id: "1", min: "40", max: "80"}, {id: "2", min: "80", max: "C0"}, {id: "3", min: "C0", max: "FF"}}
			s.leases = []string{
				testCosmosDBLease(t, s.leaseID("orders", "0"), "0", "", testCosmosDBObject{"ContinuationToken": nil}),
				testCosmosDBLease(t, s.leaseID("orders", "1"), "1", "", nil),
				testCosmosDBLease(t, s.leaseID("orders", "2"), "2", "", testCosmosDBObject{"ContinuationToken": json.RawMessage("null")}),
				testCosmosDBLease(t, s.leaseID("orders", "3"), "3", `"0"`, nil),
			}
			for _, id := range []string{"0", "1", "2"} {
				s.changes(id, 1, 1000)
			}
			s.changes("3", 1, 5)
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Len(t, s.recorded("changefeed"), 1)
			assert.Len(t, s.reads("3"), 1)
		}},
		{name: "one hot partition is capped at the threshold", wantMetric: 100, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil)}
			s.changes("0", 1, 1000)
		}},
		{name: "the cap is the threshold per active partition", metadata: map[string]string{"changeFeedLagThreshold": "40"}, wantMetric: 80, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.ranges = []testCosmosDBRange{{id: "0", min: "", max: "40"}, {id: "1", min: "40", max: "80"}, {id: "2", min: "80", max: "FF"}}
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil),
				testCosmosDBLease(t, s.leaseID("orders", "2"), "2", `"0"`, nil)}
			s.changes("0", 1, 500)
			s.changes("1", 1, 50)
		}},
		{name: "every lease format, non-lease documents ignored", wantMetric: 1 + 2 + 3 + 4 + 5, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.ranges = []testCosmosDBRange{{id: "0", min: "", max: "20"}, {id: "1", min: "20", max: "40"}, {id: "2", min: "40", max: "60"}, {id: "3", min: "60", max: "80"}, {id: "4", min: "80", max: "FF"}}
			prefix := "orders" + s.host() + "_" + testCosmosDBDatabaseRID + "_" + testCosmosDBItemsRID
			s.leases = []string{
				testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil),                                                                                          // .NET v0
				testCosmosDBLease(t, "orders"+s.host()+"_db_items..1", "1", `"0"`, testCosmosDBObject{"version": nil, "FeedRange": nil, "properties": nil, "Mode": nil}), // Java v0
				testCosmosDBLease(t, s.leaseID("orders", "2"), "", `"0"`, testCosmosDBObject{"LeaseToken": nil, "PartitionId": "2", "version": nil}),                     // .NET v2 library
				testCosmosDBLease(t, s.leaseID("orders", "60-80"), "60-80", `"0"`, testCosmosDBEPK("60", "80")),                                                          // .NET v1 EPK
				testCosmosDBLease(t, s.leaseID("orders", "80-FF"), "80-FF", "", testCosmosDBJavaEPK(t, "80", "FF", `"0"`, "INCREMENTAL")),                                // Java v1 EPK
				`{"id":"` + prefix + `.info"}`,
				`{"id":"` + prefix + `.lock","ttl":60}`,
				`{"id":"` + s.leaseID("orders", "9") + `","LeaseToken":{"not":"a string"},"ContinuationToken":"\"0\""}`,
			}
			for i, id := range []string{"0", "1", "2", "3", "4"} {
				s.changes(id, 1, int64(i+1))
			}
			s.changes("9", 1, 1000)
		}, check: func(t *testing.T, s *testCosmosDBServer) { assert.Len(t, s.recorded("changefeed"), 5) }},
		{name: "other processors, containers and accounts are not counted", wantMetric: 5, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{
				testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil),
				testCosmosDBLease(t, s.leaseID("orders-v2", "0"), "0", `"-1"`, nil),                                                                      // a prefix collision
				testCosmosDBLease(t, s.leaseID("order", "0"), "0", `"-1"`, nil),                                                                          // a shorter name
				testCosmosDBLease(t, "orders"+s.host()+"_"+testCosmosDBDatabaseRID+"_OtherRIDAA=..0", "0", `"-1"`, nil),                                  // another container
				testCosmosDBLease(t, "ordersotheraccount.documents.azure.com_"+testCosmosDBDatabaseRID+"_"+testCosmosDBItemsRID+"..1", "1", `"-1"`, nil), // another account
			}
			s.changes("0", 1, 5)
			s.changes("1", 1, 100)
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			require.Len(t, s.recorded("changefeed"), 1)
			assert.Equal(t, `"0"`, s.reads("0")[0].header.Get("If-None-Match"))
		}},
		{name: "split: 410/1002, one lease refresh, the child leases counted", wantMetric: 30, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			children := []string{testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"100"`, nil), testCosmosDBLease(t, s.leaseID("orders", "2"), "2", `"100"`, nil)}
			s.ranges = []testCosmosDBRange{{id: "0", min: "", max: "FF"}, {id: "1", min: "", max: "80"}, {id: "2", min: "80", max: "FF"}}
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil)}
			s.fail("0", testCosmosDBFault{status: http.StatusGone, substatus: 1002, times: 1, then: func() { s.leases = children }})
			s.changes("1", 101, 110)
			s.changes("2", 101, 120)
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Len(t, s.recorded("query"), 2, "one lease refresh")
			assert.Len(t, s.reads("0"), 1)
			assert.Len(t, s.reads("1"), 1)
			assert.Len(t, s.reads("2"), 1)
		}},
		{name: "persistent split: the stale parent alone wakes one replica", metadata: map[string]string{"activationChangeFeedLagThreshold": "5"}, wantMetric: 6, wantActive: true,
			setup: func(t *testing.T, s *testCosmosDBServer) {
				s.ranges = []testCosmosDBRange{{id: "1", min: "", max: "80", parents: []string{"0"}}, {id: "2", min: "80", max: "FF", parents: []string{"0"}}}
				s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil)}
			}, check: func(t *testing.T, s *testCosmosDBServer) {
				assert.Len(t, s.recorded("query"), 2, "one lease refresh, no more")
				assert.Len(t, s.reads("0"), 2)
			}},
		{name: "persistent split with other lag adds no partition to the cap", metadata: map[string]string{"activationChangeFeedLagThreshold": "5"}, wantMetric: 100, wantActive: true,
			setup: func(t *testing.T, s *testCosmosDBServer) {
				s.ranges = []testCosmosDBRange{{id: "1", min: "", max: "80", parents: []string{"0"}}, {id: "2", min: "80", max: "FF", parents: []string{"0"}}}
				s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil)}
				s.changes("1", 1, 500)
			}},
		{name: "persistent split raises a small lag above activation", metadata: map[string]string{"activationChangeFeedLagThreshold": "5"}, wantMetric: 6, wantActive: true,
			setup: func(t *testing.T, s *testCosmosDBServer) {
				s.ranges = []testCosmosDBRange{{id: "1", min: "", max: "80", parents: []string{"0"}}, {id: "2", min: "80", max: "FF", parents: []string{"0"}}}
				s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil)}
				s.changes("1", 1, 3)
			}},
		{name: "an EPK lease spanning two ranges is a stale parent", wantMetric: 1, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.ranges = []testCosmosDBRange{{id: "1", min: "", max: "80", parents: []string{"0"}}, {id: "2", min: "80", max: "FF", parents: []string{"0"}}}
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "-FF"), "-FF", `"100"`, testCosmosDBEPK("", "FF"))}
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Empty(t, s.recorded("changefeed"))
			assert.Len(t, s.recorded("query"), 2)
		}},
		{name: "an unrelated 410 fails the poll", wantErr: "HTTP 410 substatus 1000", setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"100"`, nil)}
			s.fail("0", testCosmosDBFault{status: http.StatusGone, substatus: 1000, times: -1})
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Len(t, s.recorded("query"), 1, "no lease refresh")
		}},
		{name: "a failing partition fails the whole poll", wantErr: "lease 1 (partition key range 1): read change feed: HTTP 500", setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil), testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil)}
			s.changes("0", 1, 5)
			s.fail("1", testCosmosDBFault{status: http.StatusInternalServerError, times: -1})
		}, check: func(t *testing.T, s *testCosmosDBServer) {
			assert.Len(t, s.reads("1"), 4, "the first try and three retries")
		}},
		{name: "a throttled read is retried after x-ms-retry-after-ms", wantMetric: 5, wantActive: true, setup: func(t *testing.T, s *testCosmosDBServer) {
			s.leases = []string{testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"0"`, nil)}
			s.changes("0", 1, 5)
			s.fail("0", testCosmosDBFault{status: http.StatusTooManyRequests, retryAfterMs: 1, times: 1})
		}, check: func(t *testing.T, s *testCosmosDBServer) { assert.Len(t, s.reads("0"), 2) }},
		{name: "a missing lease container fails the poll", metadata: map[string]string{"leaseContainerId": "nope"}, wantErr: "query leases in db/nope: HTTP 404"},
		{name: "a missing monitored container fails the poll", metadata: map[string]string{"containerId": "nope"}, wantErr: "read container db/nope: HTTP 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestCosmosDBServer(t)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			metric, active, err := testCosmosDBPoll(t, s.config(tt.metadata))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), `processor "orders"`)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantMetric, metric)
				assert.Equal(t, tt.wantActive, active)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestCosmosDBWrongKeyFailsWithoutQuotingIt(t *testing.T) {
	s := newTestCosmosDBServer(t)
	config := s.config(nil)
	config.AuthParams["connection"] = "AccountEndpoint=" + s.server.URL + "/;AccountKey=" + testCosmosDBWrongKey
	_, _, err := testCosmosDBPoll(t, config)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read database db: HTTP 401 Unauthorized")
	assert.NotContains(t, err.Error(), testCosmosDBWrongKey)
	assert.NotContains(t, err.Error(), "type=master")
}

func TestCosmosDBUnreachableAccountNamesHost(t *testing.T) {
	s := newTestCosmosDBServer(t)
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closed.Close()
	config := s.config(nil)
	config.AuthParams["connection"] = "AccountEndpoint=" + closed.URL + "/;AccountKey=" + testCosmosDBWrongKey
	_, _, err := testCosmosDBPoll(t, config)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read database db at "+strings.TrimPrefix(closed.URL, "https://")+": ")
	assert.Contains(t, err.Error(), "connection refused")
	assert.NotContains(t, err.Error(), testCosmosDBWrongKey)
}

func TestCosmosDBChangeFeedRequestHeaders(t *testing.T) {
	tests := []struct {
		name       string
		lease      func(t *testing.T, s *testCosmosDBServer) string
		feed       string // the range or EPK part holding the changes
		wantMetric int64
		want       map[string]string // "" asserts the header is absent
	}{
		{name: "latest version, PK-range lease", feed: "0", wantMetric: 3,
			lease: func(t *testing.T, s *testCosmosDBServer) string {
				return testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"10"`, nil)
			},
			want: map[string]string{"A-IM": "Incremental feed", "If-None-Match": `"10"`, "x-ms-max-item-count": "1", "x-ms-documentdb-partitionkeyrangeid": "0",
				"x-ms-read-key-type": "", "x-ms-start-epk": "", "x-ms-end-epk": "", "x-ms-cosmos-changefeed-wire-format-version": ""}},
		{name: "EPK lease on part of a range", feed: "0[20,40)", wantMetric: 3,
			lease: func(t *testing.T, s *testCosmosDBServer) string {
				return testCosmosDBLease(t, s.leaseID("orders", "20-40"), "20-40", `"10"`, testCosmosDBEPK("20", "40"))
			},
			want: map[string]string{"A-IM": "Incremental feed", "If-None-Match": `"10"`, "x-ms-documentdb-partitionkeyrangeid": "0",
				"x-ms-read-key-type": "EffectivePartitionKeyRange", "x-ms-start-epk": "20", "x-ms-end-epk": "40"}},
		{name: "EPK lease on a whole range", feed: "1", wantMetric: 3,
			lease: func(t *testing.T, s *testCosmosDBServer) string {
				return testCosmosDBLease(t, s.leaseID("orders", "80-FF"), "80-FF", `"10"`, testCosmosDBEPK("80", "FF"))
			},
			want: map[string]string{"x-ms-documentdb-partitionkeyrangeid": "1", "x-ms-read-key-type": "", "x-ms-start-epk": "", "x-ms-end-epk": ""}},
		{name: "all versions and deletes, .NET lease", feed: "0", wantMetric: 3,
			lease: func(t *testing.T, s *testCosmosDBServer) string {
				return testCosmosDBLease(t, s.leaseID("orders", "0"), "0", `"10"`, testCosmosDBObject{"Mode": "Full-Fidelity Feed"})
			},
			want: map[string]string{"A-IM": "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version": testCosmosDBAVADFormat, "If-None-Match": `"10"`}},
		{name: "all versions and deletes, Java EPK lease", feed: "1", wantMetric: 3,
			lease: func(t *testing.T, s *testCosmosDBServer) string {
				return testCosmosDBLease(t, s.leaseID("orders", "80-FF"), "80-FF", "", testCosmosDBJavaEPK(t, "80", "FF", `"10"`, "FULL_FIDELITY"))
			},
			want: map[string]string{"A-IM": "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version": testCosmosDBAVADFormat, "If-None-Match": `"10"`,
				"x-ms-documentdb-partitionkeyrangeid": "1", "x-ms-read-key-type": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestCosmosDBServer(t)
			s.leases = []string{tt.lease(t, s)}
			s.changes(tt.feed, 11, 13)
			metric, active, err := testCosmosDBPoll(t, s.config(nil))
			require.NoError(t, err)
			assert.Equal(t, tt.wantMetric, metric)
			assert.True(t, active)
			reads := s.recorded("changefeed")
			require.Len(t, reads, 1)
			for name, value := range tt.want {
				if value == "" {
					assert.NotContains(t, reads[0].header, http.CanonicalHeaderKey(name))
				} else {
					assert.Equal(t, value, reads[0].header.Get(name), name)
				}
			}
		})
	}
}

func TestCosmosDBCapabilitiesHeaderOnEveryRequest(t *testing.T) {
	s := newTestCosmosDBServer(t)
	s.leasePage, s.rangePage = 1, 1
	s.leases = []string{
		testCosmosDBLease(t, s.leaseID("orders", "20-40"), "20-40", `"0"`, testCosmosDBEPK("20", "40")),
		testCosmosDBLease(t, s.leaseID("orders", "1"), "1", `"0"`, nil),
	}
	s.changes("0[20,40)", 1, 2)
	s.changes("1", 1, 3)
	s.fail("1", testCosmosDBFault{status: http.StatusTooManyRequests, retryAfterMs: 1, times: 1})
	metric, active, err := testCosmosDBPoll(t, s.config(nil))
	require.NoError(t, err)
	assert.Equal(t, int64(5), metric)
	assert.True(t, active)

	for _, kind := range []string{"database", "container", "pkranges", "query", "changefeed"} {
		assert.NotEmpty(t, s.recorded(kind), kind)
	}
	for _, kind := range []string{"query", "pkranges"} {
		require.Len(t, s.recorded(kind), 2, "two pages of %s", kind)
		assert.Equal(t, "1", s.recorded(kind)[1].header.Get("x-ms-continuation"), "second page of %s", kind)
	}
	require.Len(t, s.reads("1"), 2, "the throttled read and its retry")
	all := s.recorded("")
	assert.Len(t, all, 2+2+2+3)
	for i, r := range all {
		assert.Equal(t, "1", r.header.Get("x-ms-cosmos-sdk-supportedcapabilities"), "request %d (%s)", i, r.kind)
	}
}

func TestCosmosDBCredentialSources(t *testing.T) {
	tests := []struct {
		name     string
		auth     func(right, wrong *testCosmosDBServer) map[string]string
		env      func(right, wrong *testCosmosDBServer) map[string]string
		metadata func(right, wrong *testCosmosDBServer) map[string]string
		lease    bool // the lease account is wrong's (with the right key)
	}{
		{name: "TriggerAuthentication wins over the scale target's environment",
			auth: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connection": r.connection()}
			},
			env: func(r, w *testCosmosDBServer) map[string]string { return map[string]string{"COSMOS": w.connection()} },
			metadata: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connectionFromEnv": "COSMOS"}
			}},
		{name: "connectionFromEnv",
			env: func(r, w *testCosmosDBServer) map[string]string { return map[string]string{"COSMOS": r.connection()} },
			metadata: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connectionFromEnv": "COSMOS"}
			}},
		{name: "the environment wins over plain trigger metadata",
			env: func(r, w *testCosmosDBServer) map[string]string { return map[string]string{"COSMOS": r.connection()} },
			metadata: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connectionFromEnv": "COSMOS", "connection": w.connection()}
			}},
		{name: "endpoint with cosmosDBKeyFromEnv",
			auth: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"endpoint": r.server.URL, "cloud": "Private"}
			},
			env: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"KEY": testCosmosDBAccountKey}
			},
			metadata: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"cosmosDBKeyFromEnv": "KEY"}
			}},
		{name: "a separate lease account from leaseConnectionFromEnv", lease: true,
			auth: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connection": r.connection()}
			},
			env: func(r, w *testCosmosDBServer) map[string]string { return map[string]string{"LEASES": w.connection()} },
			metadata: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"leaseConnectionFromEnv": "LEASES"}
			}},
		{name: "a separate lease account by leaseEndpoint and leaseCosmosDBKey", lease: true,
			auth: func(r, w *testCosmosDBServer) map[string]string {
				return map[string]string{"connection": r.connection(), "leaseEndpoint": w.server.URL, "leaseCosmosDBKey": testCosmosDBAccountKey}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			right, wrong := newTestCosmosDBServer(t), newTestCosmosDBServer(t)
			config := right.config(nil)
			config.AuthParams = map[string]string{}
			for source, fill := range map[*map[string]string]func(r, w *testCosmosDBServer) map[string]string{&config.AuthParams: tt.auth, &config.ResolvedEnv: tt.env, &config.TriggerMetadata: tt.metadata} {
				if fill != nil {
					for k, v := range fill(right, wrong) {
						(*source)[k] = v
					}
				}
			}
			leaseAccount := right
			if tt.lease {
				leaseAccount = wrong
			}
			// The processor's leases name the monitored (data) account.
			leaseAccount.leases = []string{testCosmosDBLease(t, right.leaseID("orders", "0"), "0", `"0"`, nil)}
			right.changes("0", 1, 7)
			metric, active, err := testCosmosDBPoll(t, config)
			require.NoError(t, err)
			assert.Equal(t, int64(7), metric)
			assert.True(t, active)
			assert.Len(t, right.recorded("database"), 1)
			assert.Len(t, right.recorded("changefeed"), 1)
			assert.Len(t, leaseAccount.recorded("query"), 1)
			if !tt.lease {
				assert.Empty(t, wrong.recorded(""), "the other account was used")
			} else {
				assert.Empty(t, right.recorded("query"))
				assert.Len(t, wrong.recorded(""), 1, "the lease account serves only the lease query")
			}
		})
	}
}

func TestCosmosDBPlainSecretWarning(t *testing.T) {
	tests := []struct {
		name      string
		metadata  map[string]string
		auth      map[string]string
		wantNames string // "": no warning
	}{
		{name: "connection in trigger metadata", metadata: map[string]string{"connection": "AccountEndpoint=" + testCosmosDBPublicHost + ";AccountKey=" + testCosmosDBAccountKey},
			wantNames: "connection"},
		{name: "key and client secret in trigger metadata", wantNames: "cosmosDBKey, clientSecret",
			metadata: map[string]string{"endpoint": testCosmosDBPublicHost, "cosmosDBKey": testCosmosDBAccountKey, "tenantId": "t", "clientId": "c", "clientSecret": testCosmosDBSecret}},
		{name: "secrets from a TriggerAuthentication", auth: map[string]string{"connection": "AccountEndpoint=" + testCosmosDBPublicHost + ";AccountKey=" + testCosmosDBAccountKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder := events.NewFakeRecorder(10)
			object := &v1alpha1.ScaledObject{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("warn-%d", time.Now().UnixNano()), Namespace: "default", Generation: 1}}
			build := func() {
				config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(tt.metadata), AuthParams: tt.auth,
					ScalableObjectName: object.Name, ScalableObjectNamespace: object.Namespace, ScaledObject: object, Recorder: recorder}
				_, err := NewAzureCosmosDBScaler(config)
				require.NoError(t, err)
			}
			build()
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, <-recorder.Events)
			}
			if tt.wantNames == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "one warning per scaler built")
			assert.True(t, strings.HasPrefix(got[0], "Warning "), got[0])
			assert.Contains(t, got[0], "Warning: secret parameter(s) "+tt.wantNames+" of scaler azure-cosmosdb given in plain trigger metadata")
			assert.NotContains(t, got[0], testCosmosDBAccountKey)
			assert.NotContains(t, got[0], testCosmosDBSecret)
		})
	}
}

// withParams is a copy of params with name/value pairs added.
func withParams(params map[string]string, pairs ...string) map[string]string {
	out := maps.Clone(params)
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

// testCosmosDBRecorder is a host outside every Cosmos DB DNS suffix: it records whether each request
// carried an Authorization header and answers 401.
type testCosmosDBRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *testCosmosDBRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, fmt.Sprintf("%s %s authorization=%t", req.Method, req.URL.Path, req.Header.Get("Authorization") != ""))
	r.mu.Unlock()
	http.Error(w, "recording host", http.StatusUnauthorized)
}

func (r *testCosmosDBRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = nil
}

func (r *testCosmosDBRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// Each rule of where a key or token may go, through the scaler's
// constructor, against a recording host over HTTPS and plain HTTP: a refused
// trigger fails when the scaler is built and the host sees no request (a
// poll of a wrongly built scaler would reach it, as the last case, a
// connection string to it, shows).
func TestCosmosDBCredentialDestinationsThroughTheScaler(t *testing.T) {
	recorder := &testCosmosDBRecorder{}
	outside := httptest.NewTLSServer(recorder)
	t.Cleanup(outside.Close)
	plain := httptest.NewServer(recorder)
	t.Cleanup(plain.Close)
	t.Setenv("AZURE_CLIENT_ID", "keda-operator")
	t.Setenv("AZURE_TENANT_ID", "tenant-wi")
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", t.TempDir()+"/token")
	workload := v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
	other := "other-identity"
	tests := []struct {
		name     string
		auth     map[string]string
		metadata map[string]string
		identity v1alpha1.AuthPodIdentity
		wantErr  string
	}{
		{name: "workload identity refuses cloud: Private from a TriggerAuthentication", identity: workload,
			auth:    map[string]string{"endpoint": outside.URL, "cloud": "Private", "cosmosDBResourceURL": "api://audience-from-trigger-authentication"},
			wantErr: "cloud: Private is not used with podIdentity azure-workload"},
		{name: "workload identity named by identityId refuses cloud: Private", identity: v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload, IdentityID: &other},
			auth:    map[string]string{"endpoint": outside.URL, "cloud": "Private", "cosmosDBResourceURL": "https://audience-from-trigger-authentication.example"},
			wantErr: "cloud: Private is not used with podIdentity azure-workload"},
		{name: "workload identity refuses cloud: Private from trigger metadata", identity: workload,
			metadata: map[string]string{"endpoint": outside.URL, "cloud": "Private", "cosmosDBResourceURL": "api://audience-from-trigger-metadata"},
			wantErr:  "cloud: Private is not used with podIdentity azure-workload"},
		{name: "workload identity refuses an endpoint outside the cloud's Cosmos DB DNS suffix", identity: workload, auth: map[string]string{"endpoint": outside.URL},
			wantErr: "endpoint: workload identity tokens are only sent to hosts under documents.azure.com"},
		{name: "workload identity refuses plain http", identity: workload, auth: map[string]string{"endpoint": plain.URL},
			wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "account key refuses plain http", auth: map[string]string{"endpoint": plain.URL, "cosmosDBKey": testCosmosDBAccountKey},
			wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "connection string refuses plain http", auth: map[string]string{"connection": "AccountEndpoint=" + plain.URL + "/;AccountKey=" + testCosmosDBAccountKey},
			wantErr: "connection: an account key or token is only sent over https"},
		{name: "service principal refuses plain http", auth: map[string]string{"endpoint": plain.URL, "tenantId": "t", "clientId": "c", "clientSecret": testCosmosDBSecret},
			wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "a TriggerAuthentication's key refuses an endpoint from trigger metadata outside the suffixes", auth: map[string]string{"cosmosDBKey": testCosmosDBAccountKey},
			metadata: map[string]string{"endpoint": outside.URL}, wantErr: "endpoint: given in trigger metadata"},
		{name: "a TriggerAuthentication's service principal refuses an endpoint from trigger metadata outside the suffixes",
			auth:     map[string]string{"tenantId": "t", "clientId": "c", "clientSecret": testCosmosDBSecret},
			metadata: map[string]string{"endpoint": outside.URL}, wantErr: "endpoint: given in trigger metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder.reset()
			config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(tt.metadata), AuthParams: tt.auth,
				ResolvedEnv: map[string]string{}, PodIdentity: tt.identity, GlobalHTTPTimeout: 5 * time.Second}
			scaler, err := newAzureCosmosDBScaler(config, testCosmosDBClient(t, config))
			if err == nil {
				_, _, pollErr := scaler.GetMetricsAndActivity(context.Background(), "s0-metric")
				t.Fatalf("scaler built (poll: %v); the recording host saw %v", pollErr, recorder.requests())
			}
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), testCosmosDBAccountKey)
			assert.NotContains(t, err.Error(), testCosmosDBSecret)
			assert.Empty(t, recorder.requests(), "the recording host saw requests")
		})
	}
	// Each credential source the ScaledObject's author owns, or whose
	// endpoint comes with it, goes where the trigger says.
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		env      map[string]string
	}{
		{name: "connection from the TriggerAuthentication", auth: map[string]string{"connection": "AccountEndpoint=" + outside.URL + "/;AccountKey=" + testCosmosDBAccountKey}},
		{name: "connectionFromEnv", metadata: map[string]string{"connectionFromEnv": "COSMOS"}, env: map[string]string{"COSMOS": "AccountEndpoint=" + outside.URL + "/;AccountKey=" + testCosmosDBAccountKey}},
		{name: "leaseConnectionFromEnv", metadata: map[string]string{"connectionFromEnv": "COSMOS", "leaseConnectionFromEnv": "LEASES"},
			env: map[string]string{"COSMOS": "AccountEndpoint=https://shop.documents.azure.com/;AccountKey=" + testCosmosDBAccountKey, "LEASES": "AccountEndpoint=" + outside.URL + "/;AccountKey=" + testCosmosDBAccountKey}},
		{name: "cosmosDBKeyFromEnv with an endpoint from trigger metadata", metadata: map[string]string{"endpoint": outside.URL, "cosmosDBKeyFromEnv": "KEY"}, env: map[string]string{"KEY": testCosmosDBAccountKey}},
		{name: "leaseCosmosDBKeyFromEnv with a leaseEndpoint from trigger metadata",
			metadata: map[string]string{"endpoint": "https://shop.documents.azure.com/", "cosmosDBKeyFromEnv": "KEY", "leaseEndpoint": outside.URL, "leaseCosmosDBKeyFromEnv": "LEASE_KEY"},
			env:      map[string]string{"KEY": testCosmosDBAccountKey, "LEASE_KEY": testCosmosDBAccountKey}},
		{name: "cosmosDBKey and endpoint both from the TriggerAuthentication", auth: map[string]string{"endpoint": outside.URL, "cosmosDBKey": testCosmosDBAccountKey}},
	} {
		t.Run("allowed: "+tc.name, func(t *testing.T) {
			config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(tc.metadata), AuthParams: tc.auth,
				ResolvedEnv: tc.env, GlobalHTTPTimeout: 5 * time.Second}
			if _, err := newAzureCosmosDBScaler(config, testCosmosDBClient(t, config)); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
	t.Run("the recorder is reachable: a connection string to it is sent a signed request", func(t *testing.T) {
		recorder.reset()
		config := &scalersconfig.ScalerConfig{TriggerType: "azure-cosmosdb", TriggerMetadata: testCosmosDBMetadata(nil), GlobalHTTPTimeout: 5 * time.Second,
			AuthParams: map[string]string{"connection": "AccountEndpoint=" + outside.URL + "/;AccountKey=" + testCosmosDBAccountKey}}
		scaler, err := newAzureCosmosDBScaler(config, testCosmosDBClient(t, config))
		require.NoError(t, err)
		_, _, err = scaler.GetMetricsAndActivity(context.Background(), "s0-metric")
		require.Error(t, err)
		assert.Contains(t, recorder.requests(), "GET /dbs/db authorization=true")
	})
}

package azure

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

const (
	cosmosDBAPIVersion         = "2020-11-05" // as azcosmos v1.5.0
	cosmosDBMaxResponseBytes   = 16 << 20     // the service's pages are at most 4 MB
	cosmosDBSubStatusRangeGone = 1002         // with 410: the range split or merged
	cosmosDBMaxRetries         = 3
	cosmosDBRetryDelay         = 100 * time.Millisecond
	cosmosDBMaxRetryDelay      = 2 * time.Second // a longer x-ms-retry-after-ms is not waited for
)

// cosmosDBRetryStatus: timed out, throttled, retry-with (449) and 5xx.
var cosmosDBRetryStatus = []int{http.StatusRequestTimeout, http.StatusTooManyRequests, 449, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// CosmosDBClient sends requests to one account through one azcore pipeline
// on KEDA's HTTP client, whose timeout bounds each try.
type CosmosDBClient struct {
	endpoint *url.URL
	pipeline runtime.Pipeline
}

// NewCosmosDBClient signs requests with conn's key, or sends its bearer token.
func NewCosmosDBClient(conn *CosmosDBConnection, transport policy.Transporter) *CosmosDBClient {
	var auth policy.Policy = cosmosDBKeyPolicy{key: conn.key}
	if !conn.UsesKey() {
		auth = runtime.NewBearerTokenPolicy(conn.token, []string{conn.scope}, &policy.BearerTokenOptions{
			AuthorizationHandler: policy.AuthorizationHandler{OnRequest: func(req *policy.Request, authorize func(policy.TokenRequestOptions) error) error {
				if err := authorize(policy.TokenRequestOptions{Scopes: []string{conn.scope}}); err != nil {
					return err
				}
				// Cosmos DB wants its own form of azcore's "Bearer <token>".
				h := req.Raw().Header
				h.Set("Authorization", "type=aad&ver=1.0&sig="+strings.TrimPrefix(h.Get("Authorization"), "Bearer "))
				return nil
			}},
			InsecureAllowCredentialWithHTTP: isCosmosDBLoopback(conn.Endpoint.Hostname()),
		})
	}
	// azcore's retry is off: send retries, so every try's cost comes back to it.
	pipeline := runtime.NewPipeline("keda-azure-cosmosdb", "v1", runtime.PipelineOptions{PerRetry: []policy.Policy{auth}},
		&policy.ClientOptions{Transport: transport, Retry: policy.RetryOptions{MaxRetries: -1}})
	return &CosmosDBClient{endpoint: conn.Endpoint, pipeline: pipeline}
}

// url is the address of a resource of the account: dbs/{db}/colls/{container}/...
func (c *CosmosDBClient) url(path ...string) string { return c.endpoint.JoinPath(path...).String() }

// cosmosDBRequest is one REST call; operation names it in errors.
type cosmosDBRequest struct {
	operation, method, url string
	header                 http.Header // made for this call
	query                  []byte      // a POSTed query
	ok                     []int       // the statuses that are a success
}

type cosmosDBResponse struct {
	status int
	header http.Header
	body   []byte
}

// CosmosDBCost is what requests cost: tries sent, and request units charged.
type CosmosDBCost struct {
	Requests      int64
	RequestCharge float64
}

func (c *CosmosDBCost) add(o CosmosDBCost) {
	c.Requests += o.Requests
	c.RequestCharge += o.RequestCharge
}

// send sends r, retrying transient failures, and returns the answer and what
// all tries cost, also on failure. An answer outside r.ok is a
// *cosmosDBResponseError.
func (c *CosmosDBClient) send(ctx context.Context, r cosmosDBRequest) (cosmosDBResponse, CosmosDBCost, error) {
	var cost CosmosDBCost
	start := time.Now()
	for {
		resp, err := c.try(ctx, r)
		cost.Requests++
		if resp != nil {
			charge, _ := strconv.ParseFloat(resp.header.Get("X-Ms-Request-Charge"), 64)
			cost.RequestCharge += max(charge, 0)
		}
		if err == nil && len(resp.body) > cosmosDBMaxResponseBytes {
			return cosmosDBResponse{}, cost, fmt.Errorf("%s: response larger than %d bytes", r.operation, cosmosDBMaxResponseBytes)
		}
		if delay, retry := cosmosDBRetryAfter(ctx, resp, err, cost.Requests); retry && cost.Requests <= cosmosDBMaxRetries {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(delay):
				continue
			}
		}
		switch {
		case err != nil:
			return cosmosDBResponse{}, cost, fmt.Errorf("%s at %s (tries: %d in %s): %w", r.operation, c.endpoint.Host, cost.Requests, time.Since(start).Round(time.Millisecond), err)
		case !slices.Contains(r.ok, resp.status):
			return cosmosDBResponse{}, cost, newCosmosDBResponseError(r.operation, resp)
		}
		return *resp, cost, nil
	}
}

// sendPages sends r for each page of a feed, following x-ms-continuation.
func (c *CosmosDBClient) sendPages(ctx context.Context, r cosmosDBRequest, page func(body []byte) error) (CosmosDBCost, error) {
	var cost CosmosDBCost
	first := r.header
	for continuation := ""; ; {
		r.header = first.Clone()
		if continuation != "" {
			r.header["X-Ms-Continuation"] = []string{continuation}
		}
		resp, pageCost, err := c.send(ctx, r)
		cost.add(pageCost)
		if err == nil {
			err = page(resp.body)
		}
		if continuation = resp.header.Get("X-Ms-Continuation"); err != nil || continuation == "" {
			return cost, err
		}
	}
}

// try sends r once and reads at most one byte past the body's cap; the
// response is nil when none came.
func (c *CosmosDBClient) try(ctx context.Context, r cosmosDBRequest) (*cosmosDBResponse, error) {
	req, err := runtime.NewRequest(ctx, r.method, r.url)
	if err != nil {
		return nil, err
	}
	h := r.header
	if h == nil {
		h = http.Header{}
	}
	req.Raw().Header = h
	h["X-Ms-Version"] = []string{cosmosDBAPIVersion}
	h["X-Ms-Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	// PartitionMerge: accounts with merge enabled refuse clients without it.
	h["X-Ms-Cosmos-Sdk-Supportedcapabilities"] = []string{"1"}
	if r.query != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(r.query)), "application/query+json"); err != nil {
			return nil, err
		}
	}
	runtime.SkipBodyDownload(req)
	resp, err := c.pipeline.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body := bytes.NewBuffer(make([]byte, 0, min(max(resp.ContentLength, 0), cosmosDBMaxResponseBytes)+bytes.MinRead))
	_, err = body.ReadFrom(io.LimitReader(resp.Body, cosmosDBMaxResponseBytes+1))
	return &cosmosDBResponse{status: resp.StatusCode, header: resp.Header, body: body.Bytes()}, err
}

// cosmosDBRetryAfter says whether a try is retried and after how long: a
// transport or body failure or a cosmosDBRetryStatus, unless the poll is
// over or the service asks for a longer wait than we allow.
func cosmosDBRetryAfter(ctx context.Context, resp *cosmosDBResponse, err error, tries int64) (time.Duration, bool) {
	if ctx.Err() != nil || (err == nil && !slices.Contains(cosmosDBRetryStatus, resp.status)) {
		return 0, false
	}
	if resp != nil {
		if ms, perr := strconv.ParseInt(resp.header.Get("X-Ms-Retry-After-Ms"), 10, 64); perr == nil && ms >= 0 {
			wait := time.Duration(ms) * time.Millisecond
			return wait, wait <= cosmosDBMaxRetryDelay
		}
	}
	// 100, 200, 400 ms, ±20 % so that reads throttled together spread out.
	delay := min(cosmosDBRetryDelay<<(tries-1), cosmosDBMaxRetryDelay)
	return time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64())), true
}

// cosmosDBKeyPolicy signs each try with the account key, as the REST API documents.
type cosmosDBKeyPolicy struct{ key []byte }

func (p cosmosDBKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	resourceType, resourceLink := cosmosDBResourceOf(raw.URL.Path)
	raw.Header["Authorization"] = []string{signCosmosDBRequest(p.key, raw.Method, resourceType, resourceLink, raw.Header.Get("X-Ms-Date"))}
	return req.Next()
}

func signCosmosDBRequest(key []byte, verb, resourceType, resourceLink, date string) string {
	payload := strings.ToLower(verb) + "\n" + strings.ToLower(resourceType) + "\n" + resourceLink + "\n" + strings.ToLower(date) + "\n\n"
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(payload))
	return url.QueryEscape("type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// cosmosDBResourceOf is the resource type and link a signature covers:
// /dbs/d/colls/c is ("colls", "dbs/d/colls/c"), /dbs/d/colls/c/docs is
// ("docs", "dbs/d/colls/c"). Ids hold no '/' (the scaler refuses them).
func cosmosDBResourceOf(path string) (resourceType, resourceLink string) {
	link := strings.Trim(path, "/")
	last := strings.LastIndexByte(link, '/')
	if strings.Count(link, "/")%2 == 0 { // an odd number of segments: a feed
		return link[last+1:], link[:max(last, 0)]
	}
	previous := strings.LastIndexByte(link[:last], '/')
	return link[previous+1 : last], link
}

// cosmosDBResponseError is a non-success answer: the operation, status,
// substatus, the service's code, message (first line) and activity id.
type cosmosDBResponseError struct {
	status, subStatus int
	message           string
}

func (e *cosmosDBResponseError) Error() string { return e.message }

func newCosmosDBResponseError(operation string, resp *cosmosDBResponse) *cosmosDBResponseError {
	e := &cosmosDBResponseError{status: resp.status, message: fmt.Sprintf("%s: HTTP %d", operation, resp.status)}
	if e.subStatus, _ = strconv.Atoi(resp.header.Get("X-Ms-Substatus")); e.subStatus != 0 {
		e.message += fmt.Sprintf(" substatus %d", e.subStatus)
	}
	var payload struct{ Code, Message string }
	if json.Unmarshal(resp.body[:min(len(resp.body), 4096)], &payload) == nil && payload.Code != "" {
		e.message += " " + cosmosDBExcerpt(payload.Code)
	}
	if e.status == http.StatusTooManyRequests {
		e.message += " (throttled)"
	}
	if first, _, _ := strings.Cut(payload.Message, "\n"); first != "" { // diagnostics follow
		e.message += ": " + cosmosDBExcerpt(strings.TrimRight(first, "\r"))
	}
	if id := resp.header.Get("X-Ms-Activity-Id"); id != "" {
		e.message += " (activity " + cosmosDBExcerpt(id) + ")"
	}
	return e
}

// isCosmosDBRangeGone: 410/1002, the only answer treated as a split or merge.
func isCosmosDBRangeGone(err error) bool {
	re, ok := errors.AsType[*cosmosDBResponseError](err)
	return ok && re.status == http.StatusGone && re.subStatus == cosmosDBSubStatusRangeGone
}

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
)

// CosmosDBClient sends requests to one account through an azcore pipeline
// on KEDA's HTTP client, whose timeout bounds each try.
type CosmosDBClient struct {
	endpoint *url.URL
	pipeline runtime.Pipeline
	release  func() // the pipeline and conn's credential
}

// NewCosmosDBClient signs requests with conn's key, or sends its bearer
// token. Close releases what it shares with the process's other clients
// (its pipeline, its credential).
func NewCosmosDBClient(conn *CosmosDBConnection, transport policy.Transporter) *CosmosDBClient {
	key := cosmosDBPipelineKey{token: cosmosDBComparable(conn.token), scope: conn.scope, transport: cosmosDBTransportKey(transport)}
	if conn.UsesKey() {
		key.accountKey = sha256.Sum256(conn.key)
	}
	pipeline, releasePipeline, _ := cosmosDBPipelines.acquire(key, func() (runtime.Pipeline, error) {
		return newCosmosDBPipeline(conn, transport), nil
	})
	release := func() {
		releasePipeline()
		if conn.releaseToken != nil {
			conn.releaseToken()
		}
	}
	return &CosmosDBClient{endpoint: conn.Endpoint, pipeline: pipeline, release: release}
}

// newCosmosDBPipeline is the pipeline of conn's credential on transport; it
// holds nothing of an account but its key.
func newCosmosDBPipeline(conn *CosmosDBConnection, transport policy.Transporter) runtime.Pipeline {
	var auth policy.Policy = cosmosDBKeyPolicy{key: conn.key, plainHTTP: base64.StdEncoding.EncodeToString(conn.key) == cosmosDBEmulatorKey}
	if !conn.UsesKey() {
		scope := conn.scope
		auth = runtime.NewBearerTokenPolicy(conn.token, []string{scope}, &policy.BearerTokenOptions{
			AuthorizationHandler: policy.AuthorizationHandler{OnRequest: func(req *policy.Request, authorize func(policy.TokenRequestOptions) error) error {
				if err := authorize(policy.TokenRequestOptions{Scopes: []string{scope}}); err != nil {
					return err
				}
				// Cosmos DB wants its own form of azcore's "Bearer <token>".
				h := req.Raw().Header
				h.Set("Authorization", "type=aad&ver=1.0&sig="+strings.TrimPrefix(h.Get("Authorization"), "Bearer "))
				return nil
			}},
			// No token over plain HTTP, loopback included (azcore refuses it).
		})
	}
	// KEDA's client wraps its transport (request metrics), so http.Client's
	// Timeout takes net/http's legacy cancel path: a timer and two goroutines
	// per request. azcore's per-try timeout bounds each try alike.
	var tryTimeout time.Duration
	if c, ok := transport.(*http.Client); ok && c.Timeout > 0 {
		untimed := *c
		untimed.Timeout = 0
		transport, tryTimeout = &untimed, c.Timeout
	}
	// Timed-out (408), throttled (429), retry-with (449), 500, 502, 503 and
	// 504 answers and dropped connections are retried within the poll, as
	// azcosmos's default policy does; azcore waits what a 429's
	// x-ms-retry-after-ms asks, request by request (a wait longer than
	// MaxRetryDelay ends the retries). MaxRetries is the count for 429s;
	// cosmosDBRetryCountPolicy ends the retries of anything else sooner.
	retry := policy.RetryOptions{MaxRetries: cosmosDBThrottledRetries, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 2 * time.Second, TryTimeout: tryTimeout,
		StatusCodes: cosmosDBRetriedStatuses}
	return runtime.NewPipeline("keda-azure-cosmosdb", "v1", runtime.PipelineOptions{
		PerRetry: []policy.Policy{cosmosDBRetryCountPolicy{}, cosmosDBThrottlePolicy{}, auth, cosmosDBBodyPolicy{}},
	}, &policy.ClientOptions{Transport: transport, Retry: retry})
}

// A throttled request is retried as often as the Cosmos DB SDKs retry one
// (9 times, each after the wait the service asks for): on a throttled
// container most tries of a poll's reads are answered 429 for a while, and
// 3 retries failed polls there. Any other failure is retried 3 times, so
// that a refused connection or a failing account fails the poll within
// seconds rather than after ten tries.
const (
	cosmosDBThrottledRetries = 9
	cosmosDBOtherRetries     = 3
)

var cosmosDBRetriedStatuses = []int{http.StatusRequestTimeout, http.StatusTooManyRequests, 449, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// cosmosDBFailedTriesKey holds, in a request's context, how many of its
// tries failed other than by a 429.
type cosmosDBFailedTriesKey struct{}

// cosmosDBRetryCountPolicy ends azcore's retries of a request at its
// (cosmosDBOtherRetries+1)th try that failed other than by a 429; the 429s
// are counted by azcore's MaxRetries.
type cosmosDBRetryCountPolicy struct{}

func (cosmosDBRetryCountPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	failed, _ := req.Raw().Context().Value(cosmosDBFailedTriesKey{}).(*int)
	switch {
	case failed == nil, err == nil && resp.StatusCode == http.StatusTooManyRequests,
		err == nil && !slices.Contains(cosmosDBRetriedStatuses, resp.StatusCode):
		return resp, err
	}
	if *failed++; *failed <= cosmosDBOtherRetries {
		return resp, err
	}
	return nil, &cosmosDBRetriesSpent{resp: resp, err: err}
}

// cosmosDBRetriesSpent carries the last try's answer or error out of
// azcore's retry loop, which does not retry it (errorinfo.NonRetriable);
// do hands on what it carries. The answer's body is read already
// (cosmosDBBodyPolicy), so the end of the try's context does not cut it.
type cosmosDBRetriesSpent struct {
	resp *http.Response
	err  error
}

func (e *cosmosDBRetriesSpent) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return "HTTP " + strconv.Itoa(e.resp.StatusCode)
}

func (e *cosmosDBRetriesSpent) Unwrap() error { return e.err }

func (*cosmosDBRetriesSpent) NonRetriable() {}

// Close releases the client's holds on its pipeline and its credential,
// each dropped with its last client; it may be called more than once.
func (c *CosmosDBClient) Close() { c.release() }

// url is the address of a resource of the account: dbs/{db}/colls/{container}/...
func (c *CosmosDBClient) url(path ...string) string { return c.endpoint.JoinPath(path...).String() }

// cosmosDBRequest is one REST call; operation names it in errors.
type cosmosDBRequest struct {
	operation, method, url string
	header                 http.Header // made for this call
	query                  []byte      // a POSTed query
	ok                     []int       // the statuses that are a success
	// container, if set, is the bound of the monitored container the
	// request is for: send takes a place there for it, unless place is
	// given (taken by its owner, who gives it back). quiet: the request
	// addresses another container (a lease query), whose 429s do not
	// lower this bound.
	container *cosmosDBContainer
	quiet     bool
	place     *cosmosDBPlace
}

type cosmosDBResponse struct {
	status int
	header http.Header
	body   []byte
}

// send sends r (azcore retries it) and returns the answer; an answer
// outside r.ok is a *cosmosDBResponseError. A request to a bounded
// container holds its place there across its retries.
func (c *CosmosDBClient) send(ctx context.Context, r cosmosDBRequest) (cosmosDBResponse, error) {
	if r.container != nil && r.place == nil {
		r.place = &cosmosDBPlace{container: r.container, quiet: r.quiet}
		if err := r.place.take(ctx, false); err != nil {
			return cosmosDBResponse{}, fmt.Errorf("%s at %s: %w", r.operation, c.endpoint.Host, err)
		}
		defer r.place.give()
	}
	if r.place != nil {
		ctx = context.WithValue(ctx, cosmosDBPlaceKey{}, r.place)
	}
	resp, err := c.do(ctx, r)
	switch {
	case err != nil:
		return cosmosDBResponse{}, fmt.Errorf("%s at %s: %w", r.operation, c.endpoint.Host, err)
	case len(resp.body) > cosmosDBMaxResponseBytes:
		return cosmosDBResponse{}, fmt.Errorf("%s: response larger than %d bytes", r.operation, cosmosDBMaxResponseBytes)
	case !slices.Contains(r.ok, resp.status):
		return cosmosDBResponse{}, newCosmosDBResponseError(r.operation, resp)
	}
	return resp, nil
}

// sendPages sends r for each page of a feed, following x-ms-continuation.
// While page handles a page, the next one is already asked for (in a
// goroutine that lives as long as that request), so that a poll's reads
// do not run dry at each page's end.
func (c *CosmosDBClient) sendPages(ctx context.Context, r cosmosDBRequest, page func(body []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends a request for a page no longer wanted
	type answer struct {
		resp cosmosDBResponse
		err  error
	}
	first := r.header
	r.header = first.Clone()
	resp, err := c.send(ctx, r)
	for {
		if err != nil {
			return err
		}
		var next chan answer
		if continuation := resp.header.Get("X-Ms-Continuation"); continuation != "" {
			req := r
			req.header = first.Clone()
			req.header["X-Ms-Continuation"] = []string{continuation}
			next = make(chan answer, 1)
			go func() {
				resp, err := c.send(ctx, req)
				next <- answer{resp, err}
			}()
		}
		if err := page(resp.body); err != nil || next == nil {
			return err
		}
		a := <-next
		resp, err = a.resp, a.err
	}
}

// do sends r through the pipeline and reads at most one byte past the
// body's cap.
func (c *CosmosDBClient) do(ctx context.Context, r cosmosDBRequest) (cosmosDBResponse, error) {
	req, err := runtime.NewRequest(context.WithValue(ctx, cosmosDBFailedTriesKey{}, new(int)), r.method, r.url)
	if err != nil {
		return cosmosDBResponse{}, err
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
			return cosmosDBResponse{}, err
		}
	}
	runtime.SkipBodyDownload(req) // cosmosDBBodyPolicy reads it
	resp, err := c.pipeline.Do(req)
	if spent, ok := errors.AsType[*cosmosDBRetriesSpent](err); ok {
		resp, err = spent.resp, spent.err
	}
	if err != nil {
		return cosmosDBResponse{}, err
	}
	defer resp.Body.Close()
	body, err := runtime.Payload(resp) // read by cosmosDBBodyPolicy
	return cosmosDBResponse{status: resp.StatusCode, header: resp.Header, body: body}, err
}

// cosmosDBBodyPolicy reads each try's body (to one byte past the cap) inside
// the retry loop, so a body cut midway is retried; azcore's reads it after.
type cosmosDBBodyPolicy struct{}

func (cosmosDBBodyPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, cosmosDBMaxResponseBytes+1), resp.Body}
	if _, err := runtime.Payload(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// cosmosDBEmulatorKey is the Cosmos DB Emulator's published account key,
// no secret: the only key sent over plain HTTP.
const cosmosDBEmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// cosmosDBKeyPolicy signs each try with the account key, as the REST API
// documents; over plain HTTP only the emulator's published key.
type cosmosDBKeyPolicy struct {
	key       []byte
	plainHTTP bool
}

func (p cosmosDBKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.URL.Scheme != "https" && !p.plainHTTP {
		return nil, errors.New("an account key is only sent over https")
	}
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
// /dbs/d/colls/c/docs is ("docs", "dbs/d/colls/c"); ids hold no '/'.
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

func newCosmosDBResponseError(operation string, resp cosmosDBResponse) *cosmosDBResponseError {
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

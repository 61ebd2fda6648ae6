package account

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// ClientOptions tune the request pipeline.
type ClientOptions struct {
	// Transport sends requests; production passes KEDA's shared HTTP client so
	// GlobalHTTPTimeout, proxies and keep-alive apply.
	Transport policy.Transporter
	// Retry overrides the retry policy (429 honouring x-ms-retry-after-ms,
	// 408 and 5xx). Zero value: DefaultRetry.
	Retry *policy.RetryOptions
	// TryTimeout bounds each try (KEDA's GlobalHTTPTimeout). It is applied as
	// a context deadline per try rather than as http.Client.Timeout, which
	// costs a timer goroutine and reflection per request.
	TryTimeout time.Duration
	// Now is the clock for x-ms-date; nil means time.Now.
	Now func() time.Time
}

// RoundTripperTransport sends each try straight through an http.RoundTripper
// (KEDA's shared transport), skipping http.Client: its redirect following
// and per-request bookkeeping cost CPU on every lease read, and Cosmos DB
// never redirects; a redirect is returned as the error it is, instead of
// carrying a signed request to another host.
type RoundTripperTransport struct{ http.RoundTripper }

// Do sends one request.
func (t RoundTripperTransport) Do(req *http.Request) (*http.Response, error) {
	return t.RoundTrip(req)
}

// DefaultRetry keeps retries well inside one polling interval: a poll must
// fail visibly rather than hang while KEDA waits. Transport errors (dropped
// connections) and 408, 429, 449, 500, 502, 503, 504 are retried up to three
// times, after x-ms-retry-after-ms when the service gives one; see shouldRetry.
var DefaultRetry = policy.RetryOptions{MaxRetries: 3, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 2 * time.Second, ShouldRetry: shouldRetry}

var retriableStatus = map[int]bool{
	http.StatusRequestTimeout: true, http.StatusTooManyRequests: true, 449: true, // 449: Cosmos DB "retry with"
	http.StatusInternalServerError: true, http.StatusBadGateway: true, http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true,
}

// shouldRetry retries transient failures, but not a throttled request whose
// x-ms-retry-after-ms reaches past the poll's deadline: waiting would only end
// in a bare "context deadline exceeded", while returning the 429 tells the
// user the poll was throttled.
func shouldRetry(resp *http.Response, err error) bool {
	if err != nil {
		return true // azcore never calls this for non-retriable errors or a done context
	}
	if !retriableStatus[resp.StatusCode] {
		return false
	}
	if resp.StatusCode == http.StatusTooManyRequests && resp.Request != nil {
		if deadline, ok := resp.Request.Context().Value(pollDeadlineKey{}).(time.Time); ok {
			if ms, perr := strconv.ParseInt(resp.Header.Get("x-ms-retry-after-ms"), 10, 64); perr == nil && time.Now().Add(time.Duration(ms)*time.Millisecond).After(deadline) {
				return false
			}
		}
	}
	return true
}

type pollDeadlineKey struct{}

// pollDeadlinePolicy runs once per call, before retries, and records the
// caller's deadline where shouldRetry can see it: the per-try context it gets
// carries the shorter try timeout instead. A context that already records its
// own deadline (WithUsage does, once per poll) is used as it is, which spares
// every lease read a context and two request copies.
type pollDeadlinePolicy struct{}

func (pollDeadlinePolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	if deadline, ok := ctx.Deadline(); ok {
		if recorded, ok := ctx.Value(pollDeadlineKey{}).(time.Time); !ok || !recorded.Equal(deadline) {
			req = req.WithContext(withPollDeadline(ctx, deadline))
		}
	}
	return req.Next()
}

func withPollDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, pollDeadlineKey{}, deadline)
}

// Client sends Cosmos DB REST requests for one account through a single
// azcore pipeline: retries, then per try the version and date headers,
// usage accounting and the signature (account key or bearer token).
type Client struct {
	account  *Account
	pipeline runtime.Pipeline
}

// NewClient builds the pipeline for an account.
func NewClient(a *Account, opts ClientOptions) *Client {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	retry := DefaultRetry
	if opts.Retry != nil {
		retry = *opts.Retry
	}
	if opts.TryTimeout > 0 {
		retry.TryTimeout = opts.TryTimeout
	}
	perRetry := []policy.Policy{tryPolicy{now: now, key: a.key, dates: &dateCache{}, sigs: &signatureCache{}}}
	if a.key == nil {
		scope := a.scope
		perRetry = append(perRetry, runtime.NewBearerTokenPolicy(a.token, []string{scope}, &policy.BearerTokenOptions{
			AuthorizationHandler: policy.AuthorizationHandler{
				OnRequest: func(req *policy.Request, authorize func(policy.TokenRequestOptions) error) error {
					return aadAuthorization(req, authorize, scope)
				},
			},
			InsecureAllowCredentialWithHTTP: isLoopback(a.Endpoint.Hostname()),
		}))
	}
	pl := runtime.NewPipeline("azcosmos-keda-scaler", "v1", runtime.PipelineOptions{PerCall: []policy.Policy{pollDeadlinePolicy{}}, PerRetry: perRetry}, &policy.ClientOptions{
		Transport: boundedTransport{next: opts.Transport},
		Retry:     retry,
		Logging:   policy.LogOptions{IncludeBody: false},
	})
	return &Client{account: a, pipeline: pl}
}

// Account returns the account this client talks to.
func (c *Client) Account() *Account { return c.account }

// NewRequest builds a request for the resource path given as unescaped
// segments, e.g. ("dbs", db, "colls", coll, "docs").
func (c *Client) NewRequest(ctx context.Context, method string, segments ...string) (*policy.Request, error) {
	return c.NewRequestURL(ctx, method, c.ResourceURL(segments...))
}

// ResourceURL is the URL of the resource path given as unescaped segments.
// Callers that send many requests to one resource compute it once and use
// NewRequestURL.
func (c *Client) ResourceURL(segments ...string) string {
	return c.account.Endpoint.JoinPath(segments...).String()
}

// NewRequestURL builds a request for a URL returned by ResourceURL.
func (c *Client) NewRequestURL(ctx context.Context, method, resourceURL string) (*policy.Request, error) {
	req, err := runtime.NewRequest(ctx, method, resourceURL)
	if err != nil {
		return nil, err
	}
	// boundedTransport has read the body already, under the cap; azcore's
	// own download would copy it once more.
	runtime.SkipBodyDownload(req)
	return req, nil
}

// Do sends req. A status outside ok becomes a *ResponseError naming operation;
// on success the caller owns the response body.
func (c *Client) Do(req *policy.Request, operation string, ok ...int) (*http.Response, error) {
	resp, err := c.pipeline.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", operation, err)
	}
	if !slices.Contains(ok, resp.StatusCode) {
		defer resp.Body.Close()
		return nil, newResponseError(operation, resp)
	}
	return resp, nil
}

// ReadBody returns a response body, at most MaxResponseBytes of it, and
// closes it. Bodies of this package's pipeline are already in memory (see
// boundedTransport); others are read here under the same cap.
func ReadBody(resp *http.Response, operation string) ([]byte, error) {
	defer resp.Body.Close()
	if b, ok := resp.Body.(*bufferedBody); ok {
		return b.unread(), nil
	}
	body, err := readCapped(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", operation, err)
	}
	return body, nil
}

// DecodeJSON reads a bounded response body into v and closes it.
func DecodeJSON(resp *http.Response, operation string, v any) error {
	body, err := ReadBody(resp, operation)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: malformed response body: %w", operation, err)
	}
	return nil
}

// Usage counts the requests (every try) and request units of one poll.
type Usage struct {
	mu          sync.Mutex
	requests    int64
	chargeMilli int64
}

// Requests is the number of HTTP requests sent, retries included.
func (u *Usage) Requests() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// RequestCharge is the total of x-ms-request-charge, in request units.
func (u *Usage) RequestCharge() float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return float64(u.chargeMilli) / 1000
}

func (u *Usage) add(charge float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.requests++
	if charge > 0 {
		u.chargeMilli += int64(charge*1000 + 0.5)
	}
}

type usageKey struct{}

// WithUsage returns a context whose requests are counted into a new Usage.
// It also records the context's deadline for shouldRetry once, rather than
// pollDeadlinePolicy doing so for every request of the poll.
func WithUsage(ctx context.Context) (context.Context, *Usage) {
	u := &Usage{}
	if deadline, ok := ctx.Deadline(); ok {
		ctx = withPollDeadline(ctx, deadline)
	}
	return context.WithValue(ctx, usageKey{}, u), u
}

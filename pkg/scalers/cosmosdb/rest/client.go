package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
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

// Client sends Cosmos DB REST requests for one account through a single
// azcore pipeline: per call the poll's deadline, then retries, then per try
// usage counting, the version and date headers and the signature (account
// key or bearer token).
type Client struct {
	account  *account.Account
	pipeline runtime.Pipeline
}

// NewClient builds the pipeline for an account.
func NewClient(a *account.Account, opts ClientOptions) *Client {
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
	dates := &dateCache{}
	perRetry := []policy.Policy{usagePolicy{}, headersPolicy{now: now, dates: dates}, signingPolicy(a)}
	pl := runtime.NewPipeline("azcosmos-keda-scaler", "v1", runtime.PipelineOptions{PerCall: []policy.Policy{pollDeadlinePolicy{}}, PerRetry: perRetry}, &policy.ClientOptions{
		Transport: boundedTransport{next: opts.Transport},
		Retry:     retry,
		Logging:   policy.LogOptions{IncludeBody: false},
	})
	return &Client{account: a, pipeline: pl}
}

// Account returns the account this client talks to.
func (c *Client) Account() *account.Account { return c.account }

// NewRequest builds a request for a resource returned by Resource.
func (c *Client) NewRequest(ctx context.Context, method string, r *Resource) (*policy.Request, error) {
	req, err := runtime.NewRequest(withResource(ctx, r), method, r.URL)
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

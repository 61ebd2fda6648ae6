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
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// Header values every try shares (nothing writes into a value slice): the API
// version azcosmos v1.5.0 speaks, and capability bit 0, PartitionMerge, which
// accounts with merge enabled require every client to declare, as the SDKs do.
var cosmosDBAPIVersion, cosmosDBCapabilities = []string{"2020-11-05"}, []string{"1"}

const (
	// cosmosDBMaxResponseBytes bounds a body; the service's pages are ≤ 4 MB.
	cosmosDBMaxResponseBytes = 16 << 20
	// cosmosDBSubStatusRangeGone with a 410: the range split or merged.
	cosmosDBSubStatusRangeGone = 1002
)

// cosmosDBRetry: transport errors, 408, 429, 449 and 5xx, three times, after
// x-ms-retry-after-ms; over MaxRetryDelay, the 429 is returned at once.
var cosmosDBRetry = policy.RetryOptions{
	MaxRetries: 3, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 2 * time.Second,
	StatusCodes: []int{http.StatusRequestTimeout, http.StatusTooManyRequests, 449, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
}

// CosmosDBClient sends requests to one account through one azcore pipeline.
type CosmosDBClient struct {
	conn     *CosmosDBConnection
	pipeline runtime.Pipeline
}

// NewCosmosDBClient: transport is KEDA's client; its timeout
// (GlobalHTTPTimeout) bounds each try.
func NewCosmosDBClient(conn *CosmosDBConnection, transport policy.Transporter) *CosmosDBClient {
	tries, retry := cosmosDBTransport(transport.Do), cosmosDBRetry
	if c, ok := transport.(*http.Client); ok && c.Transport != nil {
		// Straight to its round tripper, with its timeout as azcore's per try:
		// http.Client's costs a timer and a goroutine per request.
		tries, retry.TryTimeout = c.Transport.RoundTrip, c.Timeout
	}
	var sign policy.Policy = &cosmosDBKeyPolicy{key: conn.key}
	if !conn.UsesKey() {
		scope := conn.scope
		sign = runtime.NewBearerTokenPolicy(conn.token, []string{scope}, &policy.BearerTokenOptions{
			AuthorizationHandler: policy.AuthorizationHandler{OnRequest: func(req *policy.Request, authorize func(policy.TokenRequestOptions) error) error {
				if err := authorize(policy.TokenRequestOptions{Scopes: []string{scope}}); err != nil {
					return err
				}
				// azcore wrote "Bearer <token>"; Cosmos DB wants its own form.
				h := req.Raw().Header
				h.Set("Authorization", "type=aad&ver=1.0&sig="+strings.TrimPrefix(h.Get("Authorization"), "Bearer "))
				return nil
			}},
			InsecureAllowCredentialWithHTTP: isCosmosDBLoopback(conn.Endpoint.Hostname()),
		})
	}
	pipeline := runtime.NewPipeline("keda-azure-cosmosdb", "v1", runtime.PipelineOptions{
		PerRetry: []policy.Policy{&cosmosDBTryPolicy{}, sign},
	}, &policy.ClientOptions{Transport: tries, Retry: retry})
	return &CosmosDBClient{conn: conn, pipeline: pipeline}
}

// cosmosDBTransport sends a try and reads its body, capped, within the try
// (a cut one is retried), for send to take without a copy.
type cosmosDBTransport func(*http.Request) (*http.Response, error)

func (send cosmosDBTransport) Do(req *http.Request) (*http.Response, error) {
	resp, err := send(req)
	if err != nil {
		return nil, err
	}
	// Cosmos DB announces the length: one allocation of it holds the body,
	// and a one-byte read confirms the end (a longer body is read whole, capped).
	data := make([]byte, min(max(resp.ContentLength, 0), cosmosDBMaxResponseBytes))
	if _, err = io.ReadFull(resp.Body, data); err == nil {
		var probe [1]byte
		if n, perr := resp.Body.Read(probe[:]); n > 0 || perr != io.EOF {
			rest, rerr := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(probe[:n]), resp.Body), cosmosDBMaxResponseBytes+1-int64(len(data))))
			data, err = append(data, rest...), rerr
		}
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	req.Context().Value(cosmosDBRequestKey{}).(*cosmosDBRequest).body = data // cosmosDBTryPolicy checked it
	return resp, err
}

// cosmosDBResource is a URL and the resource type and link a signature
// covers: dbs/d/colls/c is ("colls", it), dbs/d/colls/c/docs ("docs", its parent).
type cosmosDBResource struct{ url, typ, link string }

func (c *CosmosDBClient) resource(segments ...string) cosmosDBResource {
	r := cosmosDBResource{url: c.conn.Endpoint.JoinPath(segments...).String()}
	if n := len(segments); n%2 == 0 {
		r.typ, r.link = segments[n-2], strings.Join(segments, "/")
	} else {
		r.typ, r.link = segments[n-1], strings.Join(segments[:n-1], "/")
	}
	return r
}

// cosmosDBRequest is what the policies learn of a request, and its tries.
type cosmosDBRequest struct {
	cosmosDBResource
	tries int
	body  []byte // the last try's
}

type cosmosDBRequestKey struct{}

// send sends one request; an answer outside ok is a *cosmosDBResponseError.
func (c *CosmosDBClient) send(ctx context.Context, method string, r cosmosDBResource, header http.Header, query []byte, operation string, ok ...int) (int, http.Header, []byte, error) {
	start, sent := time.Now(), &cosmosDBRequest{cosmosDBResource: r}
	req, err := runtime.NewRequest(context.WithValue(ctx, cosmosDBRequestKey{}, sent), method, r.url)
	if err == nil && header != nil {
		req.Raw().Header = header // the caller's, made for this request
	}
	if err == nil && query != nil {
		err = req.SetBody(streaming.NopCloser(bytes.NewReader(query)), "application/query+json")
	}
	if err != nil {
		return 0, nil, nil, err
	}
	runtime.SkipBodyDownload(req) // cosmosDBTransport has read it
	resp, err := c.pipeline.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s at %s (tries: %d in %s): %w", operation, c.conn.Endpoint.Host, sent.tries, time.Since(start).Round(time.Millisecond), err)
	}
	defer resp.Body.Close()
	if !slices.Contains(ok, resp.StatusCode) {
		return 0, nil, nil, newCosmosDBResponseError(operation, resp)
	}
	if len(sent.body) > cosmosDBMaxResponseBytes {
		return 0, nil, nil, fmt.Errorf("%s: response larger than %d bytes", operation, cosmosDBMaxResponseBytes)
	}
	return resp.StatusCode, resp.Header, sent.body, nil
}

// cosmosDBTryPolicy stamps every try before signing, which covers the date,
// and counts it and its x-ms-request-charge for the request and the poll.
// The date has one-second resolution: a second's tries share its value.
type cosmosDBTryPolicy struct {
	mu   sync.Mutex
	unix int64
	date []string
}

func (p *cosmosDBTryPolicy) Do(req *policy.Request) (*http.Response, error) {
	sent, ok := req.Raw().Context().Value(cosmosDBRequestKey{}).(*cosmosDBRequest)
	if !ok {
		return nil, errors.New("request has no Cosmos DB resource")
	}
	h := req.Raw().Header
	h["X-Ms-Version"], h["X-Ms-Cosmos-Sdk-Supportedcapabilities"] = cosmosDBAPIVersion, cosmosDBCapabilities
	now := time.Now().UTC()
	p.mu.Lock()
	if now.Unix() != p.unix {
		p.unix, p.date = now.Unix(), []string{now.Format(http.TimeFormat)}
	}
	h["X-Ms-Date"] = p.date
	p.mu.Unlock()
	sent.tries++
	resp, err := req.Next()
	if u, ok := req.Raw().Context().Value(cosmosDBUsageKey{}).(*cosmosDBUsage); ok {
		var charge float64
		if resp != nil {
			charge, _ = strconv.ParseFloat(resp.Header.Get("X-Ms-Request-Charge"), 64)
		}
		u.mu.Lock()
		u.requests++
		u.charge += max(charge, 0)
		u.mu.Unlock()
	}
	return resp, err
}

// cosmosDBKeyPolicy signs with the account key: HMAC-SHA256 over verb,
// resource type, link and date, as the REST API documents. A poll's reads
// share all four within a second: the last signature serves them.
type cosmosDBKeyPolicy struct {
	key       []byte
	mu        sync.Mutex
	signed    [4]string // verb, resource type, link, date
	signature []string  // the Authorization header's value; no one writes to it
}

func (p *cosmosDBKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	r := raw.Context().Value(cosmosDBRequestKey{}).(*cosmosDBRequest) // cosmosDBTryPolicy checked it
	signed := [4]string{raw.Method, r.typ, r.link, raw.Header.Get("X-Ms-Date")}
	p.mu.Lock()
	if signed != p.signed {
		p.signed, p.signature = signed, []string{signCosmosDBRequest(p.key, signed[0], signed[1], signed[2], signed[3])}
	}
	raw.Header["Authorization"] = p.signature
	p.mu.Unlock()
	return req.Next()
}

func signCosmosDBRequest(key []byte, verb, resourceType, resourceLink, date string) string {
	payload := strings.ToLower(verb) + "\n" + strings.ToLower(resourceType) + "\n" + resourceLink + "\n" + strings.ToLower(date) + "\n\n"
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(payload))
	return url.QueryEscape("type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// cosmosDBUsage counts the requests (every try) and request units of a poll.
type cosmosDBUsage struct {
	mu       sync.Mutex
	requests int64
	charge   float64
}

type cosmosDBUsageKey struct{}

// cosmosDBResponseError is a non-success answer, never quoting a request header.
type cosmosDBResponseError struct {
	Operation  string
	StatusCode int
	SubStatus  int
	Code       string
	Message    string
	ActivityID string
}

func (e *cosmosDBResponseError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Operation, e.StatusCode)
	if e.SubStatus != 0 {
		msg += fmt.Sprintf(" substatus %d", e.SubStatus)
	}
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.StatusCode == http.StatusTooManyRequests {
		msg += " (throttled)"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.ActivityID != "" {
		msg += " (activity " + e.ActivityID + ")"
	}
	return msg
}

// isCosmosDBRangeGone: 410/1002, the only answer treated as a split or merge.
func isCosmosDBRangeGone(err error) bool {
	re, ok := errors.AsType[*cosmosDBResponseError](err)
	return ok && re.StatusCode == http.StatusGone && re.SubStatus == cosmosDBSubStatusRangeGone
}

func newCosmosDBResponseError(operation string, resp *http.Response) *cosmosDBResponseError {
	e := &cosmosDBResponseError{Operation: operation, StatusCode: resp.StatusCode, ActivityID: cosmosDBExcerpt(resp.Header.Get("X-Ms-Activity-Id"))}
	e.SubStatus, _ = strconv.Atoi(resp.Header.Get("X-Ms-Substatus"))
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var payload struct{ Code, Message string }
	if json.Unmarshal(body, &payload) == nil {
		e.Code = cosmosDBExcerpt(payload.Code)
		first, _, _ := strings.Cut(payload.Message, "\n") // diagnostics follow
		e.Message = cosmosDBExcerpt(strings.TrimRight(first, "\r"))
	}
	return e
}

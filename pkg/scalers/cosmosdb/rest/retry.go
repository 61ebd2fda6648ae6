package rest

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

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

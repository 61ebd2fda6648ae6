package rest

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

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

// usagePolicy counts every try and its x-ms-request-charge into the Usage
// of the request's context, whether or not the try got an answer.
type usagePolicy struct{}

func (usagePolicy) Do(req *policy.Request) (*http.Response, error) {
	u, _ := req.Raw().Context().Value(usageKey{}).(*Usage)
	resp, err := req.Next()
	if u != nil {
		var charge float64
		if resp != nil {
			charge, _ = strconv.ParseFloat(resp.Header.Get(headerCharge), 64)
		}
		u.add(charge)
	}
	return resp, err
}

package cosmostest

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault describes a failure the server injects into matching requests.
// A request matches when Kind is "" or its kind, and RangeID is "" or the
// request's x-ms-documentdb-partitionkeyrangeid. The first matching fault
// (in injection order) applies; it is spent after Times requests (0 = never).
//
// Note on DropConnection: Go's http.Transport silently retries an idempotent
// request (GET, or one with GetBody) once when a reused keep-alive connection
// closes without an answer. To make a client see the drop, use Times >= 2 or
// 0, or a fresh connection.
type Fault struct {
	Kind           RequestKind   // "" = any kind
	RangeID        string        // "" = any range
	Status         int           // e.g. 410, 429, 500, 503
	SubStatus      int           // sent as x-ms-substatus when non-zero, e.g. 1002, 1007
	RetryAfter     time.Duration // sent as x-ms-retry-after-ms (for 429)
	Times          int           // requests it hits; 0 = always
	latency        time.Duration // waited before answering; honours the request context
	MalformedBody  bool          // 200 with a truncated JSON body
	DropConnection bool          // close the connection without answering

	// Body, when non-nil, is sent verbatim as the answer with Status (200
	// when 0) and Header, e.g. to hand a client an oversized page or an
	// overflowing _lsn. Header is also added to Status answers.
	Body   []byte
	Header http.Header

	// Hook, when set, runs (with no server lock held) each time the fault
	// hits, after latency and before the answer. It lets a test split a range
	// or write items at an exact point of a client's request sequence; with
	// no Status, Body, MalformedBody or DropConnection the request is then
	// served normally.
	Hook func()
}

// InjectFault adds a fault; the returned function removes it (idempotent).
func (h *Handler) InjectFault(f Fault) (remove func()) { return h.faults.Add(f, f.Times) }

// injectedReply applies the first live fault matching the request: it waits
// the fault's latency, runs its hook and returns its answer, or nil to serve
// the request normally. dropped means: close the connection without an
// answer (the fault says so, or the wait ended with the request or the
// server).
func (h *Handler) injectedReply(r *http.Request, kind RequestKind, rangeID string) (rep *reply, dropped bool) {
	f, ok := h.faults.Take(func(f Fault) bool {
		return (f.Kind == "" || f.Kind == kind) && (f.RangeID == "" || f.RangeID == rangeID)
	})
	if !ok {
		return nil, false
	}
	if !h.gate.Sleep(r.Context(), f.latency) {
		return nil, true
	}
	if f.Hook != nil {
		f.Hook()
	}
	switch {
	case f.DropConnection:
		return nil, true
	case f.MalformedBody:
		return malformedReply(), false
	case f.Body != nil:
		return customReply(f), false
	case f.Status != 0:
		return faultReply(f), false
	}
	return nil, false
}

var statusCodes = map[int]string{
	http.StatusBadRequest:          "BadRequest",
	http.StatusUnauthorized:        "Unauthorized",
	http.StatusForbidden:           "Forbidden",
	http.StatusNotFound:            "NotFound",
	http.StatusRequestTimeout:      "RequestTimeout",
	http.StatusConflict:            "Conflict",
	http.StatusGone:                "Gone",
	http.StatusPreconditionFailed:  "PreconditionFailed",
	http.StatusTooManyRequests:     "TooManyRequests",
	http.StatusInternalServerError: "InternalServerError",
	http.StatusServiceUnavailable:  "ServiceUnavailable",
}

func faultReply(f Fault) *reply {
	code := statusCodes[f.Status]
	if code == "" {
		code = http.StatusText(f.Status)
	}
	msg := "injected fault"
	switch {
	case f.Status == http.StatusGone && f.SubStatus == subStatusPartitionKeyRangeGone:
		msg = "PartitionKeyRangeGone: the partition key range is gone (injected)"
	case f.Status == http.StatusGone && f.SubStatus == subStatusCompletingSplit:
		msg = "CompletingSplit: the partition key range is completing a split or merge (injected)"
	case f.Status == http.StatusTooManyRequests:
		msg = "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later (injected)"
	}
	rep := errorReply(f.Status, f.SubStatus, code, msg)
	h := rep.header
	for k, v := range f.Header {
		h[responseHeaderName(k)] = append([]string{}, v...)
	}
	if f.Status == http.StatusTooManyRequests || f.RetryAfter > 0 {
		h[hdrRetryAfterMs] = []string{strconv.FormatInt(f.RetryAfter.Milliseconds(), 10)}
	}
	return rep
}

func customReply(f Fault) *reply {
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	rep := newReply(status, chargeQuery)
	rep.body = f.Body
	h := rep.header
	for k, v := range f.Header {
		h[responseHeaderName(k)] = append([]string{}, v...)
	}
	return rep
}

func malformedReply() *reply {
	rep := newReply(http.StatusOK, chargeQuery)
	rep.body = []byte(`{"_rid":"x","Documents":[{"id":"trunc`)
	return rep
}

// responseHeaderName is the name a fault's header is sent under: lower case,
// as the service sends its own headers, except the standard headers that
// net/http itself writes canonically.
func responseHeaderName(k string) string {
	switch c := http.CanonicalHeaderKey(k); c {
	case hdrContentType, hdrContentLength, "Retry-After":
		return c
	}
	return strings.ToLower(k)
}

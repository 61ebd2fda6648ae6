package cosmostest

import (
	"net/http"
	"net/url"
	"sync"
	"time"
)

// RequestKind classifies a request by what it does on the wire.
type RequestKind string

// Request kinds. Upserts count as kindCreate (they are a POST to the docs
// feed, like creates); a plain read feed (GET …/docs without A-IM) is
// kindReadFeed; anything else the server does not model is kindOther.
const (
	kindAccount    RequestKind = "account"
	kindDatabase   RequestKind = "database"
	kindContainer  RequestKind = "container"
	kindPKRanges   RequestKind = "pkranges"
	KindQuery      RequestKind = "query"
	KindChangeFeed RequestKind = "changefeed"
	kindCreate     RequestKind = "create"
	kindReplace    RequestKind = "replace"
	kindReadItem   RequestKind = "readitem"
	kindDelete     RequestKind = "delete"
	kindReadFeed   RequestKind = "readfeed"
	kindOther      RequestKind = "other"
)

// Request is one entry of the request log. Header holds the request
// headers with the Authorization signature or token removed.
type Request struct {
	Kind    RequestKind
	Method  string
	Path    string
	RangeID string // x-ms-documentdb-partitionkeyrangeid, if sent
	Status  int    // 0 when no answer was written (dropped connection, cancelled request)
	Header  http.Header
	At      time.Time
}

// redactAuthorization redacts the Authorization header of a request in
// place, keeping only the type and version so that neither keys' signatures
// nor tokens end up in logs or test output, and returns the original value
// (as Header.Get would) for the authorization check. The request log keeps
// the request's own header map instead of a copy: net/http hands every
// request a fresh map and never writes to it once the handler runs, and the
// handlers only read it, so the log sees exactly what a copy would hold.
func (h *Handler) redactAuthorization(hdr http.Header) string {
	v := hdr["Authorization"]
	if len(v) == 0 || v[0] == "" {
		return ""
	}
	raw := v[0]
	// Replace the value slice rather than write into it: a client may share
	// one slice across requests (this project's does), and an in-process
	// transport would hand the server that very slice.
	hdr["Authorization"] = []string{h.redacted.of(raw)} // as Header.Set
	return raw
}

// redactionMemo remembers the redaction of the last Authorization value
// seen: a client's concurrent requests carry the same value for a whole
// second (the date is signed at one-second resolution).
type redactionMemo struct {
	mu      sync.Mutex
	in, out string
}

func (m *redactionMemo) of(a string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a != m.in || m.out == "" {
		typ := "unknown"
		if dec, err := url.QueryUnescape(a); err == nil {
			if vals, err := url.ParseQuery(dec); err == nil && vals.Get("type") != "" {
				typ = vals.Get("type")
			}
		}
		m.in, m.out = a, "type="+url.QueryEscape(typ)+"&ver=1.0&sig=REDACTED"
	}
	return m.out
}

func (h *Handler) record(rec Request, status int) {
	rec.Status = status
	h.mu.Lock()
	defer h.mu.Unlock()
	if limit := h.cfg.requestLog; limit > 0 && h.requests.n >= 2*limit {
		// Drop the older half in one copy: amortised O(1) per request.
		h.requests.keepLast(limit)
	}
	h.requests.add(rec)
}

// requestLog holds the logged requests in chunks, so that a long log grows
// without copying every entry again each time it doubles (and without the
// garbage the copies leave behind).
type requestLog struct {
	chunks [][]Request // all full but the last
	n      int
}

const (
	firstLogChunk = 16
	maxLogChunk   = 1024
)

func (l *requestLog) add(r Request) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == cap(l.chunks[k-1]) {
		// Chunks double in size up to maxLogChunk entries.
		size := min(max(l.n, firstLogChunk), maxLogChunk)
		l.chunks = append(l.chunks, make([]Request, 0, size))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, r)
	l.n++
}

// appendTo appends the log's entries to out, oldest first.
func (l *requestLog) appendTo(out []Request) []Request {
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return out
}

// keepLast drops all but the newest n entries.
func (l *requestLog) keepLast(n int) {
	kept, skip := make([]Request, 0, n), l.n-n
	for _, c := range l.chunks {
		if skip >= len(c) {
			skip -= len(c)
			continue
		}
		kept = append(kept, c[skip:]...)
		skip = 0
	}
	*l = requestLog{chunks: [][]Request{kept}, n: len(kept)}
}

// Requests returns a copy of the request log in arrival order of answers.
func (h *Handler) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests.appendTo(make([]Request, 0, h.requests.n))
}

// Count is the number of logged requests of a kind ("" counts all).
func (h *Handler) Count(kind RequestKind) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if kind == "" {
		return h.requests.n
	}
	n := 0
	for _, c := range h.requests.chunks {
		for _, r := range c {
			if r.Kind == kind {
				n++
			}
		}
	}
	return n
}

// ResetRequests empties the request log.
func (h *Handler) ResetRequests() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = requestLog{}
}

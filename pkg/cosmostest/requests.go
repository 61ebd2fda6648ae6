package cosmostest

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// RequestKind classifies a request by what it does on the wire.
type RequestKind string

// Request kinds. Upserts count as KindCreate (they are a POST to the docs
// feed, like creates); a plain read feed (GET …/docs without A-IM) is
// KindReadFeed; anything else the server does not model is KindOther.
const (
	KindAccount    RequestKind = "account"
	KindDatabase   RequestKind = "database"
	KindContainer  RequestKind = "container"
	KindPKRanges   RequestKind = "pkranges"
	KindQuery      RequestKind = "query"
	KindChangeFeed RequestKind = "changefeed"
	KindCreate     RequestKind = "create"
	KindReplace    RequestKind = "replace"
	KindReadItem   RequestKind = "readitem"
	KindDelete     RequestKind = "delete"
	KindToken      RequestKind = "token" // token requests to a TokenIssuer
	KindReadFeed   RequestKind = "readfeed"
	KindOther      RequestKind = "other"
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

// classify needs the path's segments (splitPath of r.URL.Path).
func classify(r *http.Request, segs []string) RequestKind {
	n := len(segs)
	switch {
	case n == 0:
		return KindAccount
	case n == 2 && segs[0] == "dbs":
		return KindDatabase
	case n == 4 && segs[2] == "colls":
		return KindContainer
	case n == 5 && segs[4] == "pkranges":
		return KindPKRanges
	case n == 5 && segs[4] == "docs":
		switch r.Method {
		case http.MethodPost:
			if isQuery(r) {
				return KindQuery
			}
			return KindCreate
		case http.MethodGet:
			if strings.EqualFold(headerValue(r.Header, hdrAIM), "Incremental feed") {
				return KindChangeFeed
			}
			return KindReadFeed
		}
	case n == 6 && segs[4] == "docs":
		switch r.Method {
		case http.MethodGet:
			return KindReadItem
		case http.MethodPut:
			return KindReplace
		case http.MethodDelete:
			return KindDelete
		}
	}
	return KindOther
}

func isQuery(r *http.Request) bool {
	ct := strings.ToLower(headerValue(r.Header, "Content-Type"))
	return strings.EqualFold(headerValue(r.Header, hdrIsQuery), "true") || strings.HasPrefix(ct, "application/query+json")
}

// redactAuthorization redacts the Authorization header of a request in
// place, keeping only the type and version so that neither keys' signatures
// nor tokens end up in logs or test output, and returns the original value
// (as Header.Get would) for the authorization check. The request log keeps
// the request's own header map instead of a copy: net/http hands every
// request a fresh map and never writes to it once the handler runs, and the
// handlers only read it, so the log sees exactly what a copy would hold.
func redactAuthorization(h http.Header) string {
	v := h["Authorization"]
	if len(v) == 0 || v[0] == "" {
		return ""
	}
	raw := v[0]
	// Replace the value slice rather than write into it: a client may share
	// one slice across requests (this project's does), and an in-process
	// transport would hand the server that very slice.
	h["Authorization"] = []string{redactedAuthorization(raw)} // as Header.Set
	return raw
}

// lastRedacted memoises redactedAuthorization for the last value seen: a
// client's concurrent requests carry the same Authorization value for a
// whole second (the date is signed at one-second resolution).
var lastRedacted struct {
	sync.Mutex
	in, out string
}

func redactedAuthorization(a string) string {
	lastRedacted.Lock()
	defer lastRedacted.Unlock()
	if a != lastRedacted.in || lastRedacted.out == "" {
		typ := "unknown"
		if dec, err := url.QueryUnescape(a); err == nil {
			if vals, err := url.ParseQuery(dec); err == nil && vals.Get("type") != "" {
				typ = vals.Get("type")
			}
		}
		lastRedacted.in, lastRedacted.out = a, "type="+url.QueryEscape(typ)+"&ver=1.0&sig=REDACTED"
	}
	return lastRedacted.out
}

func (s *Server) record(rec Request, status int) {
	rec.Status = status
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := s.cfg.requestLog; limit > 0 && s.requests.n >= 2*limit {
		// Drop the older half in one copy: amortised O(1) per request.
		s.requests.keepLast(limit)
	}
	s.requests.add(rec)
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
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests.appendTo(make([]Request, 0, s.requests.n))
}

// Count is the number of logged requests of a kind ("" counts all).
func (s *Server) Count(kind RequestKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == "" {
		return s.requests.n
	}
	n := 0
	for _, c := range s.requests.chunks {
		for _, r := range c {
			if r.Kind == kind {
				n++
			}
		}
	}
	return n
}

// ResetRequests empties the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = requestLog{}
}

// Package fault holds what the test servers of cosmostest share for injected
// failures: a list of faults spent after a number of hits, and the dropped
// connection.
package fault

import (
	"net/http"
	"sync"
)

// List is an ordered set of injected faults of type F. All methods are safe
// for concurrent use.
type List[F any] struct {
	mu      sync.Mutex
	entries []*entry[F]
}

type entry[F any] struct {
	fault     F
	times     int // hits before it is spent; 0 = never spent
	remaining int
}

// Add appends f, spent after times hits (0 = never). The returned function
// removes it (idempotent).
func (l *List[F]) Add(f F, times int) (remove func()) {
	e := &entry[F]{fault: f, times: times, remaining: times}
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.removeLocked(e)
	}
}

// Take returns the first fault (in injection order) that matches and counts
// it down.
func (l *List[F]) Take(matches func(F) bool) (F, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if !matches(e.fault) {
			continue
		}
		if e.times > 0 {
			e.remaining--
			if e.remaining <= 0 {
				l.removeLocked(e)
			}
		}
		return e.fault, true
	}
	var zero F
	return zero, false
}

func (l *List[F]) removeLocked(e *entry[F]) {
	for i, x := range l.entries {
		if x == e {
			l.entries = append(l.entries[:i], l.entries[i+1:]...)
			return
		}
	}
}

// DropConnection closes the request's connection without an answer.
// Returning from a handler instead would send an empty 200.
func DropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

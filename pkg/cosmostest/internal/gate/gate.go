// Package gate admits a test server's handlers until the server closes,
// lets Close wait for the handlers admitted, and ends their waits on
// injected latency when it closes. httptest.Server's Close waits for
// connections, but neither for handlers that hijacked theirs (a
// dropped-connection fault) nor does it wake a handler that is sleeping.
package gate

import (
	"context"
	"sync"
	"time"
)

// Gate is open until Close. The zero value is not usable; call New.
type Gate struct {
	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	inside  sync.WaitGroup
}

// New returns an open gate.
func New() *Gate { return &Gate{closing: make(chan struct{})} }

// Enter admits a handler while the gate is open; an admitted handler calls
// Leave when it returns.
func (g *Gate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inside.Add(1) // only while open, so Wait never races an Add
	return true
}

// Leave marks an admitted handler as returned.
func (g *Gate) Leave() { g.inside.Done() }

// Close admits no more handlers and wakes those in Sleep (idempotent).
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		close(g.closing)
	}
}

// Wait waits for every admitted handler to leave.
func (g *Gate) Wait() { g.inside.Wait() }

// Sleep waits d and reports true, or false as soon as ctx ends or the gate
// closes.
func (g *Gate) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-g.closing:
		return false
	}
}

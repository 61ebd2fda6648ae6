package cosmostest

import (
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/gate"
)

// Handler is the http.Handler that serves an Account's REST API (serve.go):
// it authorizes requests, injects faults and latency, keeps the request log
// and translates requests into calls on the Account and its answers into
// replies. A Server holds one in its Handler field; all methods are safe for
// concurrent use.
type Handler struct {
	acct     *Account
	cfg      config
	keyBytes []byte
	endpoint string // URL GET / lists as the account's only location

	gate     *gate.Gate
	inFlight handlerCount // running handlers, for tests

	faults   fault.List[Fault]
	lastAuth acceptedAuth  // guarded by its own lock
	redacted redactionMemo // guarded by its own lock

	mu       sync.Mutex // guards latency and requests
	latency  time.Duration
	requests requestLog
}

func newHandler(acct *Account, cfg config, keyBytes []byte) *Handler {
	return &Handler{acct: acct, cfg: cfg, keyBytes: keyBytes, gate: gate.New()}
}

// SetLatency adds d before every answer. A waiting request gives up when its
// client goes away or the server closes.
func (h *Handler) SetLatency(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latency = d
}

// handlerCount counts running handlers. (A mutex rather than sync/atomic:
// KEDA's linters ask for go.uber.org/atomic, which this module does not need.)
type handlerCount struct {
	mu sync.Mutex
	n  int
}

func (c *handlerCount) Add(delta int) {
	c.mu.Lock()
	c.n += delta
	c.mu.Unlock()
}

func (c *handlerCount) Load() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

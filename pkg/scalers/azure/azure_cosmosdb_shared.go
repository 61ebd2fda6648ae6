package azure

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// One KEDA operator polls every ScaledObject of the cluster. What its
// azure-cosmosdb scalers share, process-wide: a bound on the requests in
// flight to each account, and one token credential per identity.

// cosmosDBAccountRequests bounds the requests in flight to one account from
// all the scalers of the process together. Each poll reads up to
// cosmosDBReadConcurrency leases at once; without a shared bound the account
// sees leases x polls in flight, one connection each (KEDA's shared
// transport has no per-host limit). 128 was chosen by measuring p99 poll
// latency at 100 and 500 ScaledObjects of 100 leases with 64, 128 and 256.
const cosmosDBAccountRequests = 128

// cosmosDBShared is a process-wide map whose entries live while someone
// holds them: acquire adds a holder (building the value for the first),
// and the entry is dropped when its last holder releases it.
type cosmosDBShared[K comparable, V any] struct {
	mu      sync.Mutex
	entries map[K]*cosmosDBSharedEntry[K, V]
}

type cosmosDBSharedEntry[K comparable, V any] struct {
	key     K
	value   V
	holders int
}

// acquire returns key's value, built by build if no one holds it, and the
// function that releases it (safe to call more than once).
func (s *cosmosDBShared[K, V]) acquire(key K, build func() (V, error)) (V, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		v, err := build()
		if err != nil {
			var zero V
			return zero, nil, err
		}
		if s.entries == nil {
			s.entries = map[K]*cosmosDBSharedEntry[K, V]{}
		}
		e = &cosmosDBSharedEntry[K, V]{key: key, value: v}
		s.entries[key] = e
	}
	e.holders++
	return e.value, (&cosmosDBHold[K, V]{shared: s, entry: e}).release, nil
}

// cosmosDBHold is one holder's hold on an entry.
type cosmosDBHold[K comparable, V any] struct {
	shared   *cosmosDBShared[K, V]
	entry    *cosmosDBSharedEntry[K, V]
	released bool
}

func (h *cosmosDBHold[K, V]) release() {
	s, e := h.shared, h.entry
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if e.holders--; e.holders == 0 && s.entries[e.key] == e {
		delete(s.entries, e.key)
	}
}

// holders is the number of holders of key's entry (0: none), for tests.
func (s *cosmosDBShared[K, V]) holders(key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok {
		return e.holders
	}
	return 0
}

// cosmosDBAccounts holds, per account, the bound on its requests in flight;
// each client of the account holds the entry until it is closed.
var cosmosDBAccounts cosmosDBShared[string, *cosmosDBAccount]

// cosmosDBAccountKey is the account an endpoint names, as the bound counts
// it: scheme, host in lower case without a trailing dot, and port (the
// scheme's default when none is given). The endpoint is the ScaledObject author's: two
// triggers naming one account share its bound, whoever wrote them, so a
// ScaledObject with many leases slows the polls of the others of its
// account (never those of another account).
func cosmosDBAccountKey(endpoint *url.URL) string {
	scheme, port := strings.ToLower(endpoint.Scheme), endpoint.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(cosmosDBHost(endpoint), port)
}

// cosmosDBAccount admits one account's requests, from every scaler of the
// process, the earliest poll's first: at most limit in flight, and none
// while the account has asked to wait. (Served in the order they ask, a
// busy account's polls would share it request by request and all finish
// late together; served by poll, they finish one after another.) limit starts at cosmosDBAccountRequests;
// a throttled answer (429) halves it, once per wait the account asks for;
// a second after the last 429 (an account's throughput is provisioned per
// second), each limit answers that are not 429s add one back. So a burst
// of polls against a throttled account sends about what the account
// admits, rather than every request retrying at once.
type cosmosDBAccount struct {
	mu           sync.Mutex
	limit        int
	inFlight     int
	answered     int              // answers since limit last grew
	waiting      []cosmosDBWaiter // by poll start, then arrival
	pausedUntil  time.Time        // the account's x-ms-retry-after-ms
	lastThrottle time.Time
	resume       *time.Timer // admits the waiting when the pause ends
}

// cosmosDBThrottleHold is how long after a 429 the limit does not grow.
const cosmosDBThrottleHold = time.Second

// cosmosDBWaiter is a request waiting for a place: admitted is closed when
// it is handed one.
type cosmosDBWaiter struct {
	pollStarted time.Time
	admitted    chan struct{}
}

func newCosmosDBAccount() *cosmosDBAccount {
	return &cosmosDBAccount{limit: cosmosDBAccountRequests}
}

// acquire waits for a place for one request of the poll that started at
// pollStarted; the wait ends with ctx.
func (a *cosmosDBAccount) acquire(ctx context.Context, pollStarted time.Time) error {
	a.mu.Lock()
	if len(a.waiting) == 0 && a.inFlight < a.limit && !time.Now().Before(a.pausedUntil) {
		a.inFlight++
		a.mu.Unlock()
		return nil
	}
	admitted := make(chan struct{})
	after, _ := slices.BinarySearchFunc(a.waiting, pollStarted, func(w cosmosDBWaiter, t time.Time) int {
		return cmp.Or(w.pollStarted.Compare(t), -1) // after those of the same poll
	})
	a.waiting = slices.Insert(a.waiting, after, cosmosDBWaiter{pollStarted, admitted})
	a.mu.Unlock()
	select {
	case <-admitted:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	i := slices.IndexFunc(a.waiting, func(w cosmosDBWaiter) bool { return w.admitted == admitted })
	if i >= 0 {
		a.waiting = slices.Delete(a.waiting, i, i+1)
	}
	a.mu.Unlock()
	if i < 0 { // admitted meanwhile: pass the place on
		a.release(0)
	}
	return fmt.Errorf("waiting for one of the account's %d requests in flight: %w", cosmosDBAccountRequests, context.Cause(ctx))
}

// release gives a request's place back; throttled is the wait a 429 asked
// for (0 for any other answer, or none).
func (a *cosmosDBAccount) release(throttled time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	now := time.Now()
	switch {
	case throttled > 0:
		if !now.Before(a.pausedUntil) { // the first 429 since the last wait
			a.limit = max(1, a.limit/2)
			a.answered = 0
		}
		if until := now.Add(throttled); until.After(a.pausedUntil) {
			a.pausedUntil = until
		}
		a.lastThrottle = now
	case a.limit < cosmosDBAccountRequests && now.Sub(a.lastThrottle) >= cosmosDBThrottleHold:
		if a.answered++; a.answered >= a.limit {
			a.limit++
			a.answered = 0
		}
	}
	a.admit(now)
}

// admit hands places to the waiting, earliest poll first; while the
// account pauses, a timer does it when the pause ends. a.mu is held.
func (a *cosmosDBAccount) admit(now time.Time) {
	if now.Before(a.pausedUntil) {
		if a.resume == nil {
			a.resume = time.AfterFunc(a.pausedUntil.Sub(now), func() {
				a.mu.Lock()
				defer a.mu.Unlock()
				a.resume = nil
				a.admit(time.Now())
			})
		}
		return
	}
	for len(a.waiting) > 0 && a.inFlight < a.limit {
		close(a.waiting[0].admitted)
		a.waiting = slices.Delete(a.waiting, 0, 1)
		a.inFlight++
	}
}

// cosmosDBPollStarted is the context key of the start of the poll a
// request belongs to (a time.Time), by which its account admits it.
type cosmosDBPollStarted struct{}

// cosmosDBSlot is one request's place at its account. Its owner takes it
// and gives it back: send, or a poll that takes it before handing a lease
// to a reader, which gives it back once it has read.
type cosmosDBSlot struct {
	account     *cosmosDBAccount
	pollStarted time.Time
	held        bool
	throttled   time.Duration // the wait the last answer asked for (a 429's)
}

func (s *cosmosDBSlot) acquire(ctx context.Context) error {
	if s.held {
		return nil
	}
	err := s.account.acquire(ctx, s.pollStarted)
	s.held = err == nil
	return err
}

// release gives the place back, if held, with its last answer's wait.
func (s *cosmosDBSlot) release() {
	if s.held {
		s.held = false
		s.account.release(s.throttled)
		s.throttled = 0
	}
}

// cosmosDBCredentials holds, per identity and audience, the token
// credential of the process's scalers: azidentity caches its token and
// renews it before it expires, so the operator asks for one token per
// identity and audience rather than one per scaler. Each keyless
// connection holds the entry until its client is closed.
var cosmosDBCredentials cosmosDBShared[cosmosDBTokenKey, azcore.TokenCredential]

// cosmosDBTokenSource is a token credential to build, and its key.
type cosmosDBTokenSource struct {
	key   cosmosDBTokenKey
	build func() (azcore.TokenCredential, error)
}

// cosmosDBTokenKey is what a token depends on: the identity (a service
// principal's tenant, client id and secret, or the workload identity's
// tenant and client id, empty for the operator's own), the authority, the
// scope, and the transport its requests take. A service principal's secret
// is kept as its SHA-256 only: a trigger with the same client id and
// another secret gets a credential of its own, and the token that secret
// earns (or the error), never the cached one.
type cosmosDBTokenKey struct {
	kind             string // "service principal" or "workload identity"
	tenant, clientID string
	secretHash       [sha256.Size]byte
	authority        string
	private          bool // instance discovery disabled
	scope            string
	transport        cosmosDBTransport
}

// String names the identity without its secret or the secret's hash.
func (k cosmosDBTokenKey) String() string {
	return fmt.Sprintf("%s tenant %q client %q at %q for %q", k.kind, k.tenant, k.clientID, k.authority, k.scope)
}

// cosmosDBPipelines holds, per credential and transport, the pipeline of
// the process's clients. A pipeline keeps nothing of an account but the
// key it signs with, so a scaler's data and lease clients, and the scalers
// of one account key or identity, send through one pipeline.
var cosmosDBPipelines cosmosDBShared[cosmosDBPipelineKey, runtime.Pipeline]

// cosmosDBPipelineKey is what a pipeline depends on: the account key (its
// SHA-256) or the shared token credential and scope, and the transport.
type cosmosDBPipelineKey struct {
	accountKey [sha256.Size]byte
	token      any
	scope      string
	transport  cosmosDBTransport
}

// cosmosDBTransport identifies where a client or credential sends its
// requests. KEDA gives each scaler an http.Client of its own over the
// process's shared round tripper: clients with the same round tripper and
// timeout are one.
type cosmosDBTransport struct {
	sender  any // the http.Client's round tripper, or the transporter
	timeout time.Duration
}

func cosmosDBTransportKey(transport policy.Transporter) cosmosDBTransport {
	if c, ok := transport.(*http.Client); ok {
		return cosmosDBTransport{sender: cosmosDBComparable(c.Transport), timeout: c.Timeout}
	}
	return cosmosDBTransport{sender: cosmosDBComparable(transport)}
}

// cosmosDBComparable is v as a map key, or, if v cannot be compared, a key
// no other value has (so it shares nothing).
func cosmosDBComparable(v any) any {
	if v != nil && !reflect.ValueOf(v).Comparable() {
		return new(byte)
	}
	return v
}

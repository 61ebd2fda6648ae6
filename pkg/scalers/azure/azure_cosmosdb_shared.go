package azure

import (
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
// azure-cosmosdb scalers share, in one process-wide registry: per monitored
// container, a bound on the requests in flight to it; per identity, one
// token credential; per account key or credential, one pipeline. An entry
// lives while a scaler holds it.

// cosmosDBRegistry is the process's one registry of shared entries: acquire
// adds a holder (building the value for the first), and an entry is dropped
// when its last holder releases it. Keys of different types never meet.
type cosmosDBRegistry struct {
	mu      sync.Mutex
	entries map[any]*cosmosDBSharedEntry
}

type cosmosDBSharedEntry struct {
	key     any
	value   any
	holders int
}

var cosmosDBShared cosmosDBRegistry

// cosmosDBSharedKind is the registry's entries of one key and value type.
type cosmosDBSharedKind[K comparable, V any] struct{}

// acquire returns key's value, built by build if no one holds it, and the
// function that releases it (safe to call more than once).
func (cosmosDBSharedKind[K, V]) acquire(key K, build func() (V, error)) (V, func(), error) {
	r := &cosmosDBShared
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		v, err := build()
		if err != nil {
			var zero V
			return zero, nil, err
		}
		if r.entries == nil {
			r.entries = map[any]*cosmosDBSharedEntry{}
		}
		e = &cosmosDBSharedEntry{key: key, value: v}
		r.entries[key] = e
	}
	e.holders++
	return e.value.(V), (&cosmosDBHold{entry: e}).release, nil
}

// holders is the number of holders of key's entry (0: none), for tests.
func (cosmosDBSharedKind[K, V]) holders(key K) int {
	r := &cosmosDBShared
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[key]; ok {
		return e.holders
	}
	return 0
}

// cosmosDBHold is one holder's hold on an entry.
type cosmosDBHold struct {
	entry    *cosmosDBSharedEntry
	released bool
}

func (h *cosmosDBHold) release() {
	r, e := &cosmosDBShared, h.entry
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if e.holders--; e.holders == 0 && r.entries[e.key] == e {
		delete(r.entries, e.key)
	}
}

// cosmosDBContainerRequests bounds the requests in flight to one monitored
// container from all the scalers of the process together. Without it, an
// operator restart (every scale loop's first poll at once, KEDA's loops
// have no jitter) sends leases x ScaledObjects reads at once, one
// connection each: at 100 x 100 most first polls failed. Chosen by
// measuring fleets of 100 and 500 ScaledObjects.
const cosmosDBContainerRequests = 128

// cosmosDBContainers holds the bound of each monitored container; each
// scaler holds its container's until it is closed.
var cosmosDBContainers cosmosDBSharedKind[cosmosDBContainerKey, *cosmosDBContainer]

// cosmosDBContainerKey names a container of an account: scheme and host
// in lower case without a trailing dot, port, database and container ids.
// Throughput is provisioned per container (or per database), never per
// account: a hot container does not slow another's scalers.
type cosmosDBContainerKey struct {
	account             string
	database, container string
}

func newCosmosDBContainerKey(endpoint *url.URL, database, container string) cosmosDBContainerKey {
	scheme, port := strings.ToLower(endpoint.Scheme), endpoint.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	return cosmosDBContainerKey{account: scheme + "://" + net.JoinHostPort(cosmosDBHost(endpoint), port), database: database, container: container}
}

// cosmosDBContainer admits the requests to one container, in the order
// they ask: at most limit in flight. limit starts at
// cosmosDBContainerRequests; a throttled answer (429) halves it, once for
// the requests sent before the halving. From a second after the last 429
// (throughput is provisioned per second) every other answer adds one back,
// so it is whole again a second and at most 127 answers later (a poll or
// two of 100 leases). The wait a 429 asks for is the request's own
// (azcore's retry policy).
type cosmosDBContainer struct {
	mu        sync.Mutex
	limit     int
	inFlight  int
	waiting   []chan struct{} // closed when handed a place
	halved    time.Time       // when limit last halved
	throttled time.Time       // the last 429's answer
}

// cosmosDBThrottleHold is how long after a 429 the limit does not grow.
const cosmosDBThrottleHold = time.Second

func newCosmosDBContainer() (*cosmosDBContainer, error) {
	return &cosmosDBContainer{limit: cosmosDBContainerRequests}, nil
}

// acquire waits for a place for one request, after the requests waiting
// before it, or before them all if again (a request that gave its place
// back when throttled); the wait ends with ctx.
func (c *cosmosDBContainer) acquire(ctx context.Context, again bool) error {
	c.mu.Lock()
	if (len(c.waiting) == 0 || again) && c.inFlight < c.limit {
		c.inFlight++
		c.mu.Unlock()
		return nil
	}
	admitted := make(chan struct{})
	if again {
		c.waiting = slices.Insert(c.waiting, 0, admitted)
	} else {
		c.waiting = append(c.waiting, admitted)
	}
	c.mu.Unlock()
	select {
	case <-admitted:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	i := slices.Index(c.waiting, admitted)
	if i >= 0 {
		c.waiting = slices.Delete(c.waiting, i, i+1)
	}
	c.mu.Unlock()
	if i < 0 { // admitted meanwhile: pass the place on
		c.release()
	}
	return fmt.Errorf("waiting for one of the container's %d requests in flight: %w", cosmosDBContainerRequests, context.Cause(ctx))
}

// release gives a place back.
func (c *cosmosDBContainer) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	c.admit()
}

// answered counts one try's answer, sent at sent.
func (c *cosmosDBContainer) answered(sent time.Time, throttled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	switch {
	case throttled:
		c.throttled = now
		if sent.After(c.halved) {
			c.limit = max(1, c.limit/2)
			c.halved = now
		}
	case c.limit < cosmosDBContainerRequests && now.Sub(c.throttled) >= cosmosDBThrottleHold:
		c.limit++
		c.admit()
	}
}

// admit hands places to the waiting, first come first served. c.mu is held.
func (c *cosmosDBContainer) admit() {
	for len(c.waiting) > 0 && c.inFlight < c.limit {
		close(c.waiting[0])
		c.waiting = slices.Delete(c.waiting, 0, 1)
		c.inFlight++
	}
}

// cosmosDBPlace is one request's place at its container, taken by its
// owner (send, or a poll for the read it hands to a reader), who gives it
// back. A throttled try gives it back at once, and the next try takes one
// again before the others waiting: the requests in flight follow the
// container's limit while azcore waits what each 429 asks for.
type cosmosDBPlace struct {
	container *cosmosDBContainer
	held      bool
	quiet     bool // a request to another container (a lease query): counted, its 429s are not this container's
}

// take waits for a place, unless one is held.
func (p *cosmosDBPlace) take(ctx context.Context, again bool) error {
	if p.held {
		return nil
	}
	err := p.container.acquire(ctx, again)
	p.held = err == nil
	return err
}

// give gives the place back, if held.
func (p *cosmosDBPlace) give() {
	if p.held {
		p.held = false
		p.container.release()
	}
}

// cosmosDBPlaceKey is the context key of a request's *cosmosDBPlace.
type cosmosDBPlaceKey struct{}

// cosmosDBThrottlePolicy runs each try of a request to a bounded container
// in its place, and tells the container about each try's answer; it runs
// within azcore's retries, so a request's retries are one pipeline call.
type cosmosDBThrottlePolicy struct{}

func (cosmosDBThrottlePolicy) Do(req *policy.Request) (*http.Response, error) {
	p, _ := req.Raw().Context().Value(cosmosDBPlaceKey{}).(*cosmosDBPlace)
	if p == nil {
		return req.Next()
	}
	if err := p.take(req.Raw().Context(), true); err != nil {
		return nil, err
	}
	sent := time.Now()
	resp, err := req.Next()
	if err == nil {
		throttled := resp.StatusCode == http.StatusTooManyRequests
		if !p.quiet {
			p.container.answered(sent, throttled)
		}
		if throttled {
			p.give()
		}
	}
	return resp, err
}

// cosmosDBCredentials holds, per identity and audience, the token
// credential of the process's scalers: azidentity caches its token and
// renews it before it expires, so the operator asks for one token per
// identity and audience rather than one per scaler. Each keyless
// connection holds the entry until its client is closed.
var cosmosDBCredentials cosmosDBSharedKind[cosmosDBTokenKey, azcore.TokenCredential]

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

// cosmosDBPipelines holds, per credential and transport, the pipeline of
// the process's clients. A pipeline keeps nothing of an account but the
// key it signs with, so a scaler's data and lease clients, and the scalers
// of one account key or identity, send through one pipeline.
var cosmosDBPipelines cosmosDBSharedKind[cosmosDBPipelineKey, runtime.Pipeline]

// cosmosDBPipelineKey is what a pipeline depends on: the account key (its
// SHA-256) or the shared token credential and scope, and the transport.
type cosmosDBPipelineKey struct {
	accountKey [sha256.Size]byte
	token      any
	scope      string
	transport  cosmosDBTransport
}

package azure

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
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
	entries map[K]*cosmosDBSharedEntry[V]
}

type cosmosDBSharedEntry[V any] struct {
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
			s.entries = map[K]*cosmosDBSharedEntry[V]{}
		}
		e = &cosmosDBSharedEntry[V]{value: v}
		s.entries[key] = e
	}
	e.holders++
	release := sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.holders--; e.holders == 0 && s.entries[key] == e {
			delete(s.entries, key)
		}
	})
	return e.value, release, nil
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

// cosmosDBAccountSlots holds, per account, the slots of its requests in
// flight; each client of the account holds the entry until it is closed.
var cosmosDBAccountSlots cosmosDBShared[string, chan struct{}]

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

// cosmosDBAccountLimitPolicy holds one of the account's slots for each
// request, its retries included. It runs before azcore's retry policy, so
// the wait is not part of a try: the per-try timeout (KEDA's HTTP timeout)
// counts only the time at the account, and a wait never causes a retry.
// The wait ends with the request's context; a request that gets no slot
// fails, so does its poll.
type cosmosDBAccountLimitPolicy struct {
	slots chan struct{}
}

func (p cosmosDBAccountLimitPolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of the account's %d requests in flight: %w", cap(p.slots), context.Cause(ctx))
	}
	defer func() { <-p.slots }()
	return req.Next() // cosmosDBBodyPolicy has read the body when it returns
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
	transport        any
}

// String names the identity without its secret or the secret's hash.
func (k cosmosDBTokenKey) String() string {
	return fmt.Sprintf("%s tenant %q client %q at %q for %q", k.kind, k.tenant, k.clientID, k.authority, k.scope)
}

// cosmosDBTransportKey identifies where a credential sends its token
// requests. KEDA gives each scaler an http.Client of its own over the
// process's shared round tripper: clients with the same round tripper and
// timeout are one. A transport that cannot be compared shares nothing.
func cosmosDBTransportKey(transport policy.Transporter) any {
	var key any = transport
	if c, ok := transport.(*http.Client); ok {
		key = [2]any{c.Transport, c.Timeout}
	}
	if key == nil || !reflect.ValueOf(key).Comparable() {
		return new(byte) // a key no other scaler has
	}
	return key
}

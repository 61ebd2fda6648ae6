// Package entraidtest is a minimal Microsoft Entra ID authority for tests:
// an HTTPS OAuth2 service, with its own throw-away CA, that azidentity (MSAL)
// accepts for client-secret and workload-identity (client assertion)
// credentials. Its Verifier plugs into cosmostest.WithTokenVerifier.
//
// MSAL sends instance discovery for a non-Microsoft authority host to
// login.microsoftonline.com; package connectproxy serves the issuer under
// that name (and any other) for tests that need it. Without the proxy, use
// an authority that skips instance discovery (azidentity's
// DisableInstanceDiscovery, or KEDA's cloud: Private).
package entraidtest

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/gate"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/testcert"
)

// Issuer is the authority. It serves
//
//	GET  /common/discovery/instance                    (instance discovery)
//	GET  /{tenant}/v2.0/.well-known/openid-configuration
//	POST /{tenant}/oauth2/v2.0/token                   (client_credentials)
//
// and records the scope of every token request. Tokens are HMAC-signed
// JWT-shaped strings that only this issuer's Verifier accepts. All methods
// are safe for concurrent use.
type Issuer struct {
	ca     *testcert.CA
	secret []byte // signs access tokens
	http   *httptest.Server
	url    string
	gate   *gate.Gate
	faults fault.List[tokenFault]

	mu     sync.Mutex
	grants []TokenGrant
	log    []string // "METHOD host/path" of every request, for tests
}

// TokenGrant is one answered token request. No secret or assertion is kept.
// Scope is the requested resource scope without the OpenID Connect scopes.
type TokenGrant struct {
	Host       string // authority host the request was sent to
	Tenant     string
	ClientID   string
	Scope      string
	Credential string // "secret" or "assertion"
}

// tokenFault makes token requests fail.
type tokenFault struct {
	Status         int           // answered with an OAuth2 error body, e.g. 503
	RetryAfter     time.Duration // sent as Retry-After (whole seconds)
	Times          int           // requests it hits; 0 = always
	Latency        time.Duration // waited before answering; honours the request context
	MalformedBody  bool          // 200 with a truncated JSON body
	DropConnection bool          // close the connection without answering
}

// New starts an issuer on 127.0.0.1 (HTTPS).
func New() (*Issuer, error) {
	ca, err := testcert.NewCA()
	if err != nil {
		return nil, fmt.Errorf("entraidtest: CA: %w", err)
	}
	loopback, err := ca.Leaf("")
	if err != nil {
		return nil, fmt.Errorf("entraidtest: certificate: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("entraidtest: listen: %w", err)
	}
	t := &Issuer{ca: ca, gate: gate.New(), secret: make([]byte, 32)}
	_, _ = rand.Read(t.secret)
	t.http = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: t, ReadHeaderTimeout: time.Minute},
		// The loopback certificate for clients that send no server name (an
		// IP address), one per name for the others.
		TLS: &tls.Config{
			Certificates:   []tls.Certificate{*loopback},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.Leaf(hello.ServerName) },
			NextProtos:     []string{"http/1.1"},
		},
	}
	t.http.StartTLS()
	t.url = t.http.URL + "/"
	return t, nil
}

// URL is the authority host, e.g. "https://127.0.0.1:4321/"; use it as
// azcore/cloud.Configuration.ActiveDirectoryAuthorityHost or AZURE_AUTHORITY_HOST.
func (t *Issuer) URL() string { return t.url }

// CAPEM is the issuer's CA certificate in PEM form, for SSL_CERT_FILE.
func (t *Issuer) CAPEM() []byte { return t.ca.PEM() }

// Certificate returns a certificate for host signed by the issuer's CA, for
// serving the issuer under another name (connectproxy).
func (t *Issuer) Certificate(host string) (*tls.Certificate, error) { return t.ca.Leaf(host) }

// scopes returns the resource scope of every answered token request, in order.
func (t *Issuer) scopes() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.grants))
	for i, g := range t.grants {
		out[i] = g.Scope
	}
	return out
}

// TokenRequests is the number of token requests answered with a token.
func (t *Issuer) TokenRequests() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.grants)
}

// Grants returns the answered token requests.
func (t *Issuer) Grants() []TokenGrant {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TokenGrant{}, t.grants...)
}

// injectFault makes token requests fail; the returned function removes the
// fault (idempotent). The first fault (in injection order) applies.
func (t *Issuer) injectFault(f tokenFault) (remove func()) { return t.faults.Add(f, f.Times) }

// Verifier returns a token check for cosmostest.WithTokenVerifier: the token
// must come from this issuer, be unexpired and, unless requiredScope is "",
// have been issued for exactly that scope (e.g.
// "https://cosmos.azure.com/.default").
func (t *Issuer) Verifier(requiredScope string) func(token string) error {
	return func(token string) error {
		claims, err := t.parseToken(token)
		if err != nil {
			return err
		}
		if time.Now().Unix() >= claims.Exp {
			return errors.New("token expired")
		}
		if requiredScope != "" && claims.Scope != requiredScope {
			return fmt.Errorf("token was issued for scope %q, not %q", claims.Scope, requiredScope)
		}
		return nil
	}
}

// Close stops the issuer and waits for its handlers, also those serving
// through a proxy.
func (t *Issuer) Close() {
	t.gate.Close()
	t.http.Close()
	t.gate.Wait()
}

// ServeHTTP serves one request to the authority, under whatever host name
// it was sent to.
func (t *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !t.gate.Enter() { // the issuer is closing
		fault.DropConnection(w)
		return
	}
	defer t.gate.Leave()
	t.mu.Lock()
	t.log = append(t.log, r.Method+" "+r.Host+r.URL.Path)
	t.mu.Unlock()
	segs := pathSegments(r.URL.Path)
	switch {
	case r.Method == http.MethodGet && len(segs) == 3 && segs[0] == "common" && segs[1] == "discovery" && segs[2] == "instance":
		t.instanceDiscovery(w, r)
	case r.Method == http.MethodGet && len(segs) == 4 && segs[1] == "v2.0" && segs[2] == ".well-known" && segs[3] == "openid-configuration":
		t.openIDConfiguration(w, r, segs[0])
	case r.Method == http.MethodPost && len(segs) == 4 && segs[1] == "oauth2" && segs[2] == "v2.0" && segs[3] == "token":
		t.token(w, r, segs[0])
	default:
		oauthError(w, http.StatusNotFound, "not_found", "no such endpoint on the test token issuer: "+r.Method+" "+r.URL.Path)
	}
}

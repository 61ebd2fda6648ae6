package cosmostest

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TokenIssuer is a minimal Microsoft Entra ID authority for tests: an HTTPS
// OAuth2 service, with its own throw-away CA, that azidentity (MSAL) accepts
// for client-secret and workload-identity (client assertion) credentials. It
// serves
//
//	GET  /common/discovery/instance                    (instance discovery)
//	GET  /{tenant}/v2.0/.well-known/openid-configuration
//	POST /{tenant}/oauth2/v2.0/token                   (client_credentials)
//
// and records the scope of every token request. Tokens are HMAC-signed
// JWT-shaped strings that only this issuer's Verifier accepts.
//
// MSAL sends instance discovery for a non-Microsoft authority host to
// login.microsoftonline.com. ProxyURL is an HTTP CONNECT proxy that
// terminates TLS for any host name with certificates from the issuer's CA
// and answers with the issuer itself, so that call — and the public-cloud
// authority as a whole — can be served locally. Client uses it; processes
// that rely on the environment can set HTTPS_PROXY to ProxyURL and
// SSL_CERT_FILE to a file holding CAPEM, both before their first TLS
// connection (Go reads them once). Loopback addresses are never proxied.
type TokenIssuer struct {
	ca       *testCA
	secret   []byte // signs access tokens
	closing  chan struct{}
	handlers sync.WaitGroup

	direct      *http.Server
	directLn    net.Listener
	proxy       *http.Server
	proxyLn     net.Listener
	serveDone   sync.WaitGroup
	client      *http.Client
	closeOnce   sync.Once
	url, proxyU string

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]bool
	grants  []TokenGrant
	faults  []*activeFault
	log     []string // "METHOD host/path" of every issuer request, for tests
}

// TokenGrant is one answered token request. No secret or assertion is kept.
// Scope is the requested resource scope without the OpenID Connect scopes.
type TokenGrant struct {
	Host       string // authority host the request was sent to
	Tenant     string
	ClientID   string
	Scope      string
	Credential string // "secret" or "assertion"
	At         time.Time
}

// NewTokenIssuer starts an issuer on 127.0.0.1 (HTTPS) with a proxy beside it.
func NewTokenIssuer() *TokenIssuer {
	ca, err := newTestCA()
	if err != nil {
		panic(fmt.Sprintf("cosmostest: token issuer CA: %v", err))
	}
	t := &TokenIssuer{ca: ca, closing: make(chan struct{}), tunnels: map[net.Conn]bool{}}
	t.secret = make([]byte, 32)
	_, _ = rand.Read(t.secret)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("cosmostest: token issuer listen: %v", err))
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = ln.Close()
		panic(fmt.Sprintf("cosmostest: token issuer proxy listen: %v", err))
	}
	t.directLn = tls.NewListener(ln, t.tlsConfig())
	t.proxyLn = pln
	t.url = "https://" + ln.Addr().String() + "/"
	t.proxyU = "http://" + pln.Addr().String()
	t.direct = &http.Server{Handler: http.HandlerFunc(t.serveHTTP), ReadHeaderTimeout: time.Minute}
	t.proxy = &http.Server{Handler: http.HandlerFunc(t.serveConnect), ReadHeaderTimeout: time.Minute}
	proxyURL, _ := url.Parse(t.proxyU)
	t.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.pool},
		Proxy: func(r *http.Request) (*url.URL, error) {
			if isLoopback(r.URL.Hostname()) {
				return nil, nil
			}
			return proxyURL, nil
		},
	}}
	t.serveDone.Add(2)
	go func() { defer t.serveDone.Done(); _ = t.direct.Serve(t.directLn) }()
	go func() { defer t.serveDone.Done(); _ = t.proxy.Serve(t.proxyLn) }()
	return t
}

func (t *TokenIssuer) tlsConfig() *tls.Config {
	return &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return t.ca.leaf(hello.ServerName)
		},
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the authority host, e.g. "https://127.0.0.1:4321/"; use it as
// azcore/cloud.Configuration.ActiveDirectoryAuthorityHost or AZURE_AUTHORITY_HOST.
func (t *TokenIssuer) URL() string { return t.url }

// ProxyURL is the CONNECT proxy ("http://127.0.0.1:port") that serves the
// issuer under any host name, e.g. login.microsoftonline.com.
func (t *TokenIssuer) ProxyURL() string { return t.proxyU }

// CAPEM is the issuer's CA certificate in PEM form, for SSL_CERT_FILE.
func (t *TokenIssuer) CAPEM() []byte { return append([]byte{}, t.ca.pem...) }

// CertPool trusts the issuer's CA.
func (t *TokenIssuer) CertPool() *x509.CertPool { return t.ca.pool }

// Client trusts the CA and sends non-loopback hosts through ProxyURL; pass it
// as azcore.ClientOptions.Transport.
func (t *TokenIssuer) Client() *http.Client { return t.client }

// Scopes returns the resource scope of every answered token request, in order.
func (t *TokenIssuer) Scopes() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.grants))
	for i, g := range t.grants {
		out[i] = g.Scope
	}
	return out
}

// TokenRequests is the number of token requests answered with a token.
func (t *TokenIssuer) TokenRequests() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.grants)
}

// Grants returns the answered token requests.
func (t *TokenIssuer) Grants() []TokenGrant {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TokenGrant{}, t.grants...)
}

// InjectFault makes token requests fail; only Kind "" or KindToken match,
// RangeID is ignored. Status, Latency, Times, MalformedBody and
// DropConnection behave as on Server.
func (t *TokenIssuer) InjectFault(f Fault) (remove func()) {
	af := &activeFault{Fault: f, remaining: f.Times}
	t.mu.Lock()
	t.faults = append(t.faults, af)
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		af.removed = true
		for i, x := range t.faults {
			if x == af {
				t.faults = append(t.faults[:i], t.faults[i+1:]...)
				return
			}
		}
	}
}

// Verifier returns a token check for WithTokenVerifier: the token must come
// from this issuer, be unexpired and, unless requiredScope is "", have been
// issued for exactly that scope (e.g. "https://cosmos.azure.com/.default").
func (t *TokenIssuer) Verifier(requiredScope string) func(token string) error {
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

// Close stops the issuer and its proxy and waits for their goroutines.
func (t *TokenIssuer) Close() {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		for c := range t.tunnels {
			_ = c.Close()
		}
		t.mu.Unlock()
		close(t.closing)
		_ = t.direct.Close()
		_ = t.proxy.Close()
		t.serveDone.Wait()
		t.handlers.Wait()
		t.client.CloseIdleConnections()
	})
}

func (t *TokenIssuer) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.handlers.Add(1)
	return true
}

// serveConnect answers CONNECT by terminating TLS for the requested host
// and serving the issuer over the tunnel.
func (t *TokenIssuer) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "this proxy only supports CONNECT", http.StatusMethodNotAllowed)
		return
	}
	if !t.enter() {
		return
	}
	defer t.handlers.Done()
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	t.mu.Lock()
	if t.closed { // Close already swept the tunnels; don't outlive it
		t.mu.Unlock()
		_ = conn.Close()
		return
	}
	t.tunnels[conn] = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.tunnels, conn)
		t.mu.Unlock()
		_ = conn.Close()
	}()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	host := r.URL.Hostname()
	cfg := t.tlsConfig()
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if hello.ServerName != "" {
			return t.ca.leaf(hello.ServerName)
		}
		return t.ca.leaf(host)
	}
	tlsConn := tls.Server(conn, cfg)
	br := bufio.NewReader(tlsConn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		rw := &bufferedResponse{header: http.Header{}}
		t.handle(rw, req)
		_ = req.Body.Close()
		if rw.hijacked {
			return
		}
		if err := rw.writeTo(tlsConn, req); err != nil {
			return
		}
	}
}

func (t *TokenIssuer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !t.enter() {
		dropConnection(w)
		return
	}
	defer t.handlers.Done()
	t.handle(w, r)
}

// handle serves one issuer request; w may be a tunnelled bufferedResponse.
func (t *TokenIssuer) handle(w http.ResponseWriter, r *http.Request) {
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": description, "error_codes": []int{}})
}

// instanceDiscovery points MSAL at the openid configuration of the
// authority it asked about (authorization_endpoint) and lists that host as
// its only alias.
func (t *TokenIssuer) instanceDiscovery(w http.ResponseWriter, r *http.Request) {
	authz, err := url.Parse(r.URL.Query().Get("authorization_endpoint"))
	if err != nil || authz.Host == "" {
		oauthError(w, http.StatusBadRequest, "invalid_instance", "authorization_endpoint is missing or invalid")
		return
	}
	tenant := "common"
	if segs := pathSegments(authz.Path); len(segs) > 0 {
		tenant = segs[0]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tenant_discovery_endpoint": "https://" + authz.Host + "/" + tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata": []any{map[string]any{
			"preferred_network": authz.Host,
			"preferred_cache":   authz.Host,
			"aliases":           []string{authz.Host},
		}},
	})
}

func (t *TokenIssuer) openIDConfiguration(w http.ResponseWriter, r *http.Request, tenant string) {
	base := "https://" + r.Host + "/" + tenant
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"device_authorization_endpoint":         base + "/oauth2/v2.0/devicecode",
		"issuer":                                base + "/v2.0",
		"jwks_uri":                              base + "/discovery/v2.0/keys",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"response_modes_supported":              []string{"query", "fragment", "form_post"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"tenant_region_scope":                   "NA",
		"cloud_instance_name":                   "microsoftonline.com",
	})
}

const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

func (t *TokenIssuer) token(w http.ResponseWriter, r *http.Request, tenant string) {
	t.mu.Lock()
	f, faulted := takeFault(&t.faults, KindToken, "")
	t.mu.Unlock()
	if faulted {
		if !sleepCtx(r.Context(), t.closing, f.Latency) {
			dropConnection(w)
			return
		}
		switch {
		case f.DropConnection:
			dropConnection(w)
			return
		case f.MalformedBody:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"token_type":"Bearer","access_tok`)
			return
		case f.Status != 0:
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
			}
			oauthError(w, f.Status, "temporarily_unavailable", "injected fault")
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	form := r.PostForm
	if form.Get("grant_type") != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	clientID, scope := form.Get("client_id"), resourceScope(form.Get("scope"))
	if clientID == "" || scope == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "client_id and scope are required")
		return
	}
	var credential string
	switch {
	case form.Get("client_secret") != "":
		credential = "secret"
	case form.Get("client_assertion") != "" && form.Get("client_assertion_type") == clientAssertionType:
		credential = "assertion"
	default:
		oauthError(w, http.StatusUnauthorized, "invalid_client", "a client_secret or a jwt-bearer client_assertion is required")
		return
	}
	const lifetime = time.Hour
	now := time.Now()
	token := t.signToken(tokenClaims{
		Issuer:   "https://" + r.Host + "/" + tenant + "/v2.0",
		Audience: strings.TrimSuffix(scope, "/.default"),
		Scope:    scope,
		Tenant:   tenant,
		AppID:    clientID,
		Iat:      now.Unix(),
		Exp:      now.Add(lifetime).Unix(),
	})
	t.mu.Lock()
	t.grants = append(t.grants, TokenGrant{Host: r.Host, Tenant: tenant, ClientID: clientID, Scope: scope, Credential: credential, At: now})
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type":     "Bearer",
		"expires_in":     int(lifetime.Seconds()) - 1,
		"ext_expires_in": int(lifetime.Seconds()) - 1,
		"access_token":   token,
	})
}

// resourceScope drops the OpenID Connect scopes MSAL adds to every request
// ("openid offline_access profile"); like Entra ID, the issuer grants the
// resource scope.
func resourceScope(requested string) string {
	var kept []string
	for _, sc := range strings.Fields(requested) {
		switch sc {
		case "openid", "offline_access", "profile", "email":
		default:
			kept = append(kept, sc)
		}
	}
	return strings.Join(kept, " ")
}

type tokenClaims struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"`
	Scope    string `json:"scp"`
	Tenant   string `json:"tid"`
	AppID    string `json:"appid"`
	Iat      int64  `json:"iat"`
	Exp      int64  `json:"exp"`
}

func (t *TokenIssuer) signToken(c tokenClaims) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "HS256"})
	payload, _ := json.Marshal(c)
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

func (t *TokenIssuer) parseToken(token string) (tokenClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenClaims{}, errors.New("not a token of the test issuer")
	}
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return tokenClaims{}, errors.New("token signature is not valid")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return tokenClaims{}, errors.New("token payload is not valid")
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return tokenClaims{}, errors.New("token payload is not valid")
	}
	return c, nil
}

// bufferedResponse is an http.ResponseWriter for requests read off a proxy
// tunnel; it is written out as one HTTP/1.1 response.
type bufferedResponse struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Hijack lets a dropped-connection fault end the tunnel.
func (b *bufferedResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	b.hijacked = true
	return nopConn{}, nil, nil
}

func (b *bufferedResponse) writeTo(w io.Writer, req *http.Request) error {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	resp := &http.Response{
		StatusCode:    b.status,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        b.header,
		Body:          io.NopCloser(bytes.NewReader(b.body.Bytes())),
		ContentLength: int64(b.body.Len()),
		Request:       req,
	}
	return resp.Write(w)
}

// nopConn is what a tunnelled "hijack" hands out; closing it is a no-op
// because the tunnel loop closes the real connection.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

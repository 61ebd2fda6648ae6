package cosmostest

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Server is one Cosmos DB account served over HTTP or HTTPS by a
// net/http/httptest.Server, the way httptest.Server serves its Config: the
// model is its Account field (CreateDatabase, Container, …), the HTTP handler
// serving it its Handler field (InjectFault, SetLatency, Requests, …); two
// accounts are two servers. All methods are safe for concurrent use.
type Server struct {
	Account *Account // the model: databases, containers, ranges, items
	Handler *Handler // serves Account's REST API: auth, faults, latency, request log

	http      *httptest.Server
	url       string
	certPEM   []byte
	closeOnce sync.Once
}

type config struct {
	address        string
	accountName    string
	key            string
	tokenVerifier  func(token string) error
	maxClockSkew   time.Duration
	requestLog     int // entries kept; 0 keeps all
	certificate    *tls.Certificate
	partitionMerge bool // WithPartitionMerge (merge.go)
	queryPageLimit int  // WithQueryPageLimit (query.go); 0: none
}

// Option configures a Server.
type Option func(*config)

// WithAccountName sets the account name reported by GET / (default "localaccount").
func WithAccountName(name string) Option { return func(c *config) { c.accountName = name } }

// WithAddress makes the server listen on addr ("host:port"; port 0 picks a
// free one) instead of "127.0.0.1:0", e.g. to serve other processes or
// network namespaces. URL and Host report the address actually bound (a host
// name is resolved by the listener; an empty host or "0.0.0.0" binds every
// interface and is reported as such, so bind the address clients will use).
// A TLS server's certificate then also holds the host as an IP SAN (DNS SAN
// for a name) and, for an unspecified address, every local interface address.
func WithAddress(addr string) Option { return func(c *config) { c.address = addr } }

// WithCertificate makes a TLS server present cert instead of a freshly
// generated one, so that clients that trusted it keep trusting a server
// restarted with it; CertPEM then holds its leaf.
func WithCertificate(cert tls.Certificate) Option {
	return func(c *config) { c.certificate = &cert }
}

// WithKey sets the base64 primary key (default: a random 64-byte key).
func WithKey(base64Key string) Option { return func(c *config) { c.key = base64Key } }

// WithTokenVerifier enables Entra ID ("type=aad") authorization. The verifier
// receives the bearer token and returns nil to accept it. Without a verifier
// every aad request is rejected with 401, as for an account with AAD disabled.
func WithTokenVerifier(v func(token string) error) Option {
	return func(c *config) { c.tokenVerifier = v }
}

// withMaxClockSkew sets how far x-ms-date may be from the server clock (default 15 minutes,
// the window the real service allows).
func withMaxClockSkew(d time.Duration) Option { return func(c *config) { c.maxClockSkew = d } }

// WithRequestLogLimit keeps only the most recent n requests (at least n, at
// most 2n) in the request log, so that a long-running server (cosmoslag
// serve) does not grow without bound. The default, 0, keeps every request,
// as tests that count requests need.
func WithRequestLogLimit(n int) Option { return func(c *config) { c.requestLog = n } }

// New starts a plain HTTP server on 127.0.0.1 with a random port (or on
// WithAddress). It fails if the key is not valid base64 or the address
// cannot be listened on; processes use it, tests NewServer.
func New(opts ...Option) (*Server, error) { return start(false, opts) }

// NewTLS starts an HTTPS server like New, with a freshly generated
// self-signed certificate; Client trusts it, and CertPEM gives it to other
// processes.
func NewTLS(opts ...Option) (*Server, error) { return start(true, opts) }

// NewServer is New for tests: it panics where New fails, as
// httptest.NewServer does.
func NewServer(opts ...Option) *Server { return mustStart(New(opts...)) }

// NewTLSServer is NewTLS for tests: it panics where NewTLS fails.
func NewTLSServer(opts ...Option) *Server { return mustStart(NewTLS(opts...)) }

func mustStart(s *Server, err error) *Server {
	if err != nil {
		panic(err.Error())
	}
	return s
}

func start(useTLS bool, opts []Option) (*Server, error) {
	cfg := config{address: "127.0.0.1:0", accountName: "localaccount", maxClockSkew: 15 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.key == "" {
		k := make([]byte, 64)
		_, _ = rand.Read(k)
		cfg.key = base64.StdEncoding.EncodeToString(k)
	}
	keyBytes, err := base64.StdEncoding.DecodeString(cfg.key)
	if err != nil {
		return nil, fmt.Errorf("cosmostest: account key is not valid base64: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.address)
	if err != nil {
		return nil, fmt.Errorf("cosmostest: listen on %s: %w", cfg.address, err)
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	acct := newAccount(host, cfg.partitionMerge)
	s := &Server{Account: acct, Handler: newHandler(acct, cfg, keyBytes)}
	s.http = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: s.Handler, ReadHeaderTimeout: time.Minute},
	}
	if useTLS {
		// The configured host (a name stays a name) and the bound one.
		cfgHost, _, _ := net.SplitHostPort(cfg.address)
		cert, certPEM, err := serverCertificate(cfg.certificate, cfgHost, host)
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		// HTTP/1.1 only: dropped-connection faults need to hijack the connection.
		s.http.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		s.certPEM = certPEM
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	s.url = s.http.URL + "/"
	s.Handler.endpoint = s.url
	return s, nil
}

// URL is the account endpoint with a trailing slash, like real endpoints
// ("http://127.0.0.1:41234/").
func (s *Server) URL() string { return s.url }

// Key is the base64 primary key.
func (s *Server) Key() string { return s.Handler.cfg.key }

// ConnectionString is "AccountEndpoint=<URL>;AccountKey=<key>;".
func (s *Server) ConnectionString() string {
	return "AccountEndpoint=" + s.url + ";AccountKey=" + s.Key() + ";"
}

// CertPEM is the PEM-encoded self-signed certificate of a TLS server (a copy),
// for processes that trust it from a file (SSL_CERT_FILE); nil for plain HTTP.
func (s *Server) CertPEM() []byte { return bytes.Clone(s.certPEM) }

// Client returns an HTTP client for this server that trusts its certificate
// when TLS is on and uses no proxy. Close closes its idle connections.
func (s *Server) Client() *http.Client { return s.http.Client() }

// Close stops the server, wakes handlers sleeping on injected latency, waits
// for every handler to return and closes the Client's idle connections. No
// goroutine of the server survives Close.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.Handler.gate.Close()
		s.http.Close()
		s.Handler.gate.Wait()
	})
}

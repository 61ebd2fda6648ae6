package cosmostest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is one Cosmos DB account endpoint served on loopback. Two accounts
// are two servers. All methods are safe for concurrent use.
type Server struct {
	cfg      config
	keyBytes []byte

	listener net.Listener
	http     *http.Server
	url      string
	certPool *x509.CertPool
	certPEM  []byte
	client   *http.Client

	closing   chan struct{} // closed by Close; wakes sleeping handlers
	closeOnce sync.Once
	serveDone chan struct{}
	handlers  sync.WaitGroup
	inFlight  handlerCount // running handlers, for tests

	mu          sync.Mutex
	closed      bool
	dbs         map[string]*Database
	dbOrder     []*Database
	usedRIDs    map[string]bool
	sessionForm SessionTokenForm
	latency     time.Duration
	faults      []*activeFault
	requests    requestLog

	lastAuth acceptedAuth // guarded by its own lock
}

type config struct {
	address       string
	accountName   string
	key           string
	tokenVerifier func(token string) error
	maxClockSkew  time.Duration
	requestLog    int // entries kept; 0 keeps all
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

// WithKey sets the base64 primary key (default: a random 64-byte key).
func WithKey(base64Key string) Option { return func(c *config) { c.key = base64Key } }

// WithTokenVerifier enables Entra ID ("type=aad") authorization. The verifier
// receives the bearer token and returns nil to accept it. Without a verifier
// every aad request is rejected with 401, as for an account with AAD disabled.
func WithTokenVerifier(v func(token string) error) Option {
	return func(c *config) { c.tokenVerifier = v }
}

// WithMaxClockSkew sets how far x-ms-date may be from the server clock (default 15 minutes,
// the window the real service allows).
func WithMaxClockSkew(d time.Duration) Option { return func(c *config) { c.maxClockSkew = d } }

// WithRequestLogLimit keeps only the most recent n requests (at least n, at
// most 2n) in the request log, so that a long-running server (cosmoslag
// serve) does not grow without bound. The default, 0, keeps every request,
// as tests that count requests need.
func WithRequestLogLimit(n int) Option { return func(c *config) { c.requestLog = n } }

// NewServer starts a plain HTTP server on 127.0.0.1 with a random port (or
// on WithAddress). It panics if the key option is not valid base64 or the
// address cannot be listened on, as httptest.NewServer does.
func NewServer(opts ...Option) *Server { return newServer(false, opts) }

// NewTLSServer starts an HTTPS server on 127.0.0.1 (or on WithAddress) with a
// freshly generated self-signed certificate; Client and CertPool trust it,
// and CertPEM gives it to other processes.
func NewTLSServer(opts ...Option) *Server { return newServer(true, opts) }

func newServer(useTLS bool, opts []Option) *Server {
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
		panic(fmt.Sprintf("cosmostest: account key is not valid base64: %v", err))
	}
	ln, err := net.Listen("tcp", cfg.address)
	if err != nil {
		panic(fmt.Sprintf("cosmostest: listen on %s: %v", cfg.address, err))
	}
	s := &Server{
		cfg:         cfg,
		keyBytes:    keyBytes,
		closing:     make(chan struct{}),
		serveDone:   make(chan struct{}),
		dbs:         map[string]*Database{},
		usedRIDs:    map[string]bool{},
		sessionForm: SessionTokenVersioned,
	}
	scheme := "http"
	transport := &http.Transport{Proxy: nil, ForceAttemptHTTP2: false}
	if useTLS {
		// The configured host (a name stays a name) and the bound one.
		cfgHost, _, _ := net.SplitHostPort(cfg.address)
		boundHost, _, _ := net.SplitHostPort(ln.Addr().String())
		cert, pool, certPEM, err := selfSignedCert(cfgHost, boundHost)
		if err != nil {
			_ = ln.Close()
			panic(fmt.Sprintf("cosmostest: generate certificate: %v", err))
		}
		// HTTP/1.1 only: dropped-connection faults need to hijack the connection.
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
		s.certPool = pool
		s.certPEM = certPEM
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
		scheme = "https"
	}
	s.listener = ln
	s.url = scheme + "://" + ln.Addr().String() + "/"
	s.client = &http.Client{Transport: transport}
	s.http = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(s.serveDone)
		_ = s.http.Serve(ln)
	}()
	return s
}

// URL is the account endpoint with a trailing slash, like real endpoints
// ("http://127.0.0.1:41234/").
func (s *Server) URL() string { return s.url }

// Host is the host name of the endpoint without the port; change feed
// processors write it into lease ids.
func (s *Server) Host() string {
	host, _, _ := net.SplitHostPort(s.listener.Addr().String())
	return host
}

// AccountName is the account id reported by GET /.
func (s *Server) AccountName() string { return s.cfg.accountName }

// Key is the base64 primary key.
func (s *Server) Key() string { return s.cfg.key }

// ConnectionString is "AccountEndpoint=<URL>;AccountKey=<key>;".
func (s *Server) ConnectionString() string {
	return "AccountEndpoint=" + s.url + ";AccountKey=" + s.cfg.key + ";"
}

// CertPool holds the certificate of a TLS server; nil for plain HTTP.
func (s *Server) CertPool() *x509.CertPool { return s.certPool }

// CertPEM is the PEM-encoded self-signed certificate of a TLS server (a copy),
// for processes that trust it from a file (SSL_CERT_FILE); nil for plain HTTP.
func (s *Server) CertPEM() []byte { return bytes.Clone(s.certPEM) }

// Client returns an HTTP client for this server that trusts its certificate
// when TLS is on. Close closes its idle connections.
func (s *Server) Client() *http.Client { return s.client }

// Close stops the server, wakes handlers sleeping on injected latency, waits
// for every handler to return and closes the Client's idle connections. No
// goroutine of the server survives Close.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.closing)
		_ = s.http.Close()
		<-s.serveDone
		s.handlers.Wait()
		s.client.CloseIdleConnections()
	})
}

// SetSessionTokenForm selects the x-ms-session-token form of later responses.
func (s *Server) SetSessionTokenForm(f SessionTokenForm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionForm = f
}

// SetLatency adds d before every answer. A waiting request gives up when its
// client goes away or the server closes.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// sleep waits d, returning false when the request or the server ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	return sleepCtx(ctx, s.closing, d)
}

func sleepCtx(ctx context.Context, closing <-chan struct{}, d time.Duration) bool {
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
	case <-closing:
		return false
	}
}

// serveHTTP is the single entry point: classify, record, delay, fault,
// authorize, route. Every request is recorded before its answer is written,
// so a test that has received a response always finds it in Requests.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Add to the WaitGroup only while open, so Close's Wait never races an Add.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		dropConnection(w)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)

	var segBuf [8]string
	segs := splitPath(r.URL.Path, segBuf[:0])
	kind := classify(r, segs)
	authorization := redactAuthorization(r.Header)
	rec := Request{
		Kind:    kind,
		Method:  r.Method,
		Path:    r.URL.Path,
		RangeID: headerValue(r.Header, keyPartitionKeyRangeID),
		Header:  r.Header,
		At:      time.Now(),
	}

	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if !s.sleep(r.Context(), latency) {
		s.record(rec, 0)
		dropConnection(w) // returning normally would send an empty 200
		return
	}

	if f, ok := s.takeFault(kind, rec.RangeID); ok {
		if !s.sleep(r.Context(), f.Latency) {
			s.record(rec, 0)
			dropConnection(w)
			return
		}
		if f.Hook != nil {
			f.Hook()
		}
		switch {
		case f.DropConnection:
			s.record(rec, 0)
			dropConnection(w)
			return
		case f.MalformedBody:
			rep := malformedReply()
			s.record(rec, rep.status)
			rep.write(w, r)
			return
		case f.Body != nil:
			rep := customReply(f)
			s.record(rec, rep.status)
			rep.write(w, r)
			return
		case f.Status != 0:
			rep := faultReply(f)
			s.record(rec, rep.status)
			rep.write(w, r)
			return
		}
	}

	var rep *reply
	if err := s.authorize(r, authorization); err != nil {
		rep = errorReply(http.StatusUnauthorized, 0, "Unauthorized", err.Error())
	} else {
		rep = s.route(r, kind, segs)
	}
	s.record(rec, rep.status)
	rep.write(w, r)
}

func dropConnection(w http.ResponseWriter) {
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

// route dispatches an authorized request to its handler by path shape.
func (s *Server) route(r *http.Request, kind RequestKind, segs []string) *reply {
	switch {
	case len(segs) == 0:
		if r.Method != http.MethodGet {
			return methodNotAllowed()
		}
		return s.accountReply()
	case segs[0] != "dbs":
		return notFound("unknown resource " + r.URL.Path)
	case len(segs) == 2:
		if r.Method != http.MethodGet {
			return methodNotAllowed()
		}
		return s.databaseReply(segs[1])
	case len(segs) == 4 && segs[2] == "colls":
		if r.Method != http.MethodGet {
			return methodNotAllowed()
		}
		return s.containerReply(segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "pkranges":
		if r.Method != http.MethodGet {
			return methodNotAllowed()
		}
		return s.pkRangesReply(r, segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "docs":
		switch kind {
		case KindQuery:
			return s.queryReply(r, segs[1], segs[3])
		case KindChangeFeed:
			return s.changeFeedReply(r, segs[1], segs[3])
		case KindCreate:
			return s.createReply(r, segs[1], segs[3])
		}
		return errorReply(http.StatusBadRequest, 0, "BadRequest",
			"only queries, creates/upserts and incremental change feed reads are supported on a docs feed")
	case len(segs) == 6 && segs[2] == "colls" && segs[4] == "docs":
		switch r.Method {
		case http.MethodGet:
			return s.readItemReply(r, segs[1], segs[3], segs[5])
		case http.MethodPut:
			return s.replaceReply(r, segs[1], segs[3], segs[5])
		case http.MethodDelete:
			return s.deleteReply(r, segs[1], segs[3], segs[5])
		}
		return methodNotAllowed()
	}
	return notFound("unknown resource " + r.URL.Path)
}

func pathSegments(p string) []string { return splitPath(p, nil) }

// splitPath appends the segments of p to buf: strings.Split of p without its
// leading and trailing slashes (nothing for an empty path). With a buffer on
// the caller's stack, the common paths split without allocating.
func splitPath(p string, buf []string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return buf
	}
	for {
		seg, rest, more := strings.Cut(p, "/")
		buf = append(buf, seg)
		if !more {
			return buf
		}
		p = rest
	}
}

// lookup finds a container by database and container id (or _rid), under s.mu.
func (s *Server) lookupLocked(dbID, collID string) (*Container, *reply) {
	db := s.databaseLocked(dbID)
	if db == nil {
		return nil, notFound("database " + dbID + " does not exist")
	}
	c := db.containerLocked(collID)
	if c == nil {
		return nil, notFound("container " + collID + " does not exist")
	}
	return c, nil
}

func (s *Server) databaseLocked(id string) *Database {
	if db, ok := s.dbs[id]; ok {
		return db
	}
	for _, db := range s.dbOrder {
		if db.rid == id {
			return db
		}
	}
	return nil
}

// newRID returns a fresh resource id of n bytes, base64 encoded. Like real
// RIDs it never holds '/' (which the service replaces by '-'); we also avoid
// '+' so RIDs can be pasted into URLs and lease ids without escaping.
func (s *Server) newRIDLocked(prefix []byte, n int) string {
	for {
		b := append(append([]byte{}, prefix...), make([]byte, n)...)
		_, _ = rand.Read(b[len(prefix):])
		rid := base64.StdEncoding.EncodeToString(b)
		if strings.ContainsAny(rid, "+/") || s.usedRIDs[rid] {
			continue
		}
		s.usedRIDs[rid] = true
		return rid
	}
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

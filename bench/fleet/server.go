package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// The account process: one Cosmos DB account (pkg/cosmostest) holding a
// monitored container of L physical ranges and, for each of N processors,
// its own lease container with L leases checkpointed `pending` items behind.
// The account's Handler is served over TLS on a listener of ours, which
// counts the TCP connections it accepts (open and peak), wrapped by a
// handler that counts requests in flight (peak), answers and 429s, and can
// throttle the account to a request budget. It runs in its own process so
// that the fleet's process measures only the scalers.

const tokenScope = "https://cosmos.azure.com/.default"

// serverReady is the line the account process prints when it serves.
type serverReady struct {
	Endpoint   string // the account, https://127.0.0.1:port/ (counted)
	Control    string // this process's statistics, plain HTTP (not counted)
	Key        string
	Issuer     string // the Entra ID test issuer (AZURE_AUTHORITY_HOST)
	CAFile     string // the issuer's CA, which also signs the account's certificate (SSL_CERT_FILE)
	HTTPSProxy string // a CONNECT proxy: workloadHost to the account, Entra ID's public hosts to the issuer (HTTPS_PROXY)
	// WorkloadEndpoint is the account under workloadHost (counted too):
	// the scaler sends workload identity only to the cloud's Cosmos DB domains.
	WorkloadEndpoint string
}

// workloadHost names the account for workload identity; the harness's
// CONNECT proxy tunnels it to the counted listener.
const workloadHost = "fleet.documents.azure.com"

// serverStats is what the control endpoint returns: peaks since the last reset.
type serverStats struct {
	ConnsOpen     int64
	ConnsPeak     int64
	ConnsAccepted int64
	InFlightPeak  int64
	Requests      int64
	Throttled     int64          // 429s answered by the budget
	NonOK         int64          // answers >= 400 (429s included)
	TokenRequests map[string]int // token grants by client id
	ServerCPUSecs float64        // this process's CPU time since start
	UnroutedConns int            // connections open to cosmostest's own listener, which no client should use (must be 0)
}

type counters struct {
	mu            sync.Mutex
	open, peak    int64
	accepted      int64
	inFlight      int64
	inFlightPeak  int64
	requests      int64
	throttled     int64
	nonOK         int64
	budget        float64 // requests per second; 0 = unlimited
	tokens        float64
	last          time.Time
	retryAfterMin time.Duration
	closeIdle     func()
}

func (c *counters) connOpened() {
	c.mu.Lock()
	c.open++
	c.accepted++
	c.peak = max(c.peak, c.open)
	c.mu.Unlock()
}

func (c *counters) connClosed() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
}

// admit counts a request in flight, or says how long to wait when the
// account's budget is spent (a token bucket holding one second of budget).
func (c *counters) admit() (retryAfter time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if c.budget > 0 {
		now := time.Now()
		c.tokens = min(c.budget, c.tokens+now.Sub(c.last).Seconds()*c.budget)
		c.last = now
		if c.tokens < 1 {
			c.throttled++
			c.nonOK++
			wait := time.Duration((1 - c.tokens) / c.budget * float64(time.Second))
			return max(wait, c.retryAfterMin), false
		}
		c.tokens--
	}
	c.inFlight++
	c.inFlightPeak = max(c.inFlightPeak, c.inFlight)
	return 0, true
}

func (c *counters) done(status int) {
	c.mu.Lock()
	c.inFlight--
	if status >= 400 {
		c.nonOK++
	}
	c.mu.Unlock()
}

// reset starts new peaks from the current values.
func (c *counters) reset() {
	c.mu.Lock()
	c.peak, c.inFlightPeak = c.open, c.inFlight
	c.accepted, c.requests, c.throttled, c.nonOK = 0, 0, 0, 0
	c.mu.Unlock()
}

type countingListener struct {
	net.Listener
	c *counters
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.connOpened()
	return &countedConn{Conn: conn, c: l.c}, nil
}

type countedConn struct {
	net.Conn
	c    *counters
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(c.c.connClosed)
	return c.Conn.Close()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// fleetHandler serves the account's Handler and counts. The account read
// (GET /) lists cosmostest's own listener as the account's location; it is
// rewritten to ours, so that clients that follow the account's locations
// stay on the counted listener.
type fleetHandler struct {
	next      http.Handler
	c         *counters
	ownURL    string
	servedURL string
}

func (h *fleetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	retryAfter, ok := h.c.admit()
	if !ok {
		w.Header().Set("x-ms-retry-after-ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
		w.Header().Set("x-ms-substatus", "3200")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"code":"429","message":"Request rate is large. More Request Units may be needed, so no changes were made."}`))
		return
	}
	// The account's handler aborts (panics with http.ErrAbortHandler) when
	// a client goes away mid-request: the count must still come down.
	sw := &statusWriter{ResponseWriter: w}
	defer func() { h.c.done(sw.status) }()
	if r.Method == http.MethodGet && r.URL.Path == "/" {
		rec := httptest.NewRecorder() // the answer, to rewrite it
		h.next.ServeHTTP(rec, r)
		body := bytes.ReplaceAll(rec.Body.Bytes(), []byte(h.ownURL), []byte(h.servedURL))
		maps.Copy(w.Header(), rec.Header())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		sw.WriteHeader(rec.Code)
		_, _ = sw.Write(body)
		return
	}
	h.next.ServeHTTP(sw, r)
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	processors := fs.Int("n", 10, "processors, each with its own lease container")
	leases := fs.Int("leases", 100, "physical ranges of the monitored container = leases per processor")
	pending := fs.Int("pending", 3, "items pending per lease")
	latency := fs.Duration("latency", 2*time.Millisecond, "added before every answer")
	budget := fs.Float64("throttle", 0, "requests per second the account admits (0 = unlimited); beyond it, 429 with x-ms-retry-after-ms")
	workload := fs.Bool("workload", false, "the leases name the account as workloadHost, the endpoint the fleet uses with workload identity")
	if err := fs.Parse(args); err != nil {
		return err
	}
	issuer, err := entraidtest.New()
	if err != nil {
		return err
	}
	defer issuer.Close()
	stop, err := issuer.TrustInProcess(issuer)
	if err != nil {
		return err
	}
	defer stop()
	verify := issuer.Verifier(tokenScope)
	srv, err := cosmostest.New(cosmostest.WithTokenVerifier(verify), cosmostest.WithRequestLogLimit(1000))
	if err != nil {
		return err
	}
	defer srv.Close()
	leaseHost := "" // the server's own host
	if *workload {
		leaseHost = workloadHost
	}
	if err := populate(srv, *processors, *leases, *pending, leaseHost); err != nil {
		return err
	}
	srv.Handler.SetLatency(*latency)

	cert, err := issuer.Certificate("")
	if err != nil {
		return err
	}
	served, c, closeServed, err := serveCounted(srv.Handler, srv.URL(), cert, issuer.Certificate, *budget)
	if err != nil {
		return err
	}
	defer closeServed()
	proxy, err := serveTunnels(strings.TrimSuffix(strings.TrimPrefix(served, "https://"), "/"), strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://"))
	if err != nil {
		return err
	}

	start := cpuSeconds()
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		st := serverStats{ConnsOpen: c.open, ConnsPeak: c.peak, ConnsAccepted: c.accepted, InFlightPeak: c.inFlightPeak,
			Requests: c.requests, Throttled: c.throttled, NonOK: c.nonOK}
		c.mu.Unlock()
		st.TokenRequests = map[string]int{}
		for _, g := range issuer.Grants() {
			st.TokenRequests[g.ClientID]++
		}
		st.ServerCPUSecs = cpuSeconds() - start
		st.UnroutedConns = establishedTo(srv.URL())
		if r.URL.Query().Get("reset") != "" {
			c.reset()
		}
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("/closeidle", func(w http.ResponseWriter, r *http.Request) { c.closeIdle() })
	go func() { _ = http.Serve(ctl, mux) }()

	ready := serverReady{Endpoint: served, Control: "http://" + ctl.Addr().String(), Key: srv.Key(), Issuer: issuer.URL(),
		CAFile: os.Getenv("SSL_CERT_FILE"), HTTPSProxy: proxy, WorkloadEndpoint: "https://" + workloadHost + "/"}
	if err := json.NewEncoder(os.Stdout).Encode(ready); err != nil {
		return err
	}
	// Serve until the harness closes stdin.
	_, _ = os.Stdin.Read(make([]byte, 1))
	return nil
}

// serveCounted serves next over TLS with cert on a new listener on
// 127.0.0.1, counting its connections and requests; budget is the
// requests per second it admits (0 = all). ownURL is the account's own
// address, replaced by the new one in the account read's answer.
func serveCounted(next http.Handler, ownURL string, cert *tls.Certificate, named func(host string) (*tls.Certificate, error), budget float64) (served string, c *counters, closeFn func(), err error) {
	c = &counters{budget: budget, tokens: budget, last: time.Now(), retryAfterMin: 5 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	served = "https://" + ln.Addr().String() + "/"
	hs := &http.Server{
		Handler:           &fleetHandler{next: next, c: c, ownURL: ownURL, servedURL: served},
		ReadHeaderTimeout: time.Minute,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return named(hello.ServerName) }}, // asked only with SNI
		ErrorLog: log.New(io.Discard, "", 0), // accept errors when the process runs out of descriptors
	}
	go func() { _ = hs.ServeTLS(countingListener{Listener: ln, c: c}, "", "") }()
	c.closeIdle = func() {
		// Closes the idle connections; new ones are kept alive again.
		hs.SetKeepAlivesEnabled(false)
		hs.SetKeepAlivesEnabled(true)
	}
	return served, c, func() { _ = hs.Close() }, nil
}

// populate creates database appdb, the monitored container "orders" of
// `leases` ranges and, per processor i, lease container "leases-i" holding
// processor "proc-i"'s .NET v0 leases, checkpointed at the ranges' current
// LSN; then `pending` items are written to every range, so every processor
// lags by leases*pending items.
func populate(srv *cosmostest.Server, processors, leases, pending int, leaseHost string) error {
	db := srv.Account.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", leases)
	for i := range processors {
		w := leasetest.NewWriter(fmt.Sprintf("proc-%d", i), monitored, db.CreateContainer(fmt.Sprintf("leases-%d", i), "/id", 1), cosmostest.DotNetV0)
		if leaseHost != "" {
			w.AccountHost = leaseHost // lease ids name the account as the scalers' endpoint does
		}
		if _, err := w.CreateLeases(true); err != nil {
			return err
		}
	}
	for _, r := range monitored.Ranges() {
		if err := monitored.WriteItemsToRange(r.ID, pending); err != nil {
			return err
		}
	}
	return nil
}

// serveTunnels is a CONNECT proxy on 127.0.0.1: a tunnel to workloadHost is
// spliced to the counted listener at account (one tunnel, one counted
// connection, TLS end to end); any other request goes to the issuer's proxy
// at issuerProxy.
func serveTunnels(account, issuerProxy string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil { // out of descriptors under a burst: keep serving
				time.Sleep(10 * time.Millisecond)
				continue
			}
			go tunnel(conn, account, issuerProxy)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

func tunnel(conn net.Conn, account, issuerProxy string) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	toAccount := req.Method == http.MethodConnect && req.URL.Hostname() == workloadHost
	target := issuerProxy
	if toAccount {
		target = account
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	if toAccount {
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else if err := req.Write(up); err != nil { // the issuer's proxy answers it
		return
	}
	go func() {
		_, _ = io.Copy(up, br)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(conn, up)
}

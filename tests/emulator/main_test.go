package emulator

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// tokenIssuer is the tests' Entra ID. Go reads SSL_CERT_FILE and
// HTTPS_PROXY once, before the first TLS connection and the first proxied
// request, so TestMain sets both before any test runs: the issuer's CA is
// trusted, and through the CONNECT proxy the issuer also answers as
// login.microsoftonline.com and every other public authority host (MSAL's
// instance discovery for custom authorities goes there). Loopback hosts,
// the embedded servers included, are never proxied.
var tokenIssuer *entraidtest.Issuer

// scalerLogs captures everything the scaler logs (verbosity 1 included), so
// tests can assert that no secret ever reaches a log line.
var scalerLogs = &testhelp.SyncBuffer{}

// proxyHosts answers the CONNECT proxy's tunnelled requests: a host a test
// routed with routeHost goes to its handler, every other to tokenIssuer.
var proxyHosts = &hostRouter{routes: map[string]http.Handler{}}

type hostRouter struct {
	mu       sync.Mutex
	routes   map[string]http.Handler
	fallback http.Handler
}

func (h *hostRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	h.mu.Lock()
	handler, ok := h.routes[strings.TrimSuffix(strings.ToLower(host), ".")]
	h.mu.Unlock()
	if !ok {
		handler = h.fallback
	}
	handler.ServeHTTP(w, r)
}

// routeHost serves host (a name, any port) through the proxy with handler
// until the test ends.
func routeHost(t *testing.T, host string, handler http.Handler) {
	t.Helper()
	proxyHosts.mu.Lock()
	defer proxyHosts.mu.Unlock()
	if _, taken := proxyHosts.routes[host]; taken {
		t.Fatalf("host %s is routed already", host)
	}
	proxyHosts.routes[host] = handler
	t.Cleanup(func() {
		proxyHosts.mu.Lock()
		defer proxyHosts.mu.Unlock()
		delete(proxyHosts.routes, host)
	})
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logf.SetLogger(funcr.New(func(prefix, args string) { scalerLogs.WriteLine(prefix + " " + args) }, funcr.Options{Verbosity: 1}))
	issuer, err := entraidtest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tokenIssuer = issuer
	defer tokenIssuer.Close()
	proxyHosts.fallback = tokenIssuer
	stop, err := tokenIssuer.TrustInProcess(proxyHosts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	// As KEDA's operator does at start-up (its --http-max-idle-conns-per-host
	// default), so concurrent lease reads keep their connections alive.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

package scalers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// cosmosDBTokenIssuer is the package's Entra ID stand-in. Go reads
// SSL_CERT_FILE once, before the first TLS connection, so TestMain sets it
// before any test runs and the issuer's CA is trusted. No proxy variable is
// set: in KEDA's tree these tests share a package with every other scaler's
// (a proxy broke KEDA's own gRPC tests there). Bearer tests therefore use
// cloud: Private, whose authorities skip MSAL's public instance discovery.
var cosmosDBTokenIssuer *entraidtest.Issuer

// cosmosDBLogs captures everything the scaler logs (verbosity 1 included), so
// tests can assert that no secret ever reaches a log line.
var cosmosDBLogs = &syncBuffer{}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(line)
	b.buf.WriteByte('\n')
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) {
	os.Exit(runCosmosDBTestsWithTokenIssuer(m))
}

func runCosmosDBTestsWithTokenIssuer(m *testing.M) int {
	logf.SetLogger(funcr.New(func(prefix, args string) { cosmosDBLogs.add(prefix + " " + args) }, funcr.Options{Verbosity: 1}))
	issuer, err := entraidtest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cosmosDBTokenIssuer = issuer
	defer cosmosDBTokenIssuer.Close()
	dir, err := os.MkdirTemp("", "cosmosdb-scaler-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, cosmosDBTokenIssuer.CAPEM(), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("SSL_CERT_FILE", caFile)
	// As KEDA's operator does at start-up (its --http-max-idle-conns-per-host
	// default), so concurrent lease reads keep their connections alive.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

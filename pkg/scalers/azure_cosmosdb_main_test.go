package scalers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// tokenIssuer is the package's Entra ID stand-in. Go reads SSL_CERT_FILE and
// the proxy variables once, before the first TLS connection, so TestMain
// sets them before any test runs: the issuer's CA is trusted, and requests
// to public authorities such as login.microsoftonline.com go through the
// issuer's proxy, while loopback Cosmos DB servers stay direct.
var tokenIssuer *cosmostest.TokenIssuer

func TestMain(m *testing.M) {
	os.Exit(runWithTokenIssuer(m))
}

func runWithTokenIssuer(m *testing.M) int {
	tokenIssuer = cosmostest.NewTokenIssuer()
	defer tokenIssuer.Close()
	dir, err := os.MkdirTemp("", "cosmosdb-scaler-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, tokenIssuer.CAPEM(), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("SSL_CERT_FILE", caFile)
	os.Setenv("HTTPS_PROXY", tokenIssuer.ProxyURL())
	os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	return m.Run()
}

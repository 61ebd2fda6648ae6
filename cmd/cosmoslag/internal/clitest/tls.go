package clitest

import (
	"crypto/tls"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
)

// Issuer is the tests' Entra ID and certificate authority, which Main has
// the process trust (Issuer.TrustInProcess).
var Issuer *entraidtest.Issuer

// Main runs a command package's tests with Issuer trusted in-process, and
// returns the exit code: Go reads the trusted roots once, before the first
// TLS connection, so this happens before any test runs.
func Main(m *testing.M) int {
	issuer, err := entraidtest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer issuer.Close()
	stop, err := issuer.TrustInProcess(issuer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	Issuer = issuer
	return m.Run()
}

// OverTLS serves srv's account over HTTPS too, with a certificate of
// Issuer's CA, and returns that endpoint: no token, nor a key but the
// emulator's, goes over plain HTTP.
func OverTLS(t *testing.T, srv *cosmostest.Server) string {
	t.Helper()
	cert, err := Issuer.Certificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

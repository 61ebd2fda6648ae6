package entraidtest

import (
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest/connectproxy"
)

// TrustInProcess makes this process's Azure SDK clients reach t as Entra ID,
// for a TestMain to call before any TLS connection is made: Go reads
// SSL_CERT_FILE once, so it names a file holding t's CA; HTTPS_PROXY names a
// proxy that serves every host it is asked for with handler (t itself, or a
// router falling back to t), so Entra ID's public hosts (instance discovery,
// the known clouds' authorities) are answered too. Loopback hosts are never
// proxied. stop closes the proxy and removes the file.
func (t *Issuer) TrustInProcess(handler http.Handler) (stop func(), err error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(t.CAPEM())
	proxy, err := connectproxy.New(handler, t.Certificate, roots)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "entraidtest")
	if err != nil {
		proxy.Close()
		return nil, err
	}
	stop = func() {
		proxy.Close()
		os.RemoveAll(dir)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, t.CAPEM(), 0o600); err != nil {
		stop()
		return nil, err
	}
	os.Setenv("SSL_CERT_FILE", caFile)
	os.Setenv("HTTPS_PROXY", proxy.URL())
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")
	return stop, nil
}

// SetWorkloadIdentityEnv sets, for the rest of tb, the environment the
// workload identity webhook gives a pod, pointed at t: the authority, the
// tenant, the client id and a file holding a federated token, which t
// accepts for any client.
func (t *Issuer) SetWorkloadIdentityEnv(tb testing.TB, tenant, clientID string) {
	tb.Helper()
	tokenFile := filepath.Join(tb.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("AZURE_AUTHORITY_HOST", t.URL())
	tb.Setenv("AZURE_TENANT_ID", tenant)
	tb.Setenv("AZURE_CLIENT_ID", clientID)
	tb.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)
}

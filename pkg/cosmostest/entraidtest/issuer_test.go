package entraidtest

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/goleak"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest/connectproxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const cosmosScope = "https://cosmos.azure.com/.default"

// newIssuer starts an issuer and a proxy that serves it under any host name
// (MSAL sends instance discovery to login.microsoftonline.com); the client
// goes through the proxy.
func newIssuer(t *testing.T) (*Issuer, *http.Client) {
	t.Helper()
	ti, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ti.Close)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ti.CAPEM()) {
		t.Fatal("CAPEM holds no certificate")
	}
	proxy, err := connectproxy.New(ti, ti.Certificate, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	return ti, proxy.Client()
}

func issuerOptions(client *http.Client, authority string) azcore.ClientOptions {
	return azcore.ClientOptions{
		Cloud:     cloud.Configuration{ActiveDirectoryAuthorityHost: authority},
		Transport: client,
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}
}

func getToken(t *testing.T, cred azcore.TokenCredential, scope string) string {
	t.Helper()
	tok, err := cred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{scope}})
	if err != nil {
		t.Fatalf("get token: %v", err)
	}
	return tok.Token
}

func (t *Issuer) requestLog() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string{}, t.log...)
}

func TestIssuerClientSecretCredential(t *testing.T) {
	ti, client := newIssuer(t)
	cred, err := azidentity.NewClientSecretCredential("tenant-1", "client-1", "s3cret",
		&azidentity.ClientSecretCredentialOptions{ClientOptions: issuerOptions(client, ti.URL())})
	if err != nil {
		t.Fatal(err)
	}
	tok := getToken(t, cred, cosmosScope)

	if got := ti.scopes(); len(got) != 1 || got[0] != cosmosScope {
		t.Errorf("scopes %v", got)
	}
	g := ti.Grants()[0]
	if g.Tenant != "tenant-1" || g.ClientID != "client-1" || g.Credential != "secret" {
		t.Errorf("grant %+v", g)
	}
	// MSAL validated the local authority through instance discovery, which it
	// sends to login.microsoftonline.com: the proxy served it.
	log := strings.Join(ti.requestLog(), "\n")
	for _, want := range []string{
		"GET login.microsoftonline.com/common/discovery/instance",
		"/tenant-1/v2.0/.well-known/openid-configuration",
		"POST " + strings.TrimSuffix(strings.TrimPrefix(ti.URL(), "https://"), "/") + "/tenant-1/oauth2/v2.0/token",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("issuer log lacks %q:\n%s", want, log)
		}
	}

	if err := ti.Verifier(cosmosScope)(tok); err != nil {
		t.Errorf("verifier rejected its own token: %v", err)
	}
	if err := ti.Verifier("https://other.example/.default")(tok); err == nil {
		t.Error("verifier accepted a token for another scope")
	}
	if err := ti.Verifier("")(tok[:len(tok)-2] + "xx"); err == nil {
		t.Error("verifier accepted a tampered token")
	}
	other, _ := newIssuer(t)
	if err := other.Verifier("")(tok); err == nil {
		t.Error("another issuer accepted the token")
	}
}

func TestIssuerWorkloadIdentityCredential(t *testing.T) {
	ti, client := newIssuer(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("federated-service-account-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientID:      "wi-client",
		TenantID:      "tenant-2",
		TokenFilePath: file,
		ClientOptions: issuerOptions(client, ti.URL()),
	})
	if err != nil {
		t.Fatal(err)
	}
	getToken(t, cred, "https://myaccount.documents.azure.com/.default")
	if got := ti.scopes(); len(got) != 1 || got[0] != "https://myaccount.documents.azure.com/.default" {
		t.Errorf("scopes %v", got)
	}
	if g := ti.Grants()[0]; g.Credential != "assertion" || g.ClientID != "wi-client" || g.Tenant != "tenant-2" {
		t.Errorf("grant %+v", g)
	}
}

func TestIssuerServesPublicCloudAuthorityThroughProxy(t *testing.T) {
	ti, client := newIssuer(t)
	cred, err := azidentity.NewClientSecretCredential("tenant-3", "client-3", "s3cret",
		&azidentity.ClientSecretCredentialOptions{ClientOptions: issuerOptions(client, cloud.AzurePublic.ActiveDirectoryAuthorityHost)})
	if err != nil {
		t.Fatal(err)
	}
	getToken(t, cred, cosmosScope)
	if g := ti.Grants(); len(g) != 1 || g[0].Host != "login.microsoftonline.com" {
		t.Errorf("grants %+v", g)
	}
}

func TestIssuerFaults(t *testing.T) {
	ti, client := newIssuer(t)
	ti.injectFault(tokenFault{Status: http.StatusServiceUnavailable, Times: 1})
	newCred := func() azcore.TokenCredential {
		cred, err := azidentity.NewClientSecretCredential("tenant-4", "client-4", "s3cret",
			&azidentity.ClientSecretCredentialOptions{ClientOptions: issuerOptions(client, ti.URL()), DisableInstanceDiscovery: true})
		if err != nil {
			t.Fatal(err)
		}
		return cred
	}
	_, err := newCred().GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{cosmosScope}})
	var authErr *azidentity.AuthenticationFailedError
	if !errors.As(err, &authErr) {
		t.Fatalf("err = %v, want an authentication failure", err)
	}
	getToken(t, newCred(), cosmosScope)
	if ti.TokenRequests() != 1 {
		t.Errorf("%d token grants, want 1", ti.TokenRequests())
	}
}

// An azcosmos client authenticated with Entra ID tokens from the issuer
// talks to a TLS server that verifies them.
func TestEntraIDEndToEnd(t *testing.T) {
	ti, client := newIssuer(t)
	s := cosmostest.NewTLSServer(cosmostest.WithTokenVerifier(ti.Verifier(cosmosScope)))
	defer s.Close()
	db := s.Account.CreateDatabase("db")

	cred, err := azidentity.NewClientSecretCredential("tenant-5", "client-5", "s3cret",
		&azidentity.ClientSecretCredentialOptions{ClientOptions: issuerOptions(client, ti.URL())})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		audience string
		wantErr  bool
	}{
		{"https://cosmos.azure.com", false},
		{"https://wrong.example", true},
	} {
		opts := &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: s.Client(),
			Retry:     policy.RetryOptions{MaxRetries: -1},
			Cloud: cloud.Configuration{Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				azcosmos.ServiceName: {Audience: tc.audience},
			}},
		}}
		client, err := azcosmos.NewClient(s.URL(), cred, opts)
		if err != nil {
			t.Fatal(err)
		}
		dbc, _ := client.NewDatabase("db")
		resp, err := dbc.Read(context.Background(), nil)
		if tc.wantErr {
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized {
				t.Errorf("audience %s: err = %v, want 401", tc.audience, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("audience %s: %v", tc.audience, err)
		}
		if resp.DatabaseProperties.ResourceID != db.RID() {
			t.Errorf("rid %s", resp.DatabaseProperties.ResourceID)
		}
	}
	for _, r := range s.Handler.Requests() {
		if a := r.Header.Get("Authorization"); a != "" && a != "type=aad&ver=1.0&sig=REDACTED" {
			t.Errorf("logged authorization %q", a)
		}
	}
}

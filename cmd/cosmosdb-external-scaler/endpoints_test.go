package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestEndpointAllowList(t *testing.T) {
	defaults, err := parseEndpointAllowList(defaultAllowedEndpoints, false)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"shop.documents.azure.com":                 true,
		"SHOP-westeurope.Documents.Azure.com.":     true,
		"shop.privatelink.documents.azure.com":     true,
		"abc.z12.sql.cosmos.fabric.microsoft.com":  true,
		"shop.documents.azure.cn":                  true,
		"localhost":                                true,
		"127.0.0.1":                                true,
		"documents.azure.com":                      false, // not under the domain
		"shop.documents.azure.com.outside.example": false,
		"otherdocuments.azure.com":                 false,
		"outside.example.net":                      false,
	} {
		if got := defaults.allows(host); got != want {
			t.Errorf("allows(%q) = %v, want %v", host, got, want)
		}
	}
	if _, err := parseEndpointAllowList("a.example,,*.", true); err == nil {
		t.Error("an empty pattern was accepted")
	}
	if err := defaults.check(map[string]string{"cloud": "Private", "endpoint": "https://gw.internal/"}); err == nil || !strings.Contains(err.Error(), "--allowed-endpoints") {
		t.Errorf("cloud: Private with the default list: %v", err)
	}
	listed, _ := parseEndpointAllowList("gw.internal", true)
	if err := listed.check(map[string]string{"cloud": "Private", "endpoint": "https://gw.internal:443/"}); err != nil {
		t.Errorf("cloud: Private with its host listed: %v", err)
	}
	if err := listed.check(map[string]string{"cloud": "private", "leaseEndpoint": "https://other.internal/"}); err == nil || !strings.Contains(err.Error(), "leaseEndpoint") {
		t.Errorf("an unlisted leaseEndpoint: %v", err)
	}
}

// A caller that points endpoint or leaseEndpoint at a host of its own gets
// InvalidArgument naming the parameter before any scaler is built, so the
// key from the scaler's environment signs nothing for it.
func TestForeignEndpointGetsNoCredential(t *testing.T) {
	f := newFixture(t)
	f.env["COSMOS_KEY"] = "c2VjcmV0LWtleS1mb3ItdGVzdHM="
	ctx := testContext(t)
	for _, endpoint := range []string{"https://outside.example.net/", "https://shop.documents.azure.com.outside.example/"} {
		for _, param := range []string{"endpoint", "leaseEndpoint"} {
			md := metadata("connectionFromScalerEnv", "", "cosmosDBKeyFromScalerEnv", "COSMOS_KEY", "endpoint", "https://shop.documents.azure.com/", param, endpoint)
			if param == "leaseEndpoint" {
				md["leaseCosmosDBKeyFromScalerEnv"] = "COSMOS_KEY"
			}
			_, err := f.client.GetMetricSpec(ctx, ref(md))
			assertStatus(t, err, codes.InvalidArgument, []string{param, "--allowed-endpoints"}, "c2VjcmV0")
		}
	}
	_, err := f.client.GetMetricSpec(ctx, ref(metadata("cloud", "Private", "endpoint", "https://outside.example.net/")))
	assertStatus(t, err, codes.InvalidArgument, []string{"cloud: Private", "--allowed-endpoints"})
	if n := f.created.Load(); n != 0 {
		t.Errorf("%d scalers were built for refused endpoints", n)
	}
}

// The scaler's credentials are its operator's, not the gRPC caller's: with
// cloud: Private, the token resource and the Entra ID authority the caller
// names must be in --allowed-endpoints too, as the endpoint must (issue X).
// The listed destinations then work: they reach the in-tree scaler as its
// TriggerAuthentication's would.
func TestCallerCannotRedirectTheScalersCredentials(t *testing.T) {
	listed := func(o *serverOptions) {
		o.allowedEndpoints, _ = parseEndpointAllowList("gw.internal,login.gw.internal,cosmos.gw.internal", true)
	}
	f := newFixture(t, listed)
	f.env["SP_SECRET"] = "c2VjcmV0LWNsaWVudC1zZWNyZXQ="
	ctx := testContext(t)
	sp := []string{"connectionFromScalerEnv", "", "endpoint", "https://gw.internal/", "tenantId", "tenant-1", "clientId", "client-1",
		"clientSecretFromScalerEnv", "SP_SECRET", "cloud", "Private"}
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"authority of the caller's", []string{"cosmosDBResourceURL", "https://cosmos.gw.internal/", "activeDirectoryEndpoint", "https://outside.example.net/"}, "activeDirectoryEndpoint"},
		{"token for Resource Manager", []string{"cosmosDBResourceURL", "https://management.azure.com/", "activeDirectoryEndpoint", "https://login.gw.internal/"}, "cosmosDBResourceURL"},
		{"token for the caller's host", []string{"cosmosDBResourceURL", "https://outside.example.net", "activeDirectoryEndpoint", "https://login.gw.internal/"}, "cosmosDBResourceURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, ref(metadata(append(slices.Clone(sp), tc.extra...)...)))
			assertStatus(t, err, codes.InvalidArgument, []string{tc.want, "--allowed-endpoints"}, "c2VjcmV0")
		})
	}
	if n := f.created.Load(); n != 0 {
		t.Errorf("%d scalers were built for refused destinations", n)
	}
	// Every destination listed: the scaler is built (the poll itself would
	// need the private cloud).
	md := metadata(append(slices.Clone(sp), "cosmosDBResourceURL", "https://cosmos.gw.internal/", "activeDirectoryEndpoint", "https://login.gw.internal/")...)
	if _, err := f.client.GetMetricSpec(ctx, ref(md)); err != nil {
		t.Fatalf("listed private cloud refused: %v", err)
	}
	if n := f.created.Load(); n != 1 {
		t.Errorf("%d scalers built for the listed private cloud, want 1", n)
	}
}

// The external scaler's workload identity (podIdentityProvider
// azure-workload, and any podIdentityId the caller names among the
// identities federated with the scaler's service account) is its
// operator's, as KEDA's is in-tree: --allowed-endpoints, however broad,
// does not lend it to cloud: Private; a private cloud is cloud:
// AzureStackCloud with the scaler's own environment file
// (AZURE_ENVIRONMENT_FILEPATH); on a known cloud it goes only to that
// cloud's Cosmos DB hosts. The recording hosts (HTTPS and plain HTTP, both
// listed) see no request, and no scaler is built for a refused trigger.
func TestCallerCannotSendTheScalersWorkloadIdentity(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	recorder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" authorization="+strconv.FormatBool(r.Header.Get("Authorization") != ""))
		mu.Unlock()
		http.Error(w, "recording host", http.StatusUnauthorized)
	})
	outside, plain := httptest.NewTLSServer(recorder), httptest.NewServer(recorder)
	t.Cleanup(outside.Close)
	t.Cleanup(plain.Close)
	broad := func(o *serverOptions) {
		o.allowedEndpoints, _ = parseEndpointAllowList("listed.outside.example,listed-audience,127.0.0.1,*.documents.azure.com,*.documents.azure.us,*.cosmos.private.example,cosmos.private.example", true)
	}
	f := newFixture(t, broad)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_CLIENT_ID", "external-scaler")
	t.Setenv("AZURE_TENANT_ID", "tenant-wi")
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)
	environmentFile := filepath.Join(t.TempDir(), "environment.json")
	if err := os.WriteFile(environmentFile, []byte(`{"name": "AzureStackCloud", "cosmosDBDNSSuffix": "cosmos.private.example", "resourceIdentifiers": {"cosmosDB": "https://cosmos.private.example"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", environmentFile)
	ctx := testContext(t)
	workload := []string{"connectionFromScalerEnv", "", "podIdentityProvider", "azure-workload"}
	refused := func(t *testing.T, want []string, extra ...string) {
		t.Helper()
		for _, identity := range []string{"", "other-identity"} {
			md := metadata(append(append(slices.Clone(workload), "podIdentityId", identity), extra...)...)
			_, err := f.client.GetMetricSpec(ctx, ref(md))
			assertStatus(t, err, codes.InvalidArgument, want)
		}
	}
	const privateErr = "cloud: Private is not used with podIdentity azure-workload"
	t.Run("cloud: Private and an api:// audience, all listed", func(t *testing.T) {
		refused(t, []string{privateErr}, "endpoint", "https://listed.outside.example/", "cloud", "Private", "cosmosDBResourceURL", "api://listed-audience")
	})
	t.Run("cloud: Private at the recording host", func(t *testing.T) {
		refused(t, []string{privateErr}, "endpoint", outside.URL, "cloud", "Private", "cosmosDBResourceURL", outside.URL)
	})
	t.Run("public cloud, the recording host over https and over http", func(t *testing.T) {
		refused(t, []string{"endpoint: workload identity tokens are only sent to hosts under documents.azure.com"}, "endpoint", outside.URL)
		refused(t, []string{"endpoint: an account key or token is only sent over https"}, "endpoint", plain.URL)
	})
	t.Run("public cloud, another cloud's listed account", func(t *testing.T) {
		refused(t, []string{"endpoint: workload identity tokens are only sent to hosts under documents.azure.com"}, "endpoint", "https://shop.documents.azure.us/")
	})
	t.Run("the scaler's environment file is its private cloud, and only its suffix", func(t *testing.T) {
		refused(t, []string{"endpoint: workload identity tokens are only sent to hosts under cosmos.private.example"}, "endpoint", "https://listed.outside.example/", "cloud", "AzureStackCloud")
		if n := f.created.Load(); n != 0 {
			t.Fatalf("%d scalers were built for refused identities", n)
		}
		md := metadata(append(slices.Clone(workload), "endpoint", "https://shop.cosmos.private.example/", "cloud", "AzureStackCloud")...)
		if _, err := f.client.GetMetricSpec(ctx, ref(md)); err != nil {
			t.Fatalf("the environment file's private cloud refused: %v", err)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("the recording hosts saw %v", seen)
	}
	if n := f.created.Load(); n != 1 {
		t.Fatalf("%d scalers built, want 1 (the environment file's private cloud)", n)
	}
}

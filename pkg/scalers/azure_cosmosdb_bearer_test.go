package scalers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

const cosmosDBTestTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"

// newCosmosDBBearerEnv is an account that accepts only tokens for scope.
func newCosmosDBBearerEnv(t *testing.T, scope string) *cosmosEnv {
	t.Helper()
	srv := cosmostest.NewServer(cosmostest.WithTokenVerifier(cosmosDBTokenIssuer.Verifier(scope)))
	t.Cleanup(srv.Close)
	db := srv.CreateDatabase("appdb")
	env := &cosmosEnv{server: srv, monitored: db.CreateContainer("orders", "/customerId", 2), leases: db.CreateContainer("leases", "/id", 1)}
	env.processor = cosmostest.NewLeaseWriter("orders-processor", env.monitored, env.leases, cosmostest.DotNetV0)
	tokens, err := env.processor.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	env.tokens = tokens
	env.writeToRange(t, "1", 12)
	return env
}

func cosmosDBServicePrincipal(extra ...string) map[string]string {
	m := map[string]string{"tenantId": cosmosDBTestTenant, "clientId": "orders-scaler", "clientSecret": cosmosDBCanarySecret}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// A service principal in a private cloud: the token comes from the
// configured authority for "<cosmosDBResourceURL>/.default", once for the
// scaler's lifetime.
func TestCosmosDBServicePrincipalPrivateCloud(t *testing.T) {
	const resource = "https://cosmos.private.example"
	env := newCosmosDBBearerEnv(t, resource+"/.default")
	metadata := env.metadata("cloud", "Private", "cosmosDBResourceURL", resource, "activeDirectoryEndpoint", cosmosDBTokenIssuer.URL())
	before := cosmosDBTokenIssuer.TokenRequests()
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(metadata, cosmosDBServicePrincipal("endpoint", env.server.URL())))
	for i := 0; i < 3; i++ {
		if metric, _ := pollCosmosDB(t, s); metric != 12 {
			t.Fatalf("metric %d, want 12", metric)
		}
	}
	if n := cosmosDBTokenIssuer.TokenRequests() - before; n != 1 {
		t.Fatalf("%d token requests for 3 polls, want 1", n)
	}
	grants := cosmosDBTokenIssuer.Grants()
	if last := grants[len(grants)-1]; last.Scope != resource+"/.default" || last.Credential != "secret" || last.Tenant != cosmosDBTestTenant {
		t.Fatalf("grant %+v, want client secret for %s/.default", last, resource)
	}
}

// Workload identity wins over a configured service principal; the
// authority and federated token come from the webhook's environment.
func TestCosmosDBWorkloadIdentity(t *testing.T) {
	const resource = "https://cosmos.private.example"
	env := newCosmosDBBearerEnv(t, resource+"/.default")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_AUTHORITY_HOST", cosmosDBTokenIssuer.URL())
	t.Setenv("AZURE_TENANT_ID", cosmosDBTestTenant)
	t.Setenv("AZURE_CLIENT_ID", "workload-client")
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)

	config := cosmosDBScalerConfig(env.metadata("cloud", "Private", "cosmosDBResourceURL", resource), map[string]string{"endpoint": env.server.URL(), "clientSecret": cosmosDBCanarySecret})
	config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
	s := newCosmosDBTestScaler(t, config)
	if metric, _ := pollCosmosDB(t, s); metric != 12 {
		t.Fatalf("metric %d, want 12", metric)
	}
	grants := cosmosDBTokenIssuer.Grants()
	if last := grants[len(grants)-1]; last.Credential != "assertion" || last.ClientID != "workload-client" || last.Scope != resource+"/.default" {
		t.Fatalf("grant %+v, want a federated assertion for workload-client", last)
	}
}

// Account key for the data account, bearer token for a separate lease account.
func TestCosmosDBKeyForDataBearerForLease(t *testing.T) {
	const resource = "https://cosmos.private.example"
	data := newCosmosEnv(t, 1, lease.DotNetV0)
	data.writeToRange(t, "0", 9)
	leaseServer := cosmostest.NewServer(cosmostest.WithTokenVerifier(cosmosDBTokenIssuer.Verifier(resource + "/.default")))
	t.Cleanup(leaseServer.Close)
	leaseContainer := leaseServer.CreateDatabase("appdb").CreateContainer("leases", "/id", 1)
	p := cosmostest.NewLeaseWriter("orders-processor", data.monitored, leaseContainer, cosmostest.DotNetV0)
	if _, err := p.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Checkpoint("0", data.monitored.LSN("0")-9); err != nil {
		t.Fatal(err)
	}
	metadata := data.metadata("cloud", "Private", "cosmosDBResourceURL", resource, "activeDirectoryEndpoint", cosmosDBTokenIssuer.URL())
	auth := cosmosDBServicePrincipal("connection", data.server.ConnectionString(), "leaseEndpoint", leaseServer.URL())
	if metric, _ := pollCosmosDB(t, newCosmosDBTestScaler(t, cosmosDBScalerConfig(metadata, auth))); metric != 9 {
		t.Fatalf("metric %d, want 9", metric)
	}
	if leaseServer.Count(cosmostest.KindQuery) != 1 || data.server.Count(cosmostest.KindQuery) != 0 {
		t.Fatal("lease query did not go to the lease account")
	}
}

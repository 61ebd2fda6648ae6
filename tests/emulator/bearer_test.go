package emulator

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// newBearerEnv is an account that accepts only tokens for scope, served
// over HTTPS as host through the tests' proxy (no token goes over plain
// HTTP), with 12 items pending in range 1.
func newBearerEnv(t *testing.T, host, scope string) *cosmosEnv {
	t.Helper()
	srv := cosmostest.NewServer(cosmostest.WithTokenVerifier(tokenIssuer.Verifier(scope)))
	t.Cleanup(srv.Close)
	routeHost(t, host, srv.Handler)
	db := srv.Account.CreateDatabase("appdb")
	env := &cosmosEnv{server: srv, monitored: db.CreateContainer("orders", "/customerId", 2), leases: db.CreateContainer("leases", "/id", 1)}
	env.processor = leasetest.NewWriter("orders-processor", env.monitored, env.leases, dotNetV0)
	env.processor.AccountHost = host
	tokens, err := env.processor.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	env.tokens = tokens
	env.writeToRange(t, "1", 12)
	return env
}

func servicePrincipal(extra ...string) map[string]string {
	m := map[string]string{"tenantId": testTenant, "clientId": "orders-scaler", "clientSecret": canarySecret}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// A service principal in a private cloud: the token comes from the
// configured authority for "<cosmosDBResourceURL>/.default", once for the
// scaler's lifetime.
func TestServicePrincipalPrivateCloud(t *testing.T) {
	const resource = "https://cosmos.private.example"
	env := newBearerEnv(t, "sp.cosmos.private.example", resource+"/.default")
	auth := servicePrincipal("endpoint", "https://sp.cosmos.private.example/", "cloud", "Private", "cosmosDBResourceURL", resource, "activeDirectoryEndpoint", tokenIssuer.URL())
	before := tokenIssuer.TokenRequests()
	s := newScaler(t, scalerConfig(env.metadata(), auth))
	for range 3 {
		if metric, _ := poll(t, s); metric != 12 {
			t.Fatalf("metric %d, want 12", metric)
		}
	}
	if n := tokenIssuer.TokenRequests() - before; n != 1 {
		t.Fatalf("%d token requests for 3 polls, want 1", n)
	}
	grants := tokenIssuer.Grants()
	if last := grants[len(grants)-1]; last.Scope != resource+"/.default" || last.Credential != "secret" || last.Tenant != testTenant {
		t.Fatalf("grant %+v, want client secret for %s/.default", last, resource)
	}
}

// The known clouds take the token scope and the authority from KEDA's
// Azure environments: "https://cosmos.azure.com/.default", from each
// cloud's own Entra ID host (served by the test issuer through the proxy).
// cosmosDBResourceURL only counts for cloud: Private.
func TestServicePrincipalKnownClouds(t *testing.T) {
	env := newBearerEnv(t, "bearer.documents.azure.com", "https://cosmos.azure.com/.default")
	for _, tc := range []struct {
		name      string
		metadata  []string
		authority string
	}{
		{"default", nil, "login.microsoftonline.com"},
		{"AzurePublicCloud ignores cosmosDBResourceURL", []string{"cloud", "AzurePublicCloud", "cosmosDBResourceURL", "https://ignored.example"}, "login.microsoftonline.com"},
		{"AzureUSGovernmentCloud", []string{"cloud", "AzureUSGovernmentCloud"}, "login.microsoftonline.us"},
		{"azurechinacloud", []string{"cloud", "azurechinacloud"}, "login.chinacloudapi.cn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScaler(t, scalerConfig(env.metadata(tc.metadata...), servicePrincipal("endpoint", "https://bearer.documents.azure.com/")))
			if metric, _ := poll(t, s); metric != 12 {
				t.Fatalf("metric %d, want 12", metric)
			}
			grants := tokenIssuer.Grants()
			if last := grants[len(grants)-1]; last.Host != tc.authority || last.Scope != "https://cosmos.azure.com/.default" || last.Credential != "secret" {
				t.Fatalf("grant %+v, want a client secret grant from %s for https://cosmos.azure.com/.default", last, tc.authority)
			}
		})
	}
}

// Workload identity, through KEDA's chained credential, wins over a
// configured service principal; the client, tenant, authority and
// federated token come from the webhook's environment. On a known cloud
// its token is for that cloud's Cosmos DB audience.
func TestWorkloadIdentity(t *testing.T) {
	env := newBearerEnv(t, "wi.documents.azure.com", "https://cosmos.azure.com/.default")
	tokenIssuer.SetWorkloadIdentityEnv(t, testTenant, "workload-client")

	config := scalerConfig(env.metadata(), map[string]string{"endpoint": "https://wi.documents.azure.com/", "clientSecret": canarySecret, "cosmosDBResourceURL": "api://ignored"})
	config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
	s := newScaler(t, config)
	if metric, _ := poll(t, s); metric != 12 {
		t.Fatalf("metric %d, want 12", metric)
	}
	grants := tokenIssuer.Grants()
	if last := grants[len(grants)-1]; last.Credential != "assertion" || last.ClientID != "workload-client" || last.Scope != "https://cosmos.azure.com/.default" {
		t.Fatalf("grant %+v, want a federated assertion for workload-client", last)
	}
}

// A private cloud with workload identity is the KEDA operator's: cloud:
// AzureStackCloud reads its environment file (AZURE_ENVIRONMENT_FILEPATH),
// whose resourceIdentifiers.cosmosDB is the audience; the token comes from
// the webhook's AZURE_AUTHORITY_HOST, as for every KEDA workload identity.
func TestWorkloadIdentityPrivateCloud(t *testing.T) {
	const resource = "https://cosmos.private.example"
	env := newBearerEnv(t, "wi.cosmos.private.example", resource+"/.default")
	tokenIssuer.SetWorkloadIdentityEnv(t, testTenant, "workload-client")
	setAzureStackEnvironment(t, "cosmos.private.example", resource)

	config := scalerConfig(env.metadata(), map[string]string{"endpoint": "https://wi.cosmos.private.example/", "cloud": "AzureStackCloud"})
	config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
	s := newScaler(t, config)
	if metric, _ := poll(t, s); metric != 12 {
		t.Fatalf("metric %d, want 12", metric)
	}
	grants := tokenIssuer.Grants()
	if last := grants[len(grants)-1]; last.Credential != "assertion" || last.ClientID != "workload-client" || last.Scope != resource+"/.default" {
		t.Fatalf("grant %+v, want a federated assertion for workload-client for %s/.default", last, resource)
	}
}

// Account key for the data account, bearer token for a separate lease account.
func TestKeyForDataBearerForLease(t *testing.T) {
	const resource = "https://cosmos.private.example"
	data := newCosmosEnv(t, 1, dotNetV0)
	data.writeToRange(t, "0", 9)
	leaseServer := cosmostest.NewServer(cosmostest.WithTokenVerifier(tokenIssuer.Verifier(resource + "/.default")))
	t.Cleanup(leaseServer.Close)
	routeHost(t, "leases.cosmos.private.example", leaseServer.Handler)
	leaseContainer := leaseServer.Account.CreateDatabase("appdb").CreateContainer("leases", "/id", 1)
	p := leasetest.NewWriter("orders-processor", data.monitored, leaseContainer, dotNetV0)
	if _, err := p.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Checkpoint("0", data.monitored.LSN("0")-9); err != nil {
		t.Fatal(err)
	}
	auth := servicePrincipal("connection", data.server.ConnectionString(), "leaseEndpoint", "https://leases.cosmos.private.example/",
		"cloud", "Private", "cosmosDBResourceURL", resource, "activeDirectoryEndpoint", tokenIssuer.URL())
	if metric, _ := poll(t, newScaler(t, scalerConfig(data.metadata(), auth))); metric != 9 {
		t.Fatalf("metric %d, want 9", metric)
	}
	if leaseServer.Handler.Count(cosmostest.KindQuery) != 1 || data.server.Handler.Count(cosmostest.KindQuery) != 0 {
		t.Fatal("lease query did not go to the lease account")
	}
}

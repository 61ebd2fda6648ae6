package emulator

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// Where a key or token may go (pkg/scalers/azure/azure_cosmosdb_endpoint.go):
// a refused trigger fails at construction, naming the parameter, before any
// request. Hosts outside every Cosmos DB DNS suffix are served through the
// tests' CONNECT proxy (routeHost) by a recorder that keeps every request it
// gets; Cosmos DB names are routed to the embedded server the same way, so
// allowed cases run end to end.

// cosmosEmulatorKey is the Cosmos DB Emulator's published key.
const cosmosEmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// recorder is a host outside every Cosmos DB DNS suffix: it records every request and whether it
// carried an Authorization header, and answers 401.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.Host+req.URL.Path+" authorization="+boolString(req.Header.Get("Authorization") != ""))
	r.mu.Unlock()
	http.Error(w, "recording host", http.StatusUnauthorized)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func boolString(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// outsideHosts routes the names outside the suffixes that the refused cases use to one recorder.
func outsideHosts(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	for _, host := range []string{"outside.example.net", "shop.documents.azure.com.outside.example"} {
		routeHost(t, host, rec)
	}
	return rec
}

// The recorder is reachable by the scaler's own transport through the
// proxy: a connection string to it (allowed: the secret's owner chose the
// host) makes the scaler send it a signed request, which is recorded. So
// "the recording host saw no request" below means the scaler sent none.
func TestOutsideHostRecorderIsReachable(t *testing.T) {
	rec := outsideHosts(t)
	s := newScaler(t, scalerConfig(baseMetadata(), map[string]string{"connection": "AccountEndpoint=https://outside.example.net/;AccountKey=" + canaryKey}))
	pollError(t, s)
	got := rec.requests()
	if len(got) == 0 || !strings.HasPrefix(got[0], "GET outside.example.net/dbs/appdb authorization=yes") {
		t.Fatalf("recorded %v, want the scaler's signed database read", got)
	}
}

func TestCredentialDestinationsRefused(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0) // a real account for the parts that are allowed
	const outside = "https://outside.example.net/"
	const resource = "https://cosmos.private.example"
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		workload bool
		want     []string // the error names these
	}{
		// A TriggerAuthentication's key or service principal: outside the Cosmos DB DNS suffixes of KEDA's
		// Azure environments only to an endpoint the TriggerAuthentication gives.
		{"TriggerAuthentication key, endpoint from metadata outside the suffixes", env.metadata("endpoint", outside), map[string]string{"cosmosDBKey": canaryKey}, false,
			[]string{"endpoint: given in trigger metadata", "give endpoint in the TriggerAuthentication"}},
		{"TriggerAuthentication key, endpoint from metadata with port and upper case", env.metadata("endpoint", "https://OUTSIDE.example.net:443/"), map[string]string{"cosmosDBKey": canaryKey}, false, []string{"endpoint"}},
		{"TriggerAuthentication key, a Cosmos DB name as labels of another host", env.metadata("endpoint", "https://shop.documents.azure.com.outside.example/"), map[string]string{"cosmosDBKey": canaryKey}, false,
			[]string{"endpoint", "documents.azure.com"}},
		{"TriggerAuthentication lease key, leaseEndpoint from metadata", env.metadata("leaseEndpoint", outside),
			map[string]string{"connection": env.server.ConnectionString(), "leaseCosmosDBKey": canaryKey}, false, []string{"leaseEndpoint: given in trigger metadata"}},
		{"TriggerAuthentication service principal, endpoint from metadata", env.metadata("endpoint", outside), servicePrincipal(), false, []string{"endpoint: given in trigger metadata"}},
		{"TriggerAuthentication service principal, leaseEndpoint from metadata", env.metadata("leaseEndpoint", outside), servicePrincipal("connection", env.server.ConnectionString()), false,
			[]string{"leaseEndpoint: given in trigger metadata"}},
		{"TriggerAuthentication service principal, cloud: Private and activeDirectoryEndpoint from metadata", env.metadata("cloud", "Private", "activeDirectoryEndpoint", outside),
			servicePrincipal("endpoint", "https://shop.documents.azure.com/", "cosmosDBResourceURL", resource), false,
			[]string{"cloud: Private with the TriggerAuthentication's service principal needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication"}},
		{"TriggerAuthentication service principal and cloud: Private, activeDirectoryEndpoint from metadata", env.metadata("activeDirectoryEndpoint", outside),
			servicePrincipal("endpoint", "https://shop.documents.azure.com/", "cloud", "Private", "cosmosDBResourceURL", resource), false,
			[]string{"cloud: Private with the TriggerAuthentication's service principal needs"}},
		{"TriggerAuthentication service principal and cloud: Private, cosmosDBResourceURL from metadata", env.metadata("cosmosDBResourceURL", "https://management.azure.com/"),
			servicePrincipal("endpoint", "https://shop.documents.azure.com/", "cloud", "Private", "activeDirectoryEndpoint", tokenIssuer.URL()), false,
			[]string{"cloud: Private with the TriggerAuthentication's service principal needs"}},
		// No key or token over plain HTTP, loopback included: the account
		// (env.server, on loopback) records every request it gets.
		{"account key over plain http to another host", env.metadata(), map[string]string{"endpoint": "http://outside.example.net/", "cosmosDBKey": canaryKey}, false, []string{"endpoint", "https"}},
		{"account key over plain http to a Cosmos DB name", env.metadata(), map[string]string{"endpoint": "http://shop.documents.azure.com/", "cosmosDBKey": canaryKey}, false, []string{"endpoint", "https"}},
		{"account key over plain http to loopback", env.metadata(), map[string]string{"endpoint": env.server.URL(), "cosmosDBKey": canaryKey}, false, []string{"endpoint", "https"}},
		{"connection string over plain http to loopback", env.metadata(), map[string]string{"connection": "AccountEndpoint=" + env.server.URL() + ";AccountKey=" + canaryKey}, false, []string{"connection", "https"}},
		{"service principal over plain http to loopback", env.metadata(), servicePrincipal("endpoint", env.server.URL()), false, []string{"endpoint", "https"}},
		{"workload identity over plain http to loopback", env.metadata(), map[string]string{"endpoint": env.server.URL()}, true, []string{"endpoint", "https"}},
		// KEDA's workload identity: a cloud of KEDA's Azure environments and that cloud's Cosmos DB DNS suffix only.
		{"workload identity, endpoint outside the cloud's suffix", env.metadata(), map[string]string{"endpoint": outside}, true, []string{"endpoint", "documents.azure.com"}},
		{"workload identity, another cloud's account", env.metadata(), map[string]string{"endpoint": "https://shop.documents.azure.us/"}, true,
			[]string{"endpoint: workload identity tokens are only sent to hosts under documents.azure.com"}},
		{"workload identity, cloud: Private and an api:// audience from the TriggerAuthentication", env.metadata(),
			map[string]string{"endpoint": outside, "cloud": "Private", "cosmosDBResourceURL": "api://audience-from-trigger-authentication"}, true,
			[]string{"cloud: Private is not used with podIdentity azure-workload", "AzureStackCloud"}},
		{"workload identity, cloud: Private with the public resource", env.metadata(), map[string]string{"endpoint": outside, "cloud": "Private", "cosmosDBResourceURL": "https://cosmos.azure.com/"}, true,
			[]string{"cloud: Private is not used with podIdentity azure-workload"}},
		{"workload identity, cloud: Private and cosmosDBResourceURL from metadata", env.metadata("cloud", "Private", "cosmosDBResourceURL", resource),
			map[string]string{"endpoint": outside}, true, []string{"cloud: Private is not used with podIdentity azure-workload"}},
		{"workload identity, endpoint, cloud: Private and cosmosDBResourceURL all from metadata", env.metadata("endpoint", outside, "cloud", "Private", "cosmosDBResourceURL", resource),
			map[string]string{}, true, []string{"cloud: Private is not used with podIdentity azure-workload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := outsideHosts(t)
			tokenIssuer.SetWorkloadIdentityEnv(t, testTenant, "workload-client")
			config := scalerConfig(tc.metadata, tc.auth)
			if tc.workload {
				config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
			}
			tokensBefore := tokenIssuer.TokenRequests()
			env.server.Handler.ResetRequests()
			s, err := scalers.NewAzureCosmosDBScaler(config)
			if err == nil {
				_, _, pollErr := s.GetMetricsAndActivity(context.Background(), "s0-metric")
				_ = s.Close(context.Background())
				t.Fatalf("scaler built (poll: %v); recording host saw %v", pollErr, rec.requests())
			}
			assertMentions(t, err, tc.want...)
			if strings.Contains(err.Error(), canaryKey) || strings.Contains(err.Error(), canarySecret) {
				t.Fatalf("error quotes a secret: %v", err)
			}
			if got := rec.requests(); len(got) != 0 {
				t.Fatalf("the recording host saw %v", got)
			}
			if n := tokenIssuer.TokenRequests() - tokensBefore; n != 0 {
				t.Fatalf("%d token requests for a refused trigger", n)
			}
			if n := len(env.server.Handler.Requests()); n != 0 {
				t.Fatalf("the refused trigger sent %d requests to the account", n)
			}
		})
	}
}

// routedEnv is an account served through the proxy as host (the account
// name is host's first label), with the processor's leases naming
// leaseHost, 7 items pending in its one range.
func routedEnv(t *testing.T, host, leaseHost string, opts ...cosmostest.Option) *cosmosEnv {
	t.Helper()
	srv := cosmostest.NewServer(opts...)
	t.Cleanup(srv.Close)
	routeHost(t, host, srv.Handler)
	db := srv.Account.CreateDatabase("appdb")
	env := &cosmosEnv{server: srv, monitored: db.CreateContainer("orders", "/customerId", 1), leases: db.CreateContainer("leases", "/id", 1)}
	env.processor = leasetest.NewWriter("orders-processor", env.monitored, env.leases, dotNetV0)
	env.processor.AccountHost = leaseHost
	tokens, err := env.processor.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	env.tokens = tokens
	env.writeToRange(t, "0", 7)
	return env
}

func pollsSeven(t *testing.T, env *cosmosEnv, config *scalersconfig.ScalerConfig) {
	t.Helper()
	s := newScaler(t, config)
	env.server.Handler.ResetRequests()
	if metric, active := poll(t, s); metric != 7 || !active {
		t.Fatalf("metric %d active %v, want 7 true", metric, active)
	}
	if env.server.Handler.Count(cosmostest.KindChangeFeed) == 0 {
		t.Fatal("no change feed read reached the account")
	}
}

// Allowed cases work end to end.
func TestCredentialsAllowedEndpointsWork(t *testing.T) {
	t.Run("account key at a documents.azure.com name", func(t *testing.T) {
		env := routedEnv(t, "shop.documents.azure.com", "shop.documents.azure.com")
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://shop.documents.azure.com/", "cosmosDBKey": env.server.Key()}))
	})
	t.Run("account key at a regional name, processor on the regional name", func(t *testing.T) {
		env := routedEnv(t, "shop-westeurope.documents.azure.com", "shop-westeurope.documents.azure.com")
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://shop-westeurope.documents.azure.com:443/", "cosmosDBKey": env.server.Key()}))
	})
	t.Run("account key at the global name, processor on a regional name: its leases name another host", func(t *testing.T) {
		// The lease ids carry the host the processor was configured with;
		// the scaler counts those of its own endpoint's account name only
		// (shop-westeurope could as well be another account, shop-prod).
		env := routedEnv(t, "shop.documents.azure.com", "shop-westeurope.documents.azure.com")
		s := newScaler(t, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://shop.documents.azure.com/", "cosmosDBKey": env.server.Key()}))
		if metric, _ := poll(t, s); metric != 0 {
			t.Fatalf("metric %d, want 0: the regional host's leases are not this endpoint's", metric)
		}
	})
	t.Run("account key, host in upper case with a trailing dot", func(t *testing.T) {
		env := routedEnv(t, "shop.documents.azure.com", "shop.documents.azure.com")
		config := scalerConfig(env.metadata(), map[string]string{"endpoint": "https://SHOP.Documents.Azure.COM./", "cosmosDBKey": env.server.Key()})
		s, err := scalers.NewAzureCosmosDBScaler(config)
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		_ = s.Close(context.Background())
	})
	t.Run("connection string to any host", func(t *testing.T) {
		env := routedEnv(t, "cosmos.gateway.example", "cosmos.gateway.example")
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"connection": "AccountEndpoint=https://cosmos.gateway.example/;AccountKey=" + env.server.Key() + ";"}))
	})
	t.Run("the emulator's published key at a non-loopback name", func(t *testing.T) {
		env := routedEnv(t, "cosmos-emulator.cosmos.svc", "cosmos-emulator.cosmos.svc", cosmostest.WithKey(cosmosEmulatorKey))
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://cosmos-emulator.cosmos.svc/", "cosmosDBKey": cosmosEmulatorKey}))
	})
	t.Run("the emulator's published key over plain http to loopback", func(t *testing.T) {
		env := newCosmosEnv(t, 1, dotNetV0)
		env.writeToRange(t, "0", 7)
		endpoint := strings.Replace(env.server.URL(), "127.0.0.1", "localhost", 1)
		env.processor.AccountHost = "localhost"
		if _, err := env.processor.CreateLeases(true); err != nil {
			t.Fatal(err)
		}
		if err := env.processor.Checkpoint("0", 0); err != nil {
			t.Fatal(err)
		}
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": endpoint, "cosmosDBKey": env.server.Key()}))
	})
	t.Run("account key at a US Government name without cloud", func(t *testing.T) {
		env := routedEnv(t, "shop.documents.azure.us", "shop.documents.azure.us")
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://shop.documents.azure.us:443/", "cosmosDBKey": env.server.Key()}))
	})
	t.Run("account key at a public name with cloud AzureUSGovernmentCloud", func(t *testing.T) {
		env := routedEnv(t, "shop.documents.azure.com", "shop.documents.azure.com")
		pollsSeven(t, env, scalerConfig(env.metadata("cloud", "AzureUSGovernmentCloud"), map[string]string{"endpoint": "https://shop.documents.azure.com/", "cosmosDBKey": env.server.Key()}))
	})
	t.Run("account key at a Cosmos DB in Fabric name", func(t *testing.T) {
		config := scalerConfig(baseMetadata(), map[string]string{"endpoint": "https://0a1b2c3d.z12.sql.cosmos.fabric.microsoft.com:443/", "cosmosDBKey": canaryKey})
		s, err := scalers.NewAzureCosmosDBScaler(config)
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		_ = s.Close(context.Background())
	})
	t.Run("cloud Private, account key at any https host", func(t *testing.T) {
		env := routedEnv(t, "cosmos.private.example", "cosmos.private.example")
		pollsSeven(t, env, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://cosmos.private.example/", "cosmosDBKey": env.server.Key(), "cloud": "Private"}))
	})
	t.Run("service principal at a documents.azure.com name", func(t *testing.T) {
		env := routedEnv(t, "tokens.documents.azure.com", "tokens.documents.azure.com",
			cosmostest.WithTokenVerifier(tokenIssuer.Verifier("https://cosmos.azure.com/.default")))
		pollsSeven(t, env, scalerConfig(env.metadata(), servicePrincipal("endpoint", "https://tokens.documents.azure.com/")))
		grants := tokenIssuer.Grants()
		if last := grants[len(grants)-1]; last.Host != "login.microsoftonline.com" || last.Scope != "https://cosmos.azure.com/.default" {
			t.Fatalf("grant %+v", last)
		}
	})
}

// What the credential's owner directs works: a private cloud given in the
// TriggerAuthentication, and a key from the workload's own environment
// directed by the metadata.
func TestCredentialOwnersDirectPrivateClouds(t *testing.T) {
	const resource = "https://cosmos.private.example"
	t.Run("service principal with the private cloud in the TriggerAuthentication", func(t *testing.T) {
		env := routedEnv(t, "shop.cosmos.private.example", "shop.cosmos.private.example", cosmostest.WithTokenVerifier(tokenIssuer.Verifier(resource+"/.default")))
		pollsSeven(t, env, scalerConfig(env.metadata(), servicePrincipal("endpoint", "https://shop.cosmos.private.example/",
			"cloud", "Private", "cosmosDBResourceURL", resource, "activeDirectoryEndpoint", "https://login.private.example/")))
		grants := tokenIssuer.Grants()
		if last := grants[len(grants)-1]; last.Host != "login.private.example" || last.Scope != resource+"/.default" {
			t.Fatalf("grant %+v, want one from login.private.example for %s/.default", last, resource)
		}
	})
	t.Run("workload identity in the KEDA operator's private cloud: cloud: AzureStackCloud and its environment file", func(t *testing.T) {
		env := routedEnv(t, "wi.cosmos.private.example", "wi.cosmos.private.example", cosmostest.WithTokenVerifier(tokenIssuer.Verifier(resource+"/.default")))
		tokenIssuer.SetWorkloadIdentityEnv(t, testTenant, "workload-client")
		setAzureStackEnvironment(t, "cosmos.private.example", resource)
		config := scalerConfig(env.metadata("cloud", "AzureStackCloud", "cosmosDBResourceURL", "api://audience-from-trigger-metadata"),
			map[string]string{"endpoint": "https://wi.cosmos.private.example/"})
		config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
		pollsSeven(t, env, config)
		grants := tokenIssuer.Grants()
		if last := grants[len(grants)-1]; last.Scope != resource+"/.default" {
			t.Fatalf("grant %+v, want one for the environment file's audience %s/.default", last, resource)
		}
	})
	t.Run("key from the workload's environment, private endpoint and cloud in metadata", func(t *testing.T) {
		env := routedEnv(t, "env.cosmos.private.example", "env.cosmos.private.example")
		config := scalerConfig(env.metadata("endpoint", "https://env.cosmos.private.example/", "cloud", "Private", "cosmosDBKeyFromEnv", "COSMOS_KEY"), nil)
		config.ResolvedEnv = map[string]string{"COSMOS_KEY": env.server.Key()}
		pollsSeven(t, env, config)
	})
}

// setAzureStackEnvironment points the KEDA operator's AZURE_ENVIRONMENT_FILEPATH
// at an environment whose Cosmos DB DNS suffix and audience are these.
func setAzureStackEnvironment(t *testing.T, suffix, audience string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "environment.json")
	content := fmt.Sprintf(`{"name": "AzureStackCloud", "cosmosDBDNSSuffix": %q, "activeDirectoryEndpoint": "https://login.private.example/", "resourceIdentifiers": {"cosmosDB": %q}}`, suffix, audience)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", file)
}

// With cloud: AzureStackCloud, KEDA's workload identity goes to the hosts
// under the operator's environment file's Cosmos DB DNS suffix only, wherever
// the trigger or its TriggerAuthentication points it: the recording host
// sees nothing and no token is requested.
func TestWorkloadIdentityStaysInTheOperatorsPrivateCloud(t *testing.T) {
	const outside = "https://outside.example.net/"
	tokenIssuer.SetWorkloadIdentityEnv(t, testTenant, "workload-client")
	setAzureStackEnvironment(t, "cosmos.private.example", "https://cosmos.private.example")
	other := "other-identity"
	const suffixErr = "workload identity tokens are only sent to hosts under cosmos.private.example"
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		want     []string
	}{
		{"endpoint outside the file's suffix in the TriggerAuthentication", baseMetadata("cloud", "AzureStackCloud"), map[string]string{"endpoint": outside}, []string{"endpoint: " + suffixErr}},
		{"leaseEndpoint outside the file's suffix in metadata", baseMetadata("leaseEndpoint", outside), map[string]string{"endpoint": "https://shop.cosmos.private.example/", "cloud": "AzureStackCloud"},
			[]string{"leaseEndpoint: " + suffixErr}},
		{"a public account with cloud: AzureStackCloud", baseMetadata(), map[string]string{"endpoint": "https://shop.documents.azure.com/", "cloud": "AzureStackCloud"}, []string{"endpoint: " + suffixErr}},
	} {
		for _, identity := range []*string{nil, &other} {
			t.Run(fmt.Sprintf("%s, identityId %v", tc.name, identity != nil), func(t *testing.T) {
				rec := outsideHosts(t)
				config := scalerConfig(tc.metadata, tc.auth)
				config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload, IdentityID: identity}
				tokensBefore := tokenIssuer.TokenRequests()
				s, err := scalers.NewAzureCosmosDBScaler(config)
				if err == nil {
					_, _, pollErr := s.GetMetricsAndActivity(context.Background(), "s0-metric")
					_ = s.Close(context.Background())
					t.Fatalf("scaler built (poll: %v); recording host saw %v", pollErr, rec.requests())
				}
				assertMentions(t, err, tc.want...)
				if got := rec.requests(); len(got) != 0 {
					t.Fatalf("the recording host saw %v", got)
				}
				if n := tokenIssuer.TokenRequests() - tokensBefore; n != 0 {
					t.Fatalf("%d token requests for a refused trigger", n)
				}
			})
		}
	}
}

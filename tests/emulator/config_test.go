package emulator

import (
	"context"
	"strings"
	"testing"

	v2 "k8s.io/api/autoscaling/v2"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Every invalid configuration fails at construction with an error naming
// the parameter, and no secret value appears in it.
func TestConfigurationErrors(t *testing.T) {
	endpoint := "https://myaccount.documents.azure.com:443/"
	goodConnection := "AccountEndpoint=" + endpoint + ";AccountKey=" + canaryKey + ";"
	keyAuthParams := map[string]string{"connection": goodConnection}
	cases := []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		mention  string
	}{
		{"missing databaseId", baseMetadata("databaseId", ""), keyAuthParams, "databaseId"},
		{"missing containerId", baseMetadata("containerId", ""), keyAuthParams, "containerId"},
		{"missing leaseDatabaseId", baseMetadata("leaseDatabaseId", ""), keyAuthParams, "leaseDatabaseId"},
		{"missing leaseContainerId", baseMetadata("leaseContainerId", ""), keyAuthParams, "leaseContainerId"},
		{"missing processorName", baseMetadata("processorName", ""), keyAuthParams, "processorName"},
		{"id with slash", baseMetadata("containerId", "a/b"), keyAuthParams, "containerId"},
		{"threshold zero", baseMetadata("changeFeedLagThreshold", "0"), keyAuthParams, "changeFeedLagThreshold"},
		{"threshold negative", baseMetadata("changeFeedLagThreshold", "-5"), keyAuthParams, "changeFeedLagThreshold"},
		{"threshold not a number", baseMetadata("changeFeedLagThreshold", "lots"), keyAuthParams, "changeFeedLagThreshold"},
		{"activation negative", baseMetadata("activationChangeFeedLagThreshold", "-1"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"activation equal to threshold", baseMetadata("activationChangeFeedLagThreshold", "100"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"activation above threshold", baseMetadata("changeFeedLagThreshold", "10", "activationChangeFeedLagThreshold", "50"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"unknown cloud", baseMetadata("cloud", "Moon"), keyAuthParams, "cloud"},
		{"no account at all", baseMetadata(), map[string]string{}, "endpoint"},
		{"connection without key", baseMetadata(), map[string]string{"connection": "AccountEndpoint=" + endpoint}, "connection"},
		{"connection without endpoint", baseMetadata(), map[string]string{"connection": "AccountKey=" + canaryKey}, "connection"},
		{"connection garbage", baseMetadata(), map[string]string{"connection": "not-a-connection-string " + canaryKey}, "connection"},
		{"connection bad scheme", baseMetadata(), map[string]string{"connection": "AccountEndpoint=ftp://x.documents.azure.com/;AccountKey=" + canaryKey}, "connection"},
		{"connection key not base64", baseMetadata(), map[string]string{"connection": "AccountEndpoint=" + endpoint + ";AccountKey=" + canarySecret}, "connection"},
		{"endpoint not a URL", baseMetadata(), map[string]string{"endpoint": "::myaccount", "cosmosDBKey": canaryKey}, "endpoint"},
		{"endpoint with path", baseMetadata(), map[string]string{"endpoint": endpoint + "dbs/x", "cosmosDBKey": canaryKey}, "endpoint"},
		{"key not base64", baseMetadata(), map[string]string{"endpoint": endpoint, "cosmosDBKey": canarySecret}, "cosmosDBKey"},
		{"key without endpoint", baseMetadata(), map[string]string{"cosmosDBKey": canaryKey}, "cosmosDBKey"},
		{"lease key without lease endpoint", baseMetadata(), map[string]string{"connection": goodConnection, "leaseCosmosDBKey": canaryKey}, "leaseCosmosDBKey"},
		{"lease connection malformed", baseMetadata(), map[string]string{"connection": goodConnection, "leaseConnection": "AccountKey=" + canaryKey}, "leaseConnection"},
		{"lease key not base64", baseMetadata(), map[string]string{"connection": goodConnection, "leaseEndpoint": endpoint, "leaseCosmosDBKey": canarySecret}, "leaseCosmosDBKey"},
		{"endpoint without any credential", baseMetadata(), map[string]string{"endpoint": endpoint}, "tenantId"},
		{"partial service principal", baseMetadata(), map[string]string{"endpoint": endpoint, "tenantId": testTenant, "clientSecret": canarySecret}, "clientId"},
		{"private cloud without resource URL", baseMetadata("cloud", "Private"), map[string]string{"endpoint": endpoint, "tenantId": testTenant, "clientId": "app", "clientSecret": canarySecret}, "cosmosDBResourceURL"},
		{"private cloud service principal without authority", baseMetadata(), map[string]string{"endpoint": endpoint, "tenantId": testTenant, "clientId": "app", "clientSecret": canarySecret, "cloud": "Private", "cosmosDBResourceURL": "https://cosmos.private.example"}, "activeDirectoryEndpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(tc.metadata, tc.auth))
			if err == nil {
				t.Fatal("construction succeeded, want an error")
			}
			assertMentions(t, err, tc.mention)
			for _, secret := range []string{canaryKey, canarySecret, "CANARY"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks a secret: %v", err)
				}
			}
		})
	}
}

// With an account key for every account, bearer-token parameters are not
// used and not checked, as in KEDA v2.21.0: a partial service principal
// beside keys (say only tenantId) is accepted and the keys are used.
func TestPartialServicePrincipalBesideKeysIsIgnored(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	env.writeToRange(t, "0", 4)
	for name, extra := range map[string]map[string]string{
		"only tenantId":      {"tenantId": testTenant},
		"only clientId":      {"clientId": "app"},
		"only clientSecret":  {"clientSecret": canarySecret},
		"tenantId, clientId": {"tenantId": testTenant, "clientId": "app"},
	} {
		t.Run(name, func(t *testing.T) {
			for accounts, auth := range map[string]map[string]string{
				"one account": {"connection": env.server.ConnectionString()},
				"lease account with its own key": {"connection": env.server.ConnectionString(),
					"leaseEndpoint": env.server.URL(), "leaseCosmosDBKey": env.server.Key()},
			} {
				for k, v := range extra {
					auth[k] = v
				}
				if metric, _ := poll(t, newScaler(t, scalerConfig(env.metadata(), auth))); metric != 4 {
					t.Fatalf("%s: metric %d, want 4", accounts, metric)
				}
			}
		})
	}
}

func TestUtilizationMetricTypeIsRejected(t *testing.T) {
	config := scalerConfig(baseMetadata(), canaryAuth())
	config.MetricType = v2.UtilizationMetricType
	if _, err := scalers.NewAzureCosmosDBScaler(config); err == nil {
		t.Fatal("Utilization accepted")
	}
}

func TestUnsupportedPodIdentityIsRejected(t *testing.T) {
	config := scalerConfig(baseMetadata(), map[string]string{"endpoint": "https://a.documents.azure.com/"})
	config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAws}
	_, err := scalers.NewAzureCosmosDBScaler(config)
	if err == nil {
		t.Fatal("aws pod identity accepted for Cosmos DB")
	}
	assertMentions(t, err, "podIdentity")
}

// A value echoed in an error is whole up to Cosmos DB's id limit (255
// characters, however many bytes), else its first 32 characters, cut on a
// character boundary, and its length in bytes.
func TestErrorsExcerptLongValues(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"short", "orders", `"orders"`},
		{"255 characters are whole", strings.Repeat("a", 255), `"` + strings.Repeat("a", 255) + `"`},
		{"255 multi-byte characters are whole", strings.Repeat("é", 255), `"` + strings.Repeat("é", 255) + `"`},
		{"one character over", strings.Repeat("a", 256), `"` + strings.Repeat("a", 32) + `… (256 bytes)"`},
		{"1 MiB", strings.Repeat("a", 1<<20), `"` + strings.Repeat("a", 32) + `… (1048576 bytes)"`},
		{"cut on a character boundary", strings.Repeat("€", 300), `"` + strings.Repeat("€", 32) + `… (900 bytes)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := scalerConfig(baseMetadata(), map[string]string{"endpoint": "https://a.documents.azure.com/"})
			config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProvider(tc.value)}
			_, err := scalers.NewAzureCosmosDBScaler(config)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), "provider "+tc.want+" is not supported") {
				t.Fatalf("error %.400q does not quote the provider as %.80q", err, tc.want)
			}
		})
	}
}

// Defaults: threshold 100, activation 0, AverageValue; the metric name is
// KEDA v2.21.0's: the s<index>- prefix on azure-cosmosdb-<leaseContainerId>-
// <processorName>, normalised, so dashboards and alerts survive the upgrade.
func TestMetricSpec(t *testing.T) {
	config := scalerConfig(baseMetadata("leaseContainerId", "Leases_1", "processorName", "orders.processor:v2"), canaryAuth())
	config.TriggerIndex = 3
	s := newScaler(t, config)
	specs := s.GetMetricSpecForScaling(context.Background())
	if len(specs) != 1 || specs[0].External == nil || specs[0].Type != v2.ExternalMetricSourceType {
		t.Fatalf("specs %+v, want one external metric", specs)
	}
	if got, want := specs[0].External.Metric.Name, "s3-azure-cosmosdb-Leases_1-orders-processor-v2"; got != want {
		t.Fatalf("metric name %q, want %q", got, want)
	}
	if specs[0].External.Target.Type != v2.AverageValueMetricType || metricTarget(specs[0]) != 100 {
		t.Fatalf("target %+v, want AverageValue 100", specs[0].External.Target)
	}

	config = scalerConfig(baseMetadata("changeFeedLagThreshold", "25"), canaryAuth())
	config.MetricType = v2.ValueMetricType
	specs = newScaler(t, config).GetMetricSpecForScaling(context.Background())
	if specs[0].External.Target.Type != v2.ValueMetricType || metricTarget(specs[0]) != 25 {
		t.Fatalf("target %+v, want Value 25", specs[0].External.Target)
	}
}

// Credential sources and their precedence, proven by which key the
// embedded account accepts.
func TestCredentialPrecedence(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	env.writeToRange(t, "0", 4)
	wrongKey := canaryKey
	cases := []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		env      map[string]string
	}{
		{"connection from TriggerAuthentication", env.metadata(), map[string]string{"connection": env.server.ConnectionString()}, nil},
		{"connection from trigger metadata", env.metadata("connection", env.server.ConnectionString()), nil, nil},
		{"connectionFromEnv", env.metadata("connectionFromEnv", "COSMOS"), nil, map[string]string{"COSMOS": env.server.ConnectionString()}},
		// As in KEDA v2.21.0: the environment before plain trigger metadata.
		{"environment wins over trigger metadata", env.metadata("connectionFromEnv", "COSMOS", "connection", "AccountEndpoint="+env.server.URL()+";AccountKey="+wrongKey),
			nil, map[string]string{"COSMOS": env.server.ConnectionString()}},
		{"cosmosDBKeyFromEnv wins over trigger metadata", env.metadata("cosmosDBKeyFromEnv", "KEY", "cosmosDBKey", wrongKey),
			map[string]string{"endpoint": env.server.URL()}, map[string]string{"KEY": env.server.Key()}},
		{"TriggerAuthentication wins over trigger metadata", env.metadata("connection", "AccountEndpoint="+env.server.URL()+";AccountKey="+wrongKey),
			map[string]string{"connection": env.server.ConnectionString()}, nil},
		{"TriggerAuthentication wins over environment", env.metadata("connectionFromEnv", "COSMOS"),
			map[string]string{"connection": env.server.ConnectionString()},
			map[string]string{"COSMOS": "AccountEndpoint=" + env.server.URL() + ";AccountKey=" + wrongKey}},
		{"connection wins over endpoint and key", env.metadata(),
			map[string]string{"connection": env.server.ConnectionString(), "endpoint": env.server.URL(), "cosmosDBKey": wrongKey}, nil},
		{"endpoint and key", env.metadata(), map[string]string{"endpoint": env.server.URL(), "cosmosDBKey": env.server.Key()}, nil},
		{"endpoint and cosmosDBKeyFromEnv", env.metadata("cosmosDBKeyFromEnv", "KEY"), map[string]string{"endpoint": env.server.URL()}, map[string]string{"KEY": env.server.Key()}},
		{"keys win over a configured service principal", env.metadata(),
			map[string]string{"connection": env.server.ConnectionString(), "tenantId": testTenant, "clientId": "app", "clientSecret": canarySecret}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			config := scalerConfig(tc.metadata, tc.auth)
			if tc.env != nil {
				config.ResolvedEnv = tc.env
			}
			if metric, _ := poll(t, newScaler(t, config)); metric != 4 {
				t.Fatalf("metric %d, want 4", metric)
			}
		})
	}
}

// Separate data and lease accounts, each with its own key; and a lease
// account that inherits nothing when configured.
func TestSeparateLeaseAccount(t *testing.T) {
	data := newCosmosEnv(t, 2, dotNetV0)
	data.writeToRange(t, "1", 6)
	leaseServer := cosmostest.NewServer(cosmostest.WithAccountName("leaseaccount"))
	t.Cleanup(leaseServer.Close)
	leaseContainer := leaseServer.Account.CreateDatabase("meta").CreateContainer("leases", "/id", 1)
	p := leasetest.NewWriter("orders-processor", data.monitored, leaseContainer, dotNetV0)
	if _, err := p.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"0", "1"} {
		if err := p.Checkpoint(tok, data.monitored.LSN(tok)-map[string]int64{"0": 0, "1": 6}[tok]); err != nil {
			t.Fatal(err)
		}
	}
	metadata := data.metadata("leaseDatabaseId", "meta")
	for name, auth := range map[string]map[string]string{
		"leaseConnection":                  {"connection": data.server.ConnectionString(), "leaseConnection": leaseServer.ConnectionString()},
		"leaseEndpoint + leaseCosmosDBKey": {"endpoint": data.server.URL(), "cosmosDBKey": data.server.Key(), "leaseEndpoint": leaseServer.URL(), "leaseCosmosDBKey": leaseServer.Key()},
	} {
		t.Run(name, func(t *testing.T) {
			if metric, _ := poll(t, newScaler(t, scalerConfig(metadata, auth))); metric != 6 {
				t.Fatalf("metric %d, want 6", metric)
			}
		})
	}
	// A lease endpoint without its own key does not borrow the data key.
	auth := map[string]string{"connection": data.server.ConnectionString(), "leaseEndpoint": leaseServer.URL()}
	if _, err := scalers.NewAzureCosmosDBScaler(scalerConfig(metadata, auth)); err == nil {
		t.Fatal("lease endpoint without key or bearer credential accepted")
	}
}

// cloud: Private needs cosmosDBResourceURL only to request tokens: a
// connection string or account key reads the account without one.
func TestPrivateCloudKeysNeedNoResourceURL(t *testing.T) {
	endpoint := "https://shop.documents.azure.example:443/"
	for name, auth := range map[string]map[string]string{
		"connection string": {"connection": "AccountEndpoint=" + endpoint + ";AccountKey=" + canaryKey, "cloud": "Private"},
		"endpoint and key":  {"endpoint": endpoint, "cosmosDBKey": canaryKey, "cloud": "Private"},
	} {
		if _, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata(), auth)); err != nil {
			t.Errorf("%s with cloud: Private and no cosmosDBResourceURL: %v", name, err)
		}
	}
}

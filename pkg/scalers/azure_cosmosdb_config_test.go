package scalers

import (
	"context"
	"strings"
	"testing"

	v2 "k8s.io/api/autoscaling/v2"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

const cosmosDBCanaryKey = "Q0FOQVJZLXNlY3JldC1rZXktZG8tbm90LWxlYWs=" // base64 of a recognisable secret
const cosmosDBCanarySecret = "CANARY-client-secret-do-not-leak"

func cosmosDBBaseMetadata(extra ...string) map[string]string {
	m := map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
		"leaseContainerId": "leases", "processorName": "orders-processor",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			delete(m, extra[i])
			continue
		}
		m[extra[i]] = extra[i+1]
	}
	return m
}

// Every invalid configuration fails at construction with an error naming
// the parameter, and no secret value appears in it.
func TestCosmosDBConfigurationErrors(t *testing.T) {
	endpoint := "https://myaccount.documents.azure.com:443/"
	goodConnection := "AccountEndpoint=" + endpoint + ";AccountKey=" + cosmosDBCanaryKey + ";"
	keyAuthParams := map[string]string{"connection": goodConnection}
	cases := []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
		mention  string
	}{
		{"missing databaseId", cosmosDBBaseMetadata("databaseId", ""), keyAuthParams, "databaseId"},
		{"missing containerId", cosmosDBBaseMetadata("containerId", ""), keyAuthParams, "containerId"},
		{"missing leaseDatabaseId", cosmosDBBaseMetadata("leaseDatabaseId", ""), keyAuthParams, "leaseDatabaseId"},
		{"missing leaseContainerId", cosmosDBBaseMetadata("leaseContainerId", ""), keyAuthParams, "leaseContainerId"},
		{"missing processorName", cosmosDBBaseMetadata("processorName", ""), keyAuthParams, "processorName"},
		{"id with slash", cosmosDBBaseMetadata("containerId", "a/b"), keyAuthParams, "containerId"},
		{"threshold zero", cosmosDBBaseMetadata("changeFeedLagThreshold", "0"), keyAuthParams, "changeFeedLagThreshold"},
		{"threshold negative", cosmosDBBaseMetadata("changeFeedLagThreshold", "-5"), keyAuthParams, "changeFeedLagThreshold"},
		{"threshold not a number", cosmosDBBaseMetadata("changeFeedLagThreshold", "lots"), keyAuthParams, "changeFeedLagThreshold"},
		{"activation negative", cosmosDBBaseMetadata("activationChangeFeedLagThreshold", "-1"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"activation equal to threshold", cosmosDBBaseMetadata("activationChangeFeedLagThreshold", "100"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"activation above threshold", cosmosDBBaseMetadata("changeFeedLagThreshold", "10", "activationChangeFeedLagThreshold", "50"), keyAuthParams, "activationChangeFeedLagThreshold"},
		{"unknown cloud", cosmosDBBaseMetadata("cloud", "Moon"), keyAuthParams, "cloud"},
		{"no account at all", cosmosDBBaseMetadata(), map[string]string{}, "endpoint"},
		{"connection without key", cosmosDBBaseMetadata(), map[string]string{"connection": "AccountEndpoint=" + endpoint}, "connection"},
		{"connection without endpoint", cosmosDBBaseMetadata(), map[string]string{"connection": "AccountKey=" + cosmosDBCanaryKey}, "connection"},
		{"connection garbage", cosmosDBBaseMetadata(), map[string]string{"connection": "not-a-connection-string " + cosmosDBCanaryKey}, "connection"},
		{"connection bad scheme", cosmosDBBaseMetadata(), map[string]string{"connection": "AccountEndpoint=ftp://x.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey}, "connection"},
		{"connection key not base64", cosmosDBBaseMetadata(), map[string]string{"connection": "AccountEndpoint=" + endpoint + ";AccountKey=" + cosmosDBCanarySecret}, "connection"},
		{"endpoint not a URL", cosmosDBBaseMetadata(), map[string]string{"endpoint": "::myaccount", "cosmosDBKey": cosmosDBCanaryKey}, "endpoint"},
		{"endpoint with path", cosmosDBBaseMetadata(), map[string]string{"endpoint": endpoint + "dbs/x", "cosmosDBKey": cosmosDBCanaryKey}, "endpoint"},
		{"key not base64", cosmosDBBaseMetadata(), map[string]string{"endpoint": endpoint, "cosmosDBKey": cosmosDBCanarySecret}, "cosmosDBKey"},
		{"key without endpoint", cosmosDBBaseMetadata(), map[string]string{"cosmosDBKey": cosmosDBCanaryKey}, "cosmosDBKey"},
		{"lease key without lease endpoint", cosmosDBBaseMetadata(), map[string]string{"connection": goodConnection, "leaseCosmosDBKey": cosmosDBCanaryKey}, "leaseCosmosDBKey"},
		{"lease connection malformed", cosmosDBBaseMetadata(), map[string]string{"connection": goodConnection, "leaseConnection": "AccountKey=" + cosmosDBCanaryKey}, "leaseConnection"},
		{"lease key not base64", cosmosDBBaseMetadata(), map[string]string{"connection": goodConnection, "leaseEndpoint": endpoint, "leaseCosmosDBKey": cosmosDBCanarySecret}, "leaseCosmosDBKey"},
		{"endpoint without any credential", cosmosDBBaseMetadata(), map[string]string{"endpoint": endpoint}, "tenantId"},
		{"partial service principal", cosmosDBBaseMetadata(), map[string]string{"endpoint": endpoint, "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientSecret": cosmosDBCanarySecret}, "clientId"},
		{"partial service principal even with keys", cosmosDBBaseMetadata(), map[string]string{"connection": goodConnection, "clientId": "app"}, "tenantId"},
		{"private cloud without resource URL", cosmosDBBaseMetadata("cloud", "Private"), map[string]string{"endpoint": endpoint, "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "app", "clientSecret": cosmosDBCanarySecret}, "cosmosDBResourceURL"},
		{"private cloud service principal without authority", cosmosDBBaseMetadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example"), map[string]string{"endpoint": endpoint, "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "app", "clientSecret": cosmosDBCanarySecret}, "activeDirectoryEndpoint"},
		{"private cloud resource URL not https", cosmosDBBaseMetadata("cloud", "Private", "cosmosDBResourceURL", "http://cosmos.private.example", "activeDirectoryEndpoint", "https://login.private.example/"), map[string]string{"endpoint": endpoint, "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "app", "clientSecret": cosmosDBCanarySecret}, "cosmosDBResourceURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(tc.metadata, tc.auth))
			if err == nil {
				t.Fatal("construction succeeded, want an error")
			}
			assertCosmosDBError(t, err, tc.mention)
			for _, secret := range []string{cosmosDBCanaryKey, cosmosDBCanarySecret, "CANARY"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks a secret: %v", err)
				}
			}
		})
	}
}

func TestCosmosDBUtilizationMetricTypeIsRejected(t *testing.T) {
	config := cosmosDBScalerConfig(cosmosDBBaseMetadata(), map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey})
	config.MetricType = v2.UtilizationMetricType
	if _, err := NewAzureCosmosDBScaler(config); err == nil {
		t.Fatal("Utilization accepted")
	}
}

func TestCosmosDBUnsupportedPodIdentityIsRejected(t *testing.T) {
	config := cosmosDBScalerConfig(cosmosDBBaseMetadata(), map[string]string{"endpoint": "https://a.documents.azure.com/"})
	config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAws}
	_, err := NewAzureCosmosDBScaler(config)
	if err == nil {
		t.Fatal("aws pod identity accepted for Cosmos DB")
	}
	assertCosmosDBError(t, err, "podIdentity")
}

// Defaults: threshold 100, activation 0, AverageValue; the metric name is
// KEDA v2.21.0's: the s<index>- prefix on azure-cosmosdb-<leaseContainerId>-
// <processorName>, normalised, so dashboards and alerts survive the upgrade.
func TestCosmosDBMetricSpec(t *testing.T) {
	config := cosmosDBScalerConfig(cosmosDBBaseMetadata("leaseContainerId", "Leases_1", "processorName", "orders.processor:v2"), map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey})
	config.TriggerIndex = 3
	s := newCosmosDBTestScaler(t, config)
	specs := s.GetMetricSpecForScaling(context.Background())
	if len(specs) != 1 || specs[0].External == nil || specs[0].Type != v2.ExternalMetricSourceType {
		t.Fatalf("specs %+v, want one external metric", specs)
	}
	if got, want := specs[0].External.Metric.Name, "s3-azure-cosmosdb-Leases_1-orders-processor-v2"; got != want {
		t.Fatalf("metric name %q, want %q", got, want)
	}
	if specs[0].External.Target.Type != v2.AverageValueMetricType || cosmosDBTarget(specs[0]) != 100 {
		t.Fatalf("target %+v, want AverageValue 100", specs[0].External.Target)
	}

	config = cosmosDBScalerConfig(cosmosDBBaseMetadata("changeFeedLagThreshold", "25"), map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey})
	config.MetricType = v2.ValueMetricType
	specs = newCosmosDBTestScaler(t, config).GetMetricSpecForScaling(context.Background())
	if specs[0].External.Target.Type != v2.ValueMetricType || cosmosDBTarget(specs[0]) != 25 {
		t.Fatalf("target %+v, want Value 25", specs[0].External.Target)
	}
}

// Credential sources and their precedence, proven by which key the
// embedded account accepts.
func TestCosmosDBCredentialPrecedence(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
	env.writeToRange(t, "0", 4)
	wrongKey := cosmosDBCanaryKey
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
			map[string]string{"connection": env.server.ConnectionString(), "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "app", "clientSecret": cosmosDBCanarySecret}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			config := cosmosDBScalerConfig(tc.metadata, tc.auth)
			if tc.env != nil {
				config.ResolvedEnv = tc.env
			}
			if metric, _ := pollCosmosDB(t, newCosmosDBTestScaler(t, config)); metric != 4 {
				t.Fatalf("metric %d, want 4", metric)
			}
		})
	}
}

// Separate data and lease accounts, each with its own key; and a lease
// account that inherits nothing when configured.
func TestCosmosDBSeparateLeaseAccount(t *testing.T) {
	data := newCosmosEnv(t, 2, lease.DotNetV0)
	data.writeToRange(t, "1", 6)
	leaseServer := cosmostest.NewServer(cosmostest.WithAccountName("leaseaccount"))
	t.Cleanup(leaseServer.Close)
	leaseContainer := leaseServer.CreateDatabase("meta").CreateContainer("leases", "/id", 1)
	p := cosmostest.NewLeaseWriter("orders-processor", data.monitored, leaseContainer, cosmostest.DotNetV0)
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
			if metric, _ := pollCosmosDB(t, newCosmosDBTestScaler(t, cosmosDBScalerConfig(metadata, auth))); metric != 6 {
				t.Fatalf("metric %d, want 6", metric)
			}
		})
	}
	// A lease endpoint without its own key does not borrow the data key.
	auth := map[string]string{"connection": data.server.ConnectionString(), "leaseEndpoint": leaseServer.URL()}
	if _, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(metadata, auth)); err == nil {
		t.Fatal("lease endpoint without key or bearer credential accepted")
	}
}

// cloud: Private needs cosmosDBResourceURL only to request tokens: a
// connection string or account key reads the account without one.
func TestCosmosDBPrivateCloudKeysNeedNoResourceURL(t *testing.T) {
	endpoint := "https://shop.documents.azure.example:443/"
	for name, auth := range map[string]map[string]string{
		"connection string": {"connection": "AccountEndpoint=" + endpoint + ";AccountKey=" + cosmosDBCanaryKey},
		"endpoint and key":  {"endpoint": endpoint, "cosmosDBKey": cosmosDBCanaryKey},
	} {
		if _, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(cosmosDBBaseMetadata("cloud", "Private"), auth)); err != nil {
			t.Errorf("%s with cloud: Private and no cosmosDBResourceURL: %v", name, err)
		}
	}
}

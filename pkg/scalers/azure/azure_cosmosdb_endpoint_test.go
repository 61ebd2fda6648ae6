package azure

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

func TestCosmosDBEndpointRule(t *testing.T) {
	key := func(endpoint string) CosmosDBAuth { return CosmosDBAuth{Endpoint: endpoint, Key: testCosmosDBKey} }
	sp := func(a CosmosDBAuth) CosmosDBAuth {
		a.TenantID, a.ClientID, a.ClientSecret = "tenant-1", "client-1", testCosmosDBClientSecret
		return a
	}
	private := func(a CosmosDBAuth, resource string) CosmosDBAuth {
		a.Cloud, a.CosmosDBResourceURL, a.ActiveDirectoryEndpoint = "Private", resource, "https://login.private.example/"
		return a
	}
	const privateHost = "https://cosmos.private.example/"
	tests := []struct {
		name     string
		auth     CosmosDBAuth
		metadata []string // the parameters given in trigger metadata; the rest are the TriggerAuthentication's
		workload bool
		wantErr  string // "" when allowed
	}{
		// An account key or token goes to any known cloud's Cosmos DB domain, whatever cloud says.
		{name: "public cloud account", auth: key("https://shop.documents.azure.com/")},
		{name: "US Government account without cloud", auth: key("https://shop.documents.azure.us:443/")},
		{name: "China account with cloud AzurePublicCloud", auth: func() CosmosDBAuth {
			a := key("https://shop.documents.azure.cn/")
			a.Cloud = "AzurePublicCloud"
			return a
		}()},
		{name: "Germany account", auth: key("https://shop.documents.microsoftazure.de/")},
		{name: "public account with cloud AzureChinaCloud", auth: func() CosmosDBAuth {
			a := key("https://shop.documents.azure.com/")
			a.Cloud = "AzureChinaCloud"
			return a
		}()},
		{name: "Cosmos DB in Fabric", auth: key("https://0a1b2c3d.z12.sql.cosmos.fabric.microsoft.com:443/")},
		{name: "upper case and a trailing dot", auth: key("https://SHOP.Documents.Azure.COM./")},
		{name: "regional name", auth: key("https://shop-westeurope.documents.azure.com:443/")},
		{name: "token to a known cloud's account", auth: sp(CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/"})},
		// Loopback, any scheme; the emulator's public key anywhere.
		{name: "loopback name over http", auth: key("http://localhost:8081/")},
		{name: "loopback IPv4 over http", auth: key("http://127.0.0.1:8081/")},
		{name: "loopback IPv6 over http", auth: key("http://[::1]:8081/")},
		{name: "the emulator's key at any host", auth: CosmosDBAuth{Endpoint: "http://cosmos-emulator.cosmos.svc:8081/", Key: cosmosDBEmulatorKey}},
		// Other hosts: a connection string or cloud: Private.
		{name: "connection string to any host", auth: CosmosDBAuth{Connection: testCosmosDBConnection("https://cosmos.gateway.example/", testCosmosDBKey)}},
		{name: "cloud Private, key at any https host", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "private"; return a }()},
		{name: "cloud Private, token for a private resource", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example")},
		{name: "foreign host", auth: key("https://collector.example.com/"),
			wantErr: "endpoint: an account key or token is only sent to hosts under documents.azure.com, documents.azure.us, documents.azure.cn, documents.microsoftazure.de, cosmos.fabric.microsoft.com"},
		{name: "a Cosmos DB name as labels of a foreign host", auth: key("https://shop.documents.azure.com.other.example/"), wantErr: "endpoint: an account key or token is only sent to hosts under"},
		{name: "a domain's suffix without a label boundary", auth: key("https://otherdocuments.azure.com/"), wantErr: "endpoint: an account key or token is only sent to hosts under"},
		{name: "plain http to a Cosmos DB name", auth: key("http://shop.documents.azure.com/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "cloud Private, plain http", auth: func() CosmosDBAuth { a := key("http://cosmos.private.example/"); a.Cloud = "Private"; return a }(),
			wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "lease key to a foreign leaseEndpoint",
			auth:    CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseEndpoint: "https://other.example/", LeaseKey: testCosmosDBLeaseKey},
			wantErr: "leaseEndpoint: an account key or token is only sent to hosts under"},
		{name: "token to a foreign host", auth: sp(CosmosDBAuth{Endpoint: "https://other.example/"}), wantErr: "endpoint: an account key or token is only sent to hosts under"},
		{name: "workload identity token to a foreign host", auth: CosmosDBAuth{Endpoint: "https://other.example/"}, workload: true, wantErr: "endpoint: an account key or token is only sent to hosts under"},
		// cloud: Private never asks for a token a known cloud's Cosmos DB accepts.
		{name: "Private token for the public resource", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.azure.com/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud (cosmos.azure.com)"},
		{name: "Private token for the US Government resource, upper case with a port", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://COSMOS.AZURE.US:443/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private token for the China resource with a path", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.azure.cn/x"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private token for the Germany resource", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.azure.de"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private token for a public account's own URL", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://shop.documents.azure.com"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private token for a US Government account's own URL", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://shop.documents.azure.us:443/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private token for a Fabric account", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://a.z1.sql.cosmos.fabric.microsoft.com/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		{name: "Private workload identity token for the US Government resource", auth: private(CosmosDBAuth{Endpoint: privateHost}, "https://cosmos.azure.us"), workload: true,
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be"},
		// With cloud: Private, no token for another service of a known cloud either.
		{name: "Private token for Resource Manager", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://management.azure.com/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud (management.azure.com)"},
		{name: "Private token for Microsoft Graph", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://graph.microsoft.com"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud"},
		{name: "Private token for a key vault", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://shop.vault.azure.net"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud"},
		{name: "Private token for a US Government storage account", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://shop.blob.core.usgovcloudapi.net/"),
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud"},
		{name: "Private workload identity token for Resource Manager", auth: private(CosmosDBAuth{Endpoint: privateHost}, "https://management.chinacloudapi.cn"), workload: true,
			wantErr: "cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud"},
		// A destination in trigger metadata never takes the TriggerAuthentication's credential outside the known clouds.
		{name: "TriggerAuthentication key, endpoint and cloud: Private in metadata", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "Private"; return a }(),
			metadata: []string{"endpoint", "cloud"}, wantErr: "endpoint: given in trigger metadata, it may not send the TriggerAuthentication's account key or token outside the known clouds; move endpoint (and cloud: Private) into the TriggerAuthentication"},
		{name: "TriggerAuthentication key and endpoint, cloud: Private in metadata", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "Private"; return a }(),
			metadata: []string{"cloud"}, wantErr: "cloud: Private given in trigger metadata may not send the TriggerAuthentication's account key or token to the host of endpoint; move cloud into the TriggerAuthentication"},
		{name: "TriggerAuthentication lease key, leaseEndpoint in metadata",
			auth:     CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseEndpoint: privateHost, LeaseKey: testCosmosDBLeaseKey, Cloud: "Private"},
			metadata: []string{"leaseEndpoint"}, wantErr: "leaseEndpoint: given in trigger metadata"},
		{name: "TriggerAuthentication key, known cloud endpoint in metadata", auth: key("https://shop.documents.azure.com/"), metadata: []string{"endpoint"}},
		{name: "key from metadata, endpoint and cloud: Private in metadata", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "Private"; return a }(),
			metadata: []string{"endpoint", "cloud", "cosmosDBKey"}},
		{name: "TriggerAuthentication service principal, activeDirectoryEndpoint in metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"), metadata: []string{"activeDirectoryEndpoint"},
			wantErr: "activeDirectoryEndpoint: given in trigger metadata, it may not send the TriggerAuthentication's client secret outside the known clouds"},
		{name: "TriggerAuthentication service principal, a known authority in metadata",
			auth: func() CosmosDBAuth {
				a := private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example")
				a.ActiveDirectoryEndpoint = "https://login.microsoftonline.us/"
				return a
			}(), metadata: []string{"activeDirectoryEndpoint"}},
		{name: "TriggerAuthentication service principal, cosmosDBResourceURL in metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"), metadata: []string{"cosmosDBResourceURL"},
			wantErr: "cosmosDBResourceURL: given in trigger metadata, it may not send the TriggerAuthentication's token outside the known clouds"},
		{name: "TriggerAuthentication service principal, cloud: Private in metadata, known account",
			auth: private(sp(CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/"}), "https://cosmos.private.example"), metadata: []string{"cloud"},
			wantErr: "cloud: Private given in trigger metadata may not send the TriggerAuthentication's token to the host of cosmosDBResourceURL"},
		{name: "client secret in metadata, private cloud in metadata",
			auth:     private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"),
			metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL", "activeDirectoryEndpoint", "tenantId", "clientId", "clientSecret"}},
		{name: "workload identity, cloud: Private and cosmosDBResourceURL in metadata", auth: private(CosmosDBAuth{Endpoint: privateHost}, "https://cosmos.private.example"), workload: true,
			metadata: []string{"cloud", "cosmosDBResourceURL"}, wantErr: "given in trigger metadata"},
		{name: "workload identity, private cloud in the TriggerAuthentication", auth: private(CosmosDBAuth{Endpoint: privateHost}, "https://cosmos.private.example"), workload: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.workload {
				t.Setenv("AZURE_CLIENT_ID", "client-wi")
				t.Setenv("AZURE_TENANT_ID", "tenant-wi")
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", filepath.Join(t.TempDir(), "token"))
				tt.auth.PodIdentity = v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
			}
			tr := &testCosmosDBTransport{}
			_, _, err := ResolveCosmosDBConnections(givenIn(tt.auth, tt.metadata...), tr, logr.Discard())
			assert.Empty(t, tr.find(func(testCosmosDBRecord) bool { return true }), "resolving sent requests")
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			for _, secret := range []string{testCosmosDBKey, testCosmosDBLeaseKey, testCosmosDBClientSecret} {
				assert.NotContains(t, err.Error(), secret, "the error quotes a secret")
			}
		})
	}
}

// givenIn marks every parameter a sets as the TriggerAuthentication's, but
// those named, which the trigger metadata gives.
func givenIn(a CosmosDBAuth, metadata ...string) CosmosDBAuth {
	a.TriggerAuthentication = map[string]bool{}
	for name, value := range map[string]string{"connection": string(a.Connection), "leaseConnection": string(a.LeaseConnection),
		"endpoint": a.Endpoint, "leaseEndpoint": a.LeaseEndpoint, "cosmosDBKey": string(a.Key), "leaseCosmosDBKey": string(a.LeaseKey),
		"tenantId": a.TenantID, "clientId": a.ClientID, "clientSecret": string(a.ClientSecret),
		"cloud": a.Cloud, "cosmosDBResourceURL": a.CosmosDBResourceURL, "activeDirectoryEndpoint": a.ActiveDirectoryEndpoint} {
		a.TriggerAuthentication[name] = value != "" && !slices.Contains(metadata, name)
	}
	return a
}

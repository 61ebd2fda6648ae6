package azure

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Where a key or token may go (azure_cosmosdb_endpoint.go). Each row names
// the parameters given in trigger metadata; the rest are the
// TriggerAuthentication's (KEDA's AuthParams). A refused row names the
// parameter, quotes no secret and sends no request.
func TestCosmosDBCredentialDestinations(t *testing.T) {
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
	const outsideErr = "endpoint: given in trigger metadata, it may not receive the TriggerAuthentication's credentials outside the Cosmos DB DNS suffixes of KEDA's Azure environments (documents.azure.com, documents.azure.us, documents.azure.cn, documents.microsoftazure.de); give endpoint in the TriggerAuthentication"
	tests := []struct {
		name     string
		auth     CosmosDBAuth
		metadata []string // the parameters given in trigger metadata; the rest are the TriggerAuthentication's
		wantErr  string   // "" when allowed
	}{
		// Under a Cosmos DB DNS suffix of KEDA's Azure environments, whatever cloud says and wherever the endpoint is given.
		{name: "key to the public cloud's suffix from metadata", auth: key("https://shop.documents.azure.com/"), metadata: []string{"endpoint"}},
		{name: "key to the US Government suffix without cloud", auth: key("https://shop.documents.azure.us:443/"), metadata: []string{"endpoint"}},
		{name: "key to the China suffix with cloud AzurePublicCloud", auth: func() CosmosDBAuth {
			a := key("https://shop.documents.azure.cn/")
			a.Cloud = "AzurePublicCloud"
			return a
		}(), metadata: []string{"endpoint", "cloud"}},
		{name: "key to the Germany suffix", auth: key("https://shop.documents.microsoftazure.de/"), metadata: []string{"endpoint"}},
		{name: "suffix matched in upper case and with a trailing dot", auth: key("https://SHOP.Documents.Azure.COM./"), metadata: []string{"endpoint"}},
		{name: "service principal token to a known suffix from metadata", auth: sp(CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/"}), metadata: []string{"endpoint"}},
		// Outside them, a TriggerAuthentication's credential goes only to an endpoint the TriggerAuthentication gives.
		{name: "key to a host outside the suffixes from metadata", auth: key("https://outside.example.com/"), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "a suffix as labels of another host", auth: key("https://shop.documents.azure.com.other.example/"), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "a suffix without a label boundary", auth: key("https://otherdocuments.azure.com/"), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "HTTPS loopback from metadata is outside the suffixes", auth: key("https://127.0.0.1:8081/"), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "key and endpoint both from the TriggerAuthentication go anywhere", auth: key(privateHost)},
		{name: "lease key to a leaseEndpoint from metadata outside the suffixes",
			auth:     CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseEndpoint: privateHost, LeaseKey: testCosmosDBLeaseKey},
			metadata: []string{"leaseEndpoint"}, wantErr: "leaseEndpoint: given in trigger metadata, it may not receive the TriggerAuthentication's credentials"},
		{name: "lease key and leaseEndpoint both from the TriggerAuthentication",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseEndpoint: privateHost, LeaseKey: testCosmosDBLeaseKey}},
		{name: "service principal token to a host outside the suffixes from metadata", auth: sp(CosmosDBAuth{Endpoint: privateHost}), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "service principal and its endpoint both from the TriggerAuthentication", auth: sp(CosmosDBAuth{Endpoint: privateHost})},
		// The ScaledObject author's own credentials (trigger metadata, the workload's environment) and connection strings.
		{name: "key from metadata to any host", auth: key(privateHost), metadata: []string{"endpoint", "cosmosDBKey"}},
		{name: "client secret from metadata to any host", auth: sp(CosmosDBAuth{Endpoint: privateHost}), metadata: []string{"endpoint", "tenantId", "clientId", "clientSecret"}},
		{name: "connection string to any host", auth: CosmosDBAuth{Connection: testCosmosDBConnection("https://cosmos.gateway.example/", testCosmosDBKey)}},
		// cloud: Private with a TriggerAuthentication's service principal: cloud, resource and authority all from it.
		{name: "service principal with the private cloud all in the TriggerAuthentication", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example")},
		{name: "service principal with the private cloud, its owner picks the audience", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://management.azure.com/")},
		{name: "service principal with cloud: Private from metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/"}), "https://cosmos.private.example"), metadata: []string{"cloud"},
			wantErr: "cloud: Private with the TriggerAuthentication's service principal needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication"},
		{name: "service principal with cosmosDBResourceURL from metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://management.azure.com/"), metadata: []string{"cosmosDBResourceURL"},
			wantErr: "cloud: Private with the TriggerAuthentication's service principal needs"},
		{name: "service principal with activeDirectoryEndpoint from metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"), metadata: []string{"activeDirectoryEndpoint"},
			wantErr: "cloud: Private with the TriggerAuthentication's service principal needs"},
		{name: "service principal with the private cloud in the TriggerAuthentication, endpoint from metadata",
			auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"), metadata: []string{"endpoint"}, wantErr: outsideErr},
		{name: "client secret and private cloud all from metadata",
			auth:     private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example"),
			metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL", "activeDirectoryEndpoint", "tenantId", "clientId", "clientSecret"}},
		{name: "a key with cloud: Private from metadata is held by the endpoint rule only", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "Private"; return a }(), metadata: []string{"cloud"}},
		// No key or token over plain HTTP, loopback included; the emulator's published key anywhere.
		{name: "key over http to loopback", auth: key("http://127.0.0.1:8081/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "key over http to an IPv6 loopback", auth: key("http://[::1]:8081/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "key over http to a Cosmos DB host", auth: key("http://shop.documents.azure.com/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "token over http", auth: sp(CosmosDBAuth{Endpoint: "http://localhost:8081/"}), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "connection string over http", auth: CosmosDBAuth{Connection: testCosmosDBConnection("http://cosmos.gateway.example/", testCosmosDBKey)},
			wantErr: "connection: an account key or token is only sent over https"},
		{name: "lease connection string over http", auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey),
			LeaseConnection: testCosmosDBConnection("http://localhost:8081/", testCosmosDBLeaseKey)}, wantErr: "leaseConnection: an account key or token is only sent over https"},
		{name: "the emulator's key over http with its endpoint", auth: CosmosDBAuth{Endpoint: "http://cosmos-emulator.cosmos.svc:8081/", Key: cosmosDBEmulatorKey}},
		{name: "the emulator's key in a connection string over http", auth: CosmosDBAuth{Connection: testCosmosDBConnection("http://localhost:8081/", cosmosDBEmulatorKey)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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

// givenIn puts every parameter a sets in AuthParams, as KEDA hands over a
// TriggerAuthentication's, but those named, which the trigger metadata gives.
func givenIn(a CosmosDBAuth, metadata ...string) CosmosDBAuth {
	a.AuthParams = map[string]string{}
	for name, value := range map[string]string{"connection": string(a.Connection), "leaseConnection": string(a.LeaseConnection),
		"endpoint": a.Endpoint, "leaseEndpoint": a.LeaseEndpoint, "cosmosDBKey": string(a.Key), "leaseCosmosDBKey": string(a.LeaseKey),
		"tenantId": a.TenantID, "clientId": a.ClientID, "clientSecret": string(a.ClientSecret),
		"cloud": a.Cloud, "cosmosDBResourceURL": a.CosmosDBResourceURL, "activeDirectoryEndpoint": a.ActiveDirectoryEndpoint} {
		if value != "" && !slices.Contains(metadata, name) {
			a.AuthParams[name] = value
		}
	}
	return a
}

// KEDA's workload identity is the KEDA operator's, whoever writes the
// trigger or its TriggerAuthentication: it is used only with a cloud of
// KEDA's Azure environments, asked only for that cloud's Cosmos DB audience,
// and sent only over HTTPS to hosts under that cloud's Cosmos DB DNS suffix.
// A private cloud is cloud: AzureStackCloud with the operator's environment
// file. A refused trigger sends no request.
func TestCosmosDBWorkloadIdentityStaysInTheTriggersCloud(t *testing.T) {
	environmentFile := filepath.Join(t.TempDir(), "environment.json")
	require.NoError(t, os.WriteFile(environmentFile, []byte(`{"name": "AzureStackCloud", "cosmosDBDNSSuffix": "cosmos.private.example",
		"activeDirectoryEndpoint": "https://login.private.example/", "resourceIdentifiers": {"cosmosDB": "https://cosmos.private.example"}}`), 0o600))
	const (
		outside = "https://outside.example.com/"
		account = "https://shop.cosmos.private.example/"
	)
	privateErr := "cloud: Private is not used with podIdentity azure-workload, whose identity is the KEDA operator's; for a private cloud use cloud: AzureStackCloud with the KEDA operator's environment file (AZURE_ENVIRONMENT_FILEPATH)"
	publicErr := "workload identity tokens are only sent to hosts under documents.azure.com, the Cosmos DB DNS suffix of the trigger's cloud"
	tests := []struct {
		name       string
		auth       CosmosDBAuth
		metadata   []string // given in trigger metadata; the rest in the TriggerAuthentication
		identityID string
		noFile     bool // AZURE_ENVIRONMENT_FILEPATH names no file
		wantErr    string
		wantScope  string
	}{
		{name: "cloud: Private from the TriggerAuthentication", auth: CosmosDBAuth{Endpoint: outside, Cloud: "Private", CosmosDBResourceURL: "api://audience-from-trigger-authentication"}, wantErr: privateErr},
		{name: "cloud: Private from metadata", metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL"},
			auth: CosmosDBAuth{Endpoint: outside, Cloud: "Private", CosmosDBResourceURL: "api://audience-from-trigger-metadata"}, wantErr: privateErr},
		{name: "cloud: Private with an identity the TriggerAuthentication names (identityId)", identityID: "other-identity",
			auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://cosmos.private.example"}, wantErr: privateErr},
		{name: "an endpoint outside the public cloud's suffix", auth: CosmosDBAuth{Endpoint: outside}, wantErr: "endpoint: " + publicErr},
		{name: "a leaseEndpoint outside the public cloud's suffix", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", LeaseEndpoint: outside}, wantErr: "leaseEndpoint: " + publicErr},
		{name: "a key for the data account, a leaseEndpoint outside the suffix", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Key: testCosmosDBKey, LeaseEndpoint: outside},
			wantErr: "leaseEndpoint: " + publicErr},
		{name: "HTTPS loopback", auth: CosmosDBAuth{Endpoint: "https://127.0.0.1:8081/"}, wantErr: "endpoint: " + publicErr},
		{name: "plain http to the cloud's suffix", auth: CosmosDBAuth{Endpoint: "http://shop.documents.azure.com/"}, wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "another cloud's account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/"}, wantErr: "endpoint: " + publicErr},
		{name: "Cosmos DB in Fabric, a suffix no KEDA environment has", auth: CosmosDBAuth{Endpoint: "https://a.z1.sql.cosmos.fabric.microsoft.com/"}, wantErr: "endpoint: " + publicErr},
		{name: "a public account with cloud AzureUSGovernmentCloud", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "AzureUSGovernmentCloud"},
			wantErr: "endpoint: workload identity tokens are only sent to hosts under documents.azure.us"},
		{name: "public cloud account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/"}, wantScope: "https://cosmos.azure.com/.default"},
		{name: "US Government account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/", Cloud: "AzureUSGovernmentCloud"}, wantScope: "https://cosmos.azure.com/.default"},
		{name: "a known cloud does not read cosmosDBResourceURL", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "AzurePublicCloud", CosmosDBResourceURL: "api://audience-from-trigger-authentication"},
			wantScope: "https://cosmos.azure.com/.default"},
		// The KEDA operator's private cloud: its environment file's suffix and audience.
		{name: "AzureStackCloud account, from metadata, with identityId", metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL"}, identityID: "other-identity",
			auth: CosmosDBAuth{Endpoint: account, Cloud: "AzureStackCloud", CosmosDBResourceURL: "api://audience-from-trigger-metadata"}, wantScope: "https://cosmos.private.example/.default"},
		{name: "AzureStackCloud, an endpoint outside the file's suffix", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "AzureStackCloud"},
			wantErr: "endpoint: workload identity tokens are only sent to hosts under cosmos.private.example"},
		{name: "AzureStackCloud without the operator's file", noFile: true, auth: CosmosDBAuth{Endpoint: account, Cloud: "AzureStackCloud"},
			wantErr: `cloud: "AzureStackCloud" is not a cloud of KEDA's Azure environments, or its environment file (AZURE_ENVIRONMENT_FILEPATH) cannot be read`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AZURE_CLIENT_ID", "keda-operator")
			t.Setenv("AZURE_TENANT_ID", "tenant-wi")
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", filepath.Join(t.TempDir(), "token"))
			t.Setenv(EnvironmentFilepathName, environmentFile)
			if tt.noFile {
				t.Setenv(EnvironmentFilepathName, filepath.Join(t.TempDir(), "missing.json"))
			}
			auth := givenIn(tt.auth, tt.metadata...)
			auth.PodIdentity = v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
			if tt.identityID != "" {
				auth.PodIdentity.IdentityID = &tt.identityID
			}
			tr := &testCosmosDBTransport{}
			data, _, err := ResolveCosmosDBConnections(auth, tr, logr.Discard())
			assert.Empty(t, tr.find(func(testCosmosDBRecord) bool { return true }), "resolving sent requests")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantScope, data.scope)
		})
	}
}

package azure

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		wantErr  string   // "" when allowed
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
		// No key or token over plain HTTP, loopback included; the emulator's published key anywhere.
		{name: "loopback name over http", auth: key("http://localhost:8081/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "loopback IPv4 over http", auth: key("http://127.0.0.1:8081/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "loopback IPv6 over http", auth: key("http://[::1]:8081/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "loopback over https", auth: key("https://127.0.0.1:8081/")},
		{name: "token over https to loopback", auth: sp(CosmosDBAuth{Endpoint: "https://localhost:8081/"})},
		{name: "token over http to loopback", auth: sp(CosmosDBAuth{Endpoint: "http://localhost:8081/"}), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "connection string over http to loopback", auth: CosmosDBAuth{Connection: testCosmosDBConnection("http://127.0.0.1:8081/", testCosmosDBKey)},
			wantErr: "connection: an account key or token is only sent over https"},
		{name: "connection string over http to any host", auth: CosmosDBAuth{Connection: testCosmosDBConnection("http://cosmos.gateway.example/", testCosmosDBKey)},
			wantErr: "connection: an account key or token is only sent over https"},
		{name: "lease connection string over http", auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey),
			LeaseConnection: testCosmosDBConnection("http://localhost:8081/", testCosmosDBLeaseKey)}, wantErr: "leaseConnection: an account key or token is only sent over https"},
		{name: "the emulator's key at any host", auth: CosmosDBAuth{Endpoint: "http://cosmos-emulator.cosmos.svc:8081/", Key: cosmosDBEmulatorKey}},
		{name: "the emulator's key in a connection string over http", auth: CosmosDBAuth{Connection: testCosmosDBConnection("http://localhost:8081/", cosmosDBEmulatorKey)}},
		// Other hosts: a connection string or cloud: Private.
		{name: "connection string to any host", auth: CosmosDBAuth{Connection: testCosmosDBConnection("https://cosmos.gateway.example/", testCosmosDBKey)}},
		{name: "cloud Private, key at any https host", auth: func() CosmosDBAuth { a := key(privateHost); a.Cloud = "private"; return a }()},
		{name: "cloud Private, token for a private resource", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://cosmos.private.example")},
		// A TriggerAuthentication's service principal is its author's: with
		// every destination given there, the author picks the audience.
		{name: "cloud Private, the service principal's owner picks its audience", auth: private(sp(CosmosDBAuth{Endpoint: privateHost}), "https://management.azure.com/")},
		{name: "foreign host", auth: key("https://collector.example.com/"),
			wantErr: "endpoint: an account key or token is only sent to hosts under documents.azure.com, cosmos.fabric.microsoft.com, documents.azure.us, documents.azure.cn, documents.microsoftazure.de"},
		{name: "a Cosmos DB name as labels of a foreign host", auth: key("https://shop.documents.azure.com.other.example/"), wantErr: "endpoint: an account key or token is only sent to hosts under"},
		{name: "a domain's suffix without a label boundary", auth: key("https://otherdocuments.azure.com/"), wantErr: "endpoint: an account key or token is only sent to hosts under"},
		{name: "plain http to a Cosmos DB name", auth: key("http://shop.documents.azure.com/"), wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "cloud Private, plain http", auth: func() CosmosDBAuth { a := key("http://cosmos.private.example/"); a.Cloud = "Private"; return a }(),
			wantErr: "endpoint: an account key or token is only sent over https"},
		{name: "lease key to a foreign leaseEndpoint",
			auth:    CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseEndpoint: "https://other.example/", LeaseKey: testCosmosDBLeaseKey},
			wantErr: "leaseEndpoint: an account key or token is only sent to hosts under"},
		{name: "token to a foreign host", auth: sp(CosmosDBAuth{Endpoint: "https://other.example/"}), wantErr: "endpoint: an account key or token is only sent to hosts under"},
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

// KEDA's workload identity is the KEDA operator's, whoever writes the
// trigger or its TriggerAuthentication: its token is requested only for the
// configured known cloud's Cosmos DB audience, and sent only over HTTPS to
// that cloud's Cosmos DB hosts; a private cloud only as the operator's
// KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD allows. Every request goes through a
// recording transport: a refused trigger sends none, not even a token
// request; an allowed one asks the operator's authority for the allowed
// audience and sends the token to the account alone.
func TestCosmosDBWorkloadIdentityIsTheOperators(t *testing.T) {
	const (
		setting  = "domains=cosmos.private.example;audience=https://cosmos.private.example;authority=https://login.private.example/"
		attacker = "https://collector.attacker.example/"
		account  = "https://shop.cosmos.private.example/"
	)
	envErr := "cloud: Private with podIdentity azure-workload: KEDA's workload identity serves a private cloud only when the KEDA operator's environment variable KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD names"
	privateEndpointErr := "KEDA's workload identity is only sent over https to hosts under the domains of the KEDA operator's KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD (cosmos.private.example)"
	audienceErr := "cosmosDBResourceURL: KEDA's workload identity requests tokens only for https://cosmos.private.example or the account's own URL"
	tests := []struct {
		name       string
		setting    string // KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD
		auth       CosmosDBAuth
		metadata   []string // given in trigger metadata; the rest in the TriggerAuthentication
		identityID string
		wantErr    string
		wantScope  string
		poll       bool // poll through the transport (private clouds: the credential uses it)
	}{
		// Issue AB item 1, as written: everything in one TriggerAuthentication.
		{name: "private cloud, foreign endpoint and api:// audience in a TriggerAuthentication",
			auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private", CosmosDBResourceURL: "api://victim-internal-api"}, wantErr: envErr},
		{name: "private cloud, Application Insights audience", auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private", CosmosDBResourceURL: "https://api.applicationinsights.io"}, wantErr: envErr},
		{name: "private cloud, Azure DevOps audience", auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private", CosmosDBResourceURL: "https://app.vssps.visualstudio.com"}, wantErr: envErr},
		{name: "private cloud, another identity federated with KEDA (identityId)", identityID: "other-identity",
			auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private", CosmosDBResourceURL: "api://victim-internal-api"}, wantErr: envErr},
		{name: "private cloud, all in trigger metadata", metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL"},
			auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private", CosmosDBResourceURL: "api://victim-internal-api"}, wantErr: envErr},
		{name: "private cloud, the operator's account domain without the setting", auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://cosmos.private.example"}, wantErr: envErr},
		// The operator allows a private cloud: only its domains and audience.
		{name: "setting, foreign endpoint", setting: setting, auth: CosmosDBAuth{Endpoint: attacker, Cloud: "Private"}, wantErr: "endpoint: " + privateEndpointErr},
		{name: "setting, foreign leaseEndpoint", setting: setting, auth: CosmosDBAuth{Endpoint: account, LeaseEndpoint: attacker, Cloud: "Private"}, wantErr: "leaseEndpoint: " + privateEndpointErr},
		{name: "setting, key for the data account, foreign leaseEndpoint", setting: setting,
			auth: CosmosDBAuth{Endpoint: account, Key: testCosmosDBKey, LeaseEndpoint: attacker, Cloud: "Private"}, wantErr: "leaseEndpoint: " + privateEndpointErr},
		{name: "setting, a public account with cloud: Private", setting: setting, auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "Private"}, wantErr: "endpoint: " + privateEndpointErr},
		{name: "setting, plain http to the operator's domain", setting: setting, auth: CosmosDBAuth{Endpoint: "http://shop.cosmos.private.example/", Cloud: "Private"}, wantErr: "endpoint: " + privateEndpointErr},
		{name: "setting, api:// audience", setting: setting, auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "api://victim-internal-api"}, wantErr: audienceErr},
		{name: "setting, public Cosmos DB audience", setting: setting, auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://cosmos.azure.com"}, wantErr: audienceErr},
		{name: "setting, Resource Manager audience in metadata", setting: setting, metadata: []string{"cosmosDBResourceURL"},
			auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://management.azure.com/"}, wantErr: audienceErr},
		{name: "setting, another account's URL as audience", setting: setting, auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://other.cosmos.private.example"}, wantErr: audienceErr},
		{name: "malformed setting", setting: "domains=cosmos.private.example;audience=http://cosmos.private.example;authority=https://login.private.example/",
			auth: CosmosDBAuth{Endpoint: account, Cloud: "Private"}, wantErr: "the KEDA operator's KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD is not valid: audience is not an https URL"},
		{name: "setting without authority", setting: "domains=cosmos.private.example;audience=https://cosmos.private.example",
			auth: CosmosDBAuth{Endpoint: account, Cloud: "Private"}, wantErr: "domains, audience and authority are all required"},
		{name: "setting, the operator's private cloud", setting: setting, auth: CosmosDBAuth{Endpoint: account, Cloud: "Private"},
			wantScope: "https://cosmos.private.example/.default", poll: true},
		{name: "setting, the operator's private cloud named in metadata, with identityId", setting: setting, identityID: "other-identity", metadata: []string{"endpoint", "cloud", "cosmosDBResourceURL"},
			auth: CosmosDBAuth{Endpoint: account, Cloud: "private", CosmosDBResourceURL: "https://cosmos.private.example/"}, wantScope: "https://cosmos.private.example/.default", poll: true},
		{name: "setting, the account's own URL as audience", setting: setting, auth: CosmosDBAuth{Endpoint: account, Cloud: "Private", CosmosDBResourceURL: "https://shop.cosmos.private.example"},
			wantScope: "https://shop.cosmos.private.example/.default", poll: true},
		// Known clouds: that cloud's Cosmos DB domains and KEDA's audience only.
		{name: "public cloud, foreign endpoint", auth: CosmosDBAuth{Endpoint: attacker},
			wantErr: "endpoint: KEDA's workload identity is only sent over https to hosts under the public cloud's Cosmos DB domains (documents.azure.com, cosmos.fabric.microsoft.com)"},
		{name: "public cloud, foreign leaseEndpoint", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", LeaseEndpoint: attacker}, wantErr: "leaseEndpoint: KEDA's workload identity is only sent over https"},
		{name: "public cloud, plain http to loopback", auth: CosmosDBAuth{Endpoint: "http://localhost:8081/"}, wantErr: "endpoint: KEDA's workload identity is only sent over https"},
		{name: "public cloud, https to loopback", auth: CosmosDBAuth{Endpoint: "https://127.0.0.1:8081/"}, wantErr: "endpoint: KEDA's workload identity is only sent over https"},
		{name: "public cloud, another cloud's account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/"}, wantErr: "endpoint: KEDA's workload identity is only sent over https"},
		{name: "US Government cloud, a public account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "AzureUSGovernmentCloud"},
			wantErr: "endpoint: KEDA's workload identity is only sent over https to hosts under the Cosmos DB domains of cloud AzureUSGovernmentCloud (documents.azure.us)"},
		{name: "public cloud account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/"}, wantScope: "https://cosmos.azure.com/.default"},
		{name: "Cosmos DB in Fabric", auth: CosmosDBAuth{Endpoint: "https://a.z1.sql.cosmos.fabric.microsoft.com/"}, wantScope: "https://cosmos.azure.com/.default"},
		{name: "US Government account", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.us/", Cloud: "AzureUSGovernmentCloud"}, wantScope: "https://cosmos.azure.com/.default"},
		{name: "a known cloud ignores an api:// cosmosDBResourceURL", auth: CosmosDBAuth{Endpoint: "https://shop.documents.azure.com/", Cloud: "AzurePublicCloud", CosmosDBResourceURL: "api://victim-internal-api"},
			wantScope: "https://cosmos.azure.com/.default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokenFile := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600))
			t.Setenv("AZURE_CLIENT_ID", "keda-operator")
			t.Setenv("AZURE_TENANT_ID", "tenant-wi")
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)
			t.Setenv("AZURE_AUTHORITY_HOST", "https://login.webhook.example/")
			t.Setenv(CosmosDBPrivateCloudEnv, tt.setting)
			auth := givenIn(tt.auth, tt.metadata...)
			auth.PodIdentity = v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
			if tt.identityID != "" {
				auth.PodIdentity.IdentityID = &tt.identityID
			}
			tr := &testCosmosDBTransport{service: &testCosmosDBService{}}
			data, lease, err := ResolveCosmosDBConnections(auth, tr, logr.Discard())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Empty(t, tr.find(func(testCosmosDBRecord) bool { return true }), "a refused trigger sent requests")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantScope, data.scope)
			if !tt.poll {
				return // KEDA's chained credential: its token comes from the pod's federated identity
			}
			_, err = NewCosmosDBLagEstimator(NewCosmosDBClient(data, tr), NewCosmosDBClient(lease, tr), CosmosDBContainers{
				Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders",
			}).Estimate(context.Background())
			require.NoError(t, err)
			for _, r := range tr.find(func(testCosmosDBRecord) bool { return true }) {
				switch {
				case testCosmosDBIsLogin(r):
					assert.Equal(t, "login.private.example", r.host, "the operator's authority, not AZURE_AUTHORITY_HOST")
				default:
					assert.Equal(t, "shop.cosmos.private.example", r.host)
					assert.Equal(t, "type=aad&ver=1.0&sig="+testCosmosDBAccessToken, r.header.Get("Authorization"))
				}
			}
			tokens := tr.find(func(r testCosmosDBRecord) bool { return strings.HasSuffix(r.path, "/oauth2/v2.0/token") })
			require.Len(t, tokens, 1)
			form, err := url.ParseQuery(tokens[0].body)
			require.NoError(t, err)
			resources := slices.DeleteFunc(strings.Fields(form.Get("scope")), func(s string) bool { return slices.Contains([]string{"openid", "offline_access", "profile"}, s) })
			assert.Equal(t, []string{tt.wantScope}, resources, "MSAL's OpenID scopes aside, the one allowed audience")
			assert.Equal(t, "federated-service-account-token", form.Get("client_assertion"))
			wantClient := "keda-operator"
			if tt.identityID != "" {
				wantClient = tt.identityID
			}
			assert.Equal(t, wantClient, form.Get("client_id"))
		})
	}
}

// The written-out known clouds agree with KEDA's Azure environments: each
// cloud's Cosmos DB DNS suffix is among its domains and its audience is
// KEDA's Cosmos DB resource, so a change in KEDA's table shows here.
func TestCosmosDBKnownCloudsMatchKEDAsEnvironments(t *testing.T) {
	for _, name := range []string{"AzurePublicCloud", "AzureUSGovernmentCloud", "AzureChinaCloud", "AzureGermanCloud", "AzureCloud", "AzureUSGovernment"} {
		env, err := EnvironmentFromName(name)
		require.NoError(t, err)
		cloud, ok := cosmosDBKnownCloud(name)
		require.True(t, ok, name)
		assert.Contains(t, cloud.domains, env.CosmosDBDNSSuffix, name)
		assert.Equal(t, []string{strings.TrimSuffix(env.ResourceIdentifiers.CosmosDB, "/")}, cloud.audiences, name)
	}
	_, ok := cosmosDBKnownCloud("Private")
	assert.False(t, ok)
	public, _ := cosmosDBKnownCloud("")
	assert.Equal(t, []string{"documents.azure.com", "cosmos.fabric.microsoft.com"}, public.domains)
}

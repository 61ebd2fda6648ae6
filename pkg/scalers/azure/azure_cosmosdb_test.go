package azure

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Placeholder credentials: tests assert they never appear in an error.
const (
	testCosmosDBKey          = "dGVzdC1hY2NvdW50LWtleS1ub3QtZm9yLWxvZ3MtN2YzYTlj"
	testCosmosDBLeaseKey     = "bGVhc2UtYWNjb3VudC1rZXktbm90LWZvci1sb2dzLTJiOGU0MQ=="
	testCosmosDBClientSecret = "client-secret-not-for-logs"
	testCosmosDBAccessToken  = "access-token-not-for-logs"
	testCosmosDBEndpoint     = "https://myaccount.documents.azure.com:443/"
	testCosmosDBLeaseHost    = "https://leaseaccount.documents.azure.com:443/"
	testCosmosDBDatabaseRID  = "Dm0aAA=="
	testCosmosDBContainerRID = "Dm0aAKj0eAc="
)

func testCosmosDBConnection(endpoint, key string) CosmosDBSecret {
	return CosmosDBSecret("AccountEndpoint=" + endpoint + ";AccountKey=" + key + ";")
}

// testCosmosDBSignature computes the master-key signature as the REST API
// documents it, independently of the scaler's code.
func testCosmosDBSignature(t *testing.T, key, verb, resourceType, resourceLink, date string) string {
	t.Helper()
	k, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err)
	mac := hmac.New(sha256.New, k)
	fmt.Fprintf(mac, "%s\n%s\n%s\n%s\n\n", strings.ToLower(verb), strings.ToLower(resourceType), resourceLink, strings.ToLower(date))
	return url.QueryEscape("type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

type testCosmosDBRecord struct {
	method, host, path string
	header             http.Header
	body               string
}

// testCosmosDBTransport is a policy.Transporter that answers in-process:
// Microsoft Entra ID instance and tenant discovery and the token endpoint
// for any authority host, and, through service, Cosmos DB. It records
// every request.
type testCosmosDBTransport struct {
	service *testCosmosDBService
	mu      sync.Mutex
	records []testCosmosDBRecord
}

func (tr *testCosmosDBTransport) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	tr.mu.Lock()
	tr.records = append(tr.records, testCosmosDBRecord{req.Method, req.URL.Host, req.URL.Path, req.Header.Clone(), string(body)})
	tr.mu.Unlock()
	status, header, payload := http.StatusNotFound, http.Header{}, `{"code":"NotFound","message":"no such route"}`
	switch p := req.URL.Path; {
	case strings.HasSuffix(p, "/common/discovery/instance"):
		authorize, err := url.Parse(req.URL.Query().Get("authorization_endpoint"))
		if err != nil {
			return nil, err
		}
		tenant, _, _ := strings.Cut(strings.TrimPrefix(authorize.Path, "/"), "/")
		status, payload = http.StatusOK, fmt.Sprintf(`{"tenant_discovery_endpoint":"https://%[1]s/%[2]s/v2.0/.well-known/openid-configuration","api-version":"1.1",`+
			`"metadata":[{"preferred_network":"%[1]s","preferred_cache":"%[1]s","aliases":["%[1]s"]}]}`, authorize.Host, tenant)
	case strings.HasSuffix(p, "/v2.0/.well-known/openid-configuration"):
		tenant, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		authority := "https://" + req.URL.Host + "/" + tenant
		status, payload = http.StatusOK, fmt.Sprintf(`{"token_endpoint":"%[1]s/oauth2/v2.0/token","authorization_endpoint":"%[1]s/oauth2/v2.0/authorize","issuer":"%[1]s/v2.0"}`, authority)
	case strings.HasSuffix(p, "/oauth2/v2.0/token"):
		status, payload = http.StatusOK, `{"token_type":"Bearer","expires_in":3600,"access_token":"`+testCosmosDBAccessToken+`"}`
	case tr.service != nil:
		status, header, payload = tr.service.serve(req)
	}
	header.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(payload)), Request: req}, nil
}

func (tr *testCosmosDBTransport) find(match func(testCosmosDBRecord) bool) []testCosmosDBRecord {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []testCosmosDBRecord
	for _, r := range tr.records {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

func testCosmosDBIsLogin(r testCosmosDBRecord) bool {
	return strings.Contains(r.path, "/oauth2/") || strings.Contains(r.path, "/.well-known/") || strings.Contains(r.path, "/discovery/")
}

// testCosmosDBService answers the requests of one poll of database db,
// container items and lease container leases: the RIDs, two physical
// ranges ("0" [,80) and "1" [80,FF)), the lease query (one page per entry
// of leasePages) and change feed reads (304 unless changeFeed answers).
type testCosmosDBService struct {
	leasePages                [][]string
	changeFeed                func(h http.Header) (int, http.Header, string)
	databaseRID, containerRID string         // default testCosmosDBDatabaseRID, testCosmosDBContainerRID
	beforePage                func(page int) // runs before a lease page is answered
}

func (s *testCosmosDBService) serve(req *http.Request) (int, http.Header, string) {
	header := http.Header{}
	switch p := req.URL.Path; {
	case req.Method == http.MethodGet && p == "/dbs/db":
		return http.StatusOK, header, `{"id":"db","_rid":"` + cmp.Or(s.databaseRID, testCosmosDBDatabaseRID) + `"}`
	case req.Method == http.MethodGet && p == "/dbs/db/colls/items":
		return http.StatusOK, header, `{"id":"items","_rid":"` + cmp.Or(s.containerRID, testCosmosDBContainerRID) + `"}`
	case req.Method == http.MethodGet && p == "/dbs/db/colls/items/pkranges":
		return http.StatusOK, header, `{"PartitionKeyRanges":[{"id":"0","minInclusive":"","maxExclusive":"80","parents":[]},{"id":"1","minInclusive":"80","maxExclusive":"FF","parents":[]}]}`
	case req.Method == http.MethodPost && p == "/dbs/db/colls/leases/docs":
		page := 0
		if c := req.Header.Get("x-ms-continuation"); c != "" {
			_, _ = fmt.Sscanf(c, "page-%d", &page)
		}
		if s.beforePage != nil {
			s.beforePage(page)
		}
		var docs []string
		if page < len(s.leasePages) {
			docs = s.leasePages[page]
		}
		if page+1 < len(s.leasePages) {
			header.Set("x-ms-continuation", fmt.Sprintf("page-%d", page+1))
		}
		return http.StatusOK, header, `{"Documents":[` + strings.Join(docs, ",") + `],"_count":` + fmt.Sprint(len(docs)) + `}`
	case req.Method == http.MethodGet && p == "/dbs/db/colls/items/docs" && s.changeFeed != nil:
		return s.changeFeed(req.Header)
	case req.Method == http.MethodGet && p == "/dbs/db/colls/items/docs":
		return http.StatusNotModified, header, ""
	}
	return http.StatusNotFound, header, `{"code":"NotFound","message":"no such route"}`
}

// testCosmosDBEstimate runs one poll against service, with account keys.
func testCosmosDBEstimate(t *testing.T, service *testCosmosDBService) (CosmosDBLagEstimate, *testCosmosDBTransport, error) {
	t.Helper()
	tr := &testCosmosDBTransport{service: service}
	estimator := testCosmosDBEstimator(t, tr)
	estimate, err := estimator.Estimate(context.Background())
	return estimate, tr, err
}

// testCosmosDBEstimator is the estimator of processor orders on db/items
// with its leases in db/leases, with account keys, through tr.
func testCosmosDBEstimator(t *testing.T, tr *testCosmosDBTransport) *CosmosDBLagEstimator {
	t.Helper()
	data, leases, err := ResolveCosmosDBConnections(CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey)}, tr, logr.Discard())
	require.NoError(t, err)
	return NewCosmosDBLagEstimator(NewCosmosDBClient(data, tr), NewCosmosDBClient(leases, tr), CosmosDBContainers{
		Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders",
	})
}

// testCosmosDBLeaseID is a lease id as the .NET SDK writes it for
// processor orders on myaccount's db/items.
func testCosmosDBLeaseID(token string) string {
	return "ordersmyaccount.documents.azure.com_" + testCosmosDBDatabaseRID + "_" + testCosmosDBContainerRID + ".." + token
}

func testCosmosDBJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// testCosmosDBJavaState is a Java v4 change feed state, Base64 URL-safe as
// ChangeFeedState.toString writes it.
func testCosmosDBJavaState(t *testing.T, mode string, entries ...[3]string) string {
	t.Helper()
	var continuation []map[string]any
	for _, e := range entries {
		var token any
		if e[2] != "null" {
			token = e[2]
		}
		continuation = append(continuation, map[string]any{"token": token, "range": map[string]any{"min": e[0], "max": e[1]}})
	}
	state := map[string]any{"V": 1, "Rid": testCosmosDBContainerRID, "Mode": mode, "StartFrom": map[string]any{"Type": "BEGINNING"},
		"Continuation": map[string]any{"V": 1, "Rid": testCosmosDBContainerRID, "Continuation": continuation, "Range": map[string]any{"min": "", "max": "FF"}}}
	return base64.URLEncoding.EncodeToString([]byte(testCosmosDBJSON(t, state)))
}

func TestCosmosDBCredentialSelection(t *testing.T) {
	sp := func(a CosmosDBAuth) CosmosDBAuth {
		a.TenantID, a.ClientID, a.ClientSecret = "tenant-1", "client-1", testCosmosDBClientSecret
		return a
	}
	wi := v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
	type want struct{ dataHost, dataKey, dataToken, leaseHost, leaseKey, leaseToken string }
	const data, lease = "myaccount.documents.azure.com:443", "leaseaccount.documents.azure.com:443"
	tests := []struct {
		name    string
		auth    CosmosDBAuth
		want    want // *Key: the key used; *Token: "secret" or "chained"
		wantErr string
	}{
		{name: "connection string, lease account inherits it",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey)},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "connection string wins over endpoint and key",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), Endpoint: testCosmosDBLeaseHost, Key: testCosmosDBLeaseKey},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "endpoint and key, lease account inherits both",
			auth: CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "key wins over a service principal",
			auth: sp(CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey}),
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "endpoint without key uses the service principal, lease inherits it",
			auth: sp(CosmosDBAuth{Endpoint: testCosmosDBEndpoint}),
			want: want{dataHost: data, dataToken: "secret", leaseHost: data, leaseToken: "secret"}},
		{name: "workload identity wins over a service principal",
			auth: sp(CosmosDBAuth{Endpoint: testCosmosDBEndpoint, PodIdentity: wi}),
			want: want{dataHost: data, dataToken: "chained", leaseHost: data, leaseToken: "chained"}},
		{name: "workload identity ignores a partial service principal",
			auth: CosmosDBAuth{Endpoint: testCosmosDBEndpoint, TenantID: "tenant-1", PodIdentity: wi},
			want: want{dataHost: data, dataToken: "chained", leaseHost: data, leaseToken: "chained"}},
		{name: "key wins over workload identity",
			auth: CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, PodIdentity: wi},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "separate lease account by leaseConnection",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseConnection: testCosmosDBConnection(testCosmosDBLeaseHost, testCosmosDBLeaseKey)},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: lease, leaseKey: testCosmosDBLeaseKey}},
		{name: "leaseConnection wins over leaseEndpoint and leaseCosmosDBKey",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseConnection: testCosmosDBConnection(testCosmosDBLeaseHost, testCosmosDBLeaseKey),
				LeaseEndpoint: testCosmosDBEndpoint, LeaseKey: testCosmosDBKey},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: lease, leaseKey: testCosmosDBLeaseKey}},
		{name: "key for the data account, bearer token for the lease account",
			auth: sp(CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, LeaseEndpoint: testCosmosDBLeaseHost}),
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: lease, leaseToken: "secret"}},
		{name: "bearer token for the data account, key for the lease account",
			auth: sp(CosmosDBAuth{Endpoint: testCosmosDBEndpoint, LeaseEndpoint: testCosmosDBLeaseHost, LeaseKey: testCosmosDBLeaseKey}),
			want: want{dataHost: data, dataToken: "secret", leaseHost: lease, leaseKey: testCosmosDBLeaseKey}},
		{name: "keys for both accounts accept a partial service principal (tenantId only)",
			auth: CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseConnection: testCosmosDBConnection(testCosmosDBLeaseHost, testCosmosDBLeaseKey), TenantID: "tenant-1"},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: lease, leaseKey: testCosmosDBLeaseKey}},
		{name: "endpoint keys for both accounts accept a partial service principal",
			auth: CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, LeaseEndpoint: testCosmosDBLeaseHost, LeaseKey: testCosmosDBLeaseKey, TenantID: "tenant-1", ClientID: "client-1"},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: lease, leaseKey: testCosmosDBLeaseKey}},
		{name: "an inherited key accepts a partial service principal",
			auth: CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, ClientSecret: testCosmosDBClientSecret},
			want: want{dataHost: data, dataKey: testCosmosDBKey, leaseHost: data, leaseKey: testCosmosDBKey}},
		{name: "leaseEndpoint does not inherit cosmosDBKey",
			auth:    CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, LeaseEndpoint: testCosmosDBLeaseHost},
			wantErr: "the lease account (leaseEndpoint) has no account key: an account without a key needs bearer-token authentication"},
		{name: "leaseCosmosDBKey without leaseEndpoint is refused",
			auth:    CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseKey: testCosmosDBLeaseKey},
			wantErr: "leaseCosmosDBKey is set but neither leaseEndpoint nor leaseConnection is"},
		{name: "partial service principal for a keyless endpoint",
			auth:    CosmosDBAuth{Endpoint: testCosmosDBEndpoint, TenantID: "tenant-1"},
			wantErr: "the data account (endpoint) has no account key: service-principal authentication needs tenantId, clientId and clientSecret together; missing clientId, clientSecret"},
		{name: "partial service principal for a keyless lease endpoint",
			auth:    CosmosDBAuth{Endpoint: testCosmosDBEndpoint, Key: testCosmosDBKey, LeaseEndpoint: testCosmosDBLeaseHost, ClientID: "client-1", ClientSecret: testCosmosDBClientSecret},
			wantErr: "the lease account (leaseEndpoint) has no account key: service-principal authentication needs tenantId, clientId and clientSecret together; missing tenantId"},
		{name: "both accounts keyless without credentials",
			auth:    CosmosDBAuth{Endpoint: testCosmosDBEndpoint, LeaseEndpoint: testCosmosDBLeaseHost},
			wantErr: "the data account (endpoint) has no account key: an account without a key needs bearer-token authentication"},
		{name: "no account at all", auth: CosmosDBAuth{}, wantErr: "no endpoint: set connection, or endpoint"},
		{name: "cosmosDBKey without endpoint", auth: CosmosDBAuth{Key: testCosmosDBKey}, wantErr: "cosmosDBKey is set but endpoint is not"},
		{name: "unsupported pod identity",
			auth:    CosmosDBAuth{Endpoint: testCosmosDBEndpoint, PodIdentity: v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderGCP}},
			wantErr: `podIdentity provider "gcp" is not supported; use azure-workload`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.auth.PodIdentity.Provider == v1alpha1.PodIdentityProviderAzureWorkload {
				tokenFile := filepath.Join(t.TempDir(), "token")
				require.NoError(t, os.WriteFile(tokenFile, []byte("federated-token"), 0o600))
				t.Setenv("AZURE_CLIENT_ID", "client-wi")
				t.Setenv("AZURE_TENANT_ID", "tenant-wi")
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)
			}
			tr := &testCosmosDBTransport{}
			dataConn, leaseConn, err := ResolveCosmosDBConnections(tt.auth, tr, logr.Discard())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				for _, secret := range []string{testCosmosDBKey, testCosmosDBLeaseKey, testCosmosDBClientSecret} {
					assert.NotContains(t, err.Error(), secret, "the error quotes a secret")
				}
				return
			}
			require.NoError(t, err)
			got := want{dataHost: dataConn.Endpoint.Host, leaseHost: leaseConn.Endpoint.Host}
			got.dataKey, got.dataToken = testCosmosDBCredential(dataConn)
			got.leaseKey, got.leaseToken = testCosmosDBCredential(leaseConn)
			assert.Equal(t, tt.want, got)
			assert.Empty(t, tr.find(func(testCosmosDBRecord) bool { return true }), "resolving sent requests")
		})
	}
}

// testCosmosDBCredential names an account's credential: its key as base64,
// or the kind of its token credential.
func testCosmosDBCredential(a *CosmosDBConnection) (key, token string) {
	if a.UsesKey() {
		key = base64.StdEncoding.EncodeToString(a.key)
	}
	switch a.token.(type) {
	case nil:
	case *azidentity.ClientSecretCredential:
		token = "secret"
	case *azidentity.ChainedTokenCredential:
		token = "chained"
	default:
		token = fmt.Sprintf("%T", a.token)
	}
	return key, token
}

func TestCosmosDBServicePrincipalValidation(t *testing.T) {
	tests := []struct {
		tenant, client, secret string
		wantErr                string
	}{
		{"tenant-1", "client-1", testCosmosDBClientSecret, ""},
		{"", "", "", "an account without a key needs bearer-token authentication: configure azure-workload identity or tenantId, clientId and clientSecret"},
		{"tenant-1", "", "", "missing clientId, clientSecret"},
		{"", "client-1", "", "missing tenantId, clientSecret"},
		{"", "", testCosmosDBClientSecret, "missing tenantId, clientId"},
		{"tenant-1", "client-1", "", "missing clientSecret"},
		{"tenant-1", "", testCosmosDBClientSecret, "missing clientId"},
		{"", "client-1", testCosmosDBClientSecret, "missing tenantId"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("tenant=%t,client=%t,secret=%t", tt.tenant != "", tt.client != "", tt.secret != ""), func(t *testing.T) {
			auth := CosmosDBAuth{Endpoint: testCosmosDBEndpoint, TenantID: tt.tenant, ClientID: tt.client, ClientSecret: CosmosDBSecret(tt.secret)}
			data, _, err := ResolveCosmosDBConnections(auth, &testCosmosDBTransport{}, logr.Discard())
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.IsType(t, &azidentity.ClientSecretCredential{}, data.token)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			if strings.HasPrefix(tt.wantErr, "missing") {
				assert.Contains(t, err.Error(), "service-principal authentication needs tenantId, clientId and clientSecret together")
			}
			assert.NotContains(t, err.Error(), testCosmosDBClientSecret)
		})
	}
}

func TestCosmosDBTokenScopeAndAuthority(t *testing.T) {
	tests := []struct {
		name, cloud, resourceURL, authority, endpoint string
		workloadIdentity                              bool
		wantScope, wantAuthorityHost                  string
		wantErr                                       string
	}{
		{name: "default cloud", endpoint: testCosmosDBEndpoint,
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.microsoftonline.com"},
		{name: "AzurePublicCloud", cloud: "AzurePublicCloud", endpoint: testCosmosDBEndpoint,
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.microsoftonline.com"},
		{name: "cloud names are case-insensitive", cloud: "azureusgovernmentcloud", endpoint: "https://myaccount.documents.azure.us/",
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.microsoftonline.us"},
		{name: "AzureUSGovernmentCloud", cloud: "AzureUSGovernmentCloud", endpoint: "https://myaccount.documents.azure.us/",
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.microsoftonline.us"},
		{name: "AzureChinaCloud", cloud: "AzureChinaCloud", endpoint: "https://myaccount.documents.azure.cn/",
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.chinacloudapi.cn"},
		{name: "AzureGermanCloud", cloud: "AzureGermanCloud", endpoint: "https://myaccount.documents.microsoftazure.de/",
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.microsoftonline.de"},
		{name: "cosmosDBResourceURL does not override a known cloud", cloud: "AzureChinaCloud", resourceURL: "https://cosmos.override.example", endpoint: "https://myaccount.documents.azure.cn/",
			wantScope: "https://cosmos.azure.com/.default", wantAuthorityHost: "login.chinacloudapi.cn"},
		{name: "Private", cloud: "Private", resourceURL: "https://cosmos.private.example/", authority: "https://login.private.example/", endpoint: "https://myaccount.cosmos.private.example/",
			wantScope: "https://cosmos.private.example/.default", wantAuthorityHost: "login.private.example"},
		{name: "private, lowercase", cloud: "private", resourceURL: "https://cosmos.private.example", authority: "https://login.private.example/", endpoint: "https://myaccount.cosmos.private.example/",
			wantScope: "https://cosmos.private.example/.default", wantAuthorityHost: "login.private.example"},
		{name: "Private with workload identity is refused", cloud: "Private", resourceURL: "https://cosmos.private.example", endpoint: "https://myaccount.cosmos.private.example/",
			workloadIdentity: true, wantErr: "cloud: Private is not used with podIdentity azure-workload"},
		{name: "workload identity on a known cloud", cloud: "AzureChinaCloud", endpoint: "https://myaccount.documents.azure.cn/",
			workloadIdentity: true, wantScope: "https://cosmos.azure.com/.default"},
		{name: "Private without cosmosDBResourceURL", cloud: "Private", authority: "https://login.private.example/", endpoint: "https://myaccount.cosmos.private.example/",
			wantErr: "needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication"},
		{name: "Private service principal without activeDirectoryEndpoint", cloud: "Private", resourceURL: "https://cosmos.private.example", endpoint: "https://myaccount.cosmos.private.example/",
			wantErr: "needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := CosmosDBAuth{Endpoint: tt.endpoint, Cloud: tt.cloud, CosmosDBResourceURL: tt.resourceURL, ActiveDirectoryEndpoint: tt.authority}
			if tt.workloadIdentity {
				t.Setenv("AZURE_CLIENT_ID", "client-wi")
				t.Setenv("AZURE_TENANT_ID", "tenant-wi")
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", filepath.Join(t.TempDir(), "token"))
				auth.PodIdentity = v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}
			} else {
				auth.TenantID, auth.ClientID, auth.ClientSecret = "tenant-1", "client-1", testCosmosDBClientSecret
			}
			tr := &testCosmosDBTransport{service: &testCosmosDBService{}}
			data, lease, err := ResolveCosmosDBConnections(givenIn(auth), tr, logr.Discard())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantScope, data.scope)
			assert.Equal(t, tt.wantScope, lease.scope)
			if tt.workloadIdentity {
				return // its token comes from the pod's federated identity
			}
			// One poll: the token request's authority and scope, and the
			// token on every Cosmos DB request.
			_, err = NewCosmosDBLagEstimator(NewCosmosDBClient(data, tr), NewCosmosDBClient(lease, tr), CosmosDBContainers{
				Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders",
			}).Estimate(context.Background())
			require.NoError(t, err)
			logins := tr.find(testCosmosDBIsLogin)
			require.NotEmpty(t, logins)
			for _, r := range logins {
				assert.Equal(t, tt.wantAuthorityHost, r.host, "%s %s", r.method, r.path)
			}
			tokens := tr.find(func(r testCosmosDBRecord) bool { return strings.HasSuffix(r.path, "/tenant-1/oauth2/v2.0/token") })
			require.Len(t, tokens, 1, "one token for both accounts and every request")
			form, err := url.ParseQuery(tokens[0].body)
			require.NoError(t, err)
			assert.Contains(t, strings.Fields(form.Get("scope")), tt.wantScope)
			assert.Equal(t, "client-1", form.Get("client_id"))
			cosmos := tr.find(func(r testCosmosDBRecord) bool { return !testCosmosDBIsLogin(r) })
			require.Len(t, cosmos, 3) // database, container, lease query
			for _, r := range cosmos {
				assert.Equal(t, "type=aad&ver=1.0&sig="+testCosmosDBAccessToken, r.header.Get("Authorization"), "%s %s", r.method, r.path)
			}
		})
	}
}

func TestCosmosDBConnectionString(t *testing.T) {
	tests := []struct {
		name, connection, wantEndpoint, wantKey, wantErr string
	}{
		{name: "as the portal shows it", connection: "AccountEndpoint=https://acc.documents.azure.com:443/;AccountKey=" + testCosmosDBKey + ";",
			wantEndpoint: "https://acc.documents.azure.com:443/", wantKey: testCosmosDBKey},
		{name: "names are case-insensitive", connection: "accountendpoint=https://acc.documents.azure.com:443/;ACCOUNTKEY=" + testCosmosDBLeaseKey,
			wantEndpoint: "https://acc.documents.azure.com:443/", wantKey: testCosmosDBLeaseKey},
		{name: "spaces, other parts and the key's '=' padding", connection: " AccountKey = " + testCosmosDBLeaseKey + " ; ApplicationName=app;AccountEndpoint = https://acc.documents.azure.com ;",
			wantEndpoint: "https://acc.documents.azure.com/", wantKey: testCosmosDBLeaseKey},
		{name: "the endpoint's path is normalised", connection: "AccountEndpoint=https://acc.documents.azure.com:443;AccountKey=" + testCosmosDBKey,
			wantEndpoint: "https://acc.documents.azure.com:443/", wantKey: testCosmosDBKey},
		{name: "any host: the connection string binds its endpoint", connection: "AccountEndpoint=https://cosmos.internal.example/;AccountKey=" + testCosmosDBKey,
			wantEndpoint: "https://cosmos.internal.example/", wantKey: testCosmosDBKey},
		{name: "missing AccountKey", connection: "AccountEndpoint=https://acc.documents.azure.com:443/", wantErr: "connection: a connection string needs both AccountEndpoint and AccountKey"},
		{name: "missing AccountEndpoint", connection: "AccountKey=" + testCosmosDBKey, wantErr: "connection: a connection string needs both AccountEndpoint and AccountKey"},
		{name: "not a connection string", connection: testCosmosDBKey, wantErr: "connection: a connection string needs both AccountEndpoint and AccountKey"},
		{name: "key is not base64", connection: "AccountEndpoint=https://acc.documents.azure.com/;AccountKey=not*base64*key-not-for-logs", wantErr: "connection AccountKey: account key is not valid non-empty base64"},
		{name: "endpoint scheme", connection: "AccountEndpoint=ftp://acc.documents.azure.com/;AccountKey=" + testCosmosDBKey, wantErr: `connection AccountEndpoint: scheme must be https, got "ftp"`},
		{name: "endpoint with a path", connection: "AccountEndpoint=https://acc.documents.azure.com/dbs/x;AccountKey=" + testCosmosDBKey, wantErr: `connection AccountEndpoint: URL must not have a path, got "/dbs/x"`},
		{name: "endpoint with a query", connection: "AccountEndpoint=https://acc.documents.azure.com/?a=b;AccountKey=" + testCosmosDBKey, wantErr: "connection AccountEndpoint: URL must not carry user info, query or fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, prefix := range []string{"", "lease"} {
				auth := CosmosDBAuth{Connection: CosmosDBSecret(tt.connection)}
				if prefix == "lease" {
					auth = CosmosDBAuth{Connection: testCosmosDBConnection(testCosmosDBEndpoint, testCosmosDBKey), LeaseConnection: CosmosDBSecret(tt.connection)}
				}
				data, lease, err := ResolveCosmosDBConnections(auth, &testCosmosDBTransport{}, logr.Discard())
				if tt.wantErr != "" {
					require.Error(t, err)
					wantErr := tt.wantErr
					if prefix == "lease" {
						wantErr = "leaseC" + strings.TrimPrefix(wantErr, "c")
					}
					assert.Equal(t, wantErr, err.Error())
					assert.NotContains(t, err.Error(), "not-for-logs")
					continue
				}
				require.NoError(t, err)
				account := data
				if prefix == "lease" {
					account = lease
				}
				assert.Equal(t, tt.wantEndpoint, account.Endpoint.String())
				key, _ := testCosmosDBCredential(account)
				assert.Equal(t, tt.wantKey, key)
			}
		})
	}
}

func TestCosmosDBMasterKeySignature(t *testing.T) {
	// The example of the REST API's "Access control" page.
	const docKey = "dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw=="
	key, err := base64.StdEncoding.DecodeString(docKey)
	require.NoError(t, err)
	got := signCosmosDBRequest(key, "GET", "dbs", "dbs/ToDoList", "Thu, 27 Apr 2017 00:51:12 GMT")
	unescaped, err := url.QueryUnescape(got)
	require.NoError(t, err)
	assert.Equal(t, "type=master&ver=1.0&sig=c09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu+c+c=", unescaped)
	assert.Equal(t, testCosmosDBSignature(t, docKey, "GET", "dbs", "dbs/ToDoList", "Thu, 27 Apr 2017 00:51:12 GMT"), got)

	// Every request of a poll is signed for its own resource type and link.
	_, tr, err := testCosmosDBEstimate(t, &testCosmosDBService{leasePages: [][]string{{
		testCosmosDBJSON(t, map[string]any{"id": testCosmosDBLeaseID("1"), "version": 1, "LeaseToken": "20-40", "ContinuationToken": `"5"`,
			"FeedRange": map[string]any{"Range": map[string]any{"min": "20", "max": "40"}}}),
	}}})
	require.NoError(t, err)
	want := map[string][2]string{ // path: resource type, resource link
		"GET /dbs/db":                      {"dbs", "dbs/db"},
		"GET /dbs/db/colls/items":          {"colls", "dbs/db/colls/items"},
		"POST /dbs/db/colls/leases/docs":   {"docs", "dbs/db/colls/leases"},
		"GET /dbs/db/colls/items/pkranges": {"pkranges", "dbs/db/colls/items"},
		"GET /dbs/db/colls/items/docs":     {"docs", "dbs/db/colls/items"},
	}
	seen := map[string]bool{}
	for _, r := range tr.find(func(testCosmosDBRecord) bool { return true }) {
		request := r.method + " " + r.path
		resource, ok := want[request]
		require.True(t, ok, "unexpected request %s", request)
		seen[request] = true
		date := r.header.Get("x-ms-date")
		assert.NotEmpty(t, date)
		assert.Equal(t, testCosmosDBSignature(t, testCosmosDBKey, r.method, resource[0], resource[1], date), r.header.Get("Authorization"), request)
		assert.Equal(t, "2020-11-05", r.header.Get("x-ms-version"), request)
	}
	assert.Len(t, seen, len(want))
}

func TestCosmosDBLeaseDecoding(t *testing.T) {
	dotnetRange := func(lower, upper string) map[string]any {
		return map[string]any{"Range": map[string]any{"min": lower, "max": upper}}
	}
	javaRange := func(lower, upper string) map[string]any {
		return map[string]any{"Range": map[string]any{"min": lower, "max": upper, "isMinInclusive": true, "isMaxInclusive": false}}
	}
	tests := []struct {
		name string
		doc  map[string]any
		want *CosmosDBLease // nil: not counted (the comment says why)
	}{
		{name: ".NET v0", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": `"24"`, "Owner": "host-a",
			"FeedRange": dotnetRange("", "80"), "Mode": "Incremental Feed", "properties": map[string]any{}, "timestamp": "2026-06-28T14:42:40Z"},
			want: &CosmosDBLease{Token: "0", Continuation: `"24"`}},
		{name: ".NET v0 all versions and deletes", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": `"24"`, "Mode": "full-fidelity FEED"},
			want: &CosmosDBLease{Token: "0", Continuation: `"24"`, AllVersionsAndDeletes: true}},
		{name: ".NET v0 unknown mode is read as latest version", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": `"24"`, "Mode": "Future Feed"},
			want: &CosmosDBLease{Token: "0", Continuation: `"24"`}},
		{name: ".NET v1 EPK", doc: map[string]any{"id": testCosmosDBLeaseID("05C1DF-80"), "version": 1, "LeaseToken": "05C1DF-80", "ContinuationToken": `"100"`, "Owner": nil,
			"FeedRange": dotnetRange("05c1df", "80"), "Mode": "Incremental Feed"},
			want: &CosmosDBLease{Token: "05C1DF-80", EPK: true, Min: "05C1DF", Max: "80", Continuation: `"100"`}},
		{name: "Java v0 (no version)", doc: map[string]any{"id": "ordersmyaccount.documents.azure.com_db_items..1", "LeaseToken": "1", "ContinuationToken": `"11"`, "Owner": "ZKNjph"},
			want: &CosmosDBLease{Token: "1", Continuation: `"11"`}},
		{name: "Java v1 EPK, state picks the entry of its range, FULL_FIDELITY", doc: map[string]any{"id": testCosmosDBLeaseID("80-FF"), "version": 1, "LeaseToken": "80-FF",
			"feedRange": javaRange("80", "FF"), "ContinuationToken": testCosmosDBJavaState(t, "FULL_FIDELITY", [3]string{"", "80", `"11"`}, [3]string{"80", "FF", `"42"`})},
			want: &CosmosDBLease{Token: "80-FF", EPK: true, Min: "80", Max: "FF", Continuation: `"42"`, AllVersionsAndDeletes: true}},
		{name: "Java v1 EPK INCREMENTAL", doc: map[string]any{"id": testCosmosDBLeaseID("-80"), "version": 1, "LeaseToken": "-80",
			"feedRange": javaRange("", "80"), "ContinuationToken": testCosmosDBJavaState(t, "INCREMENTAL", [3]string{"", "80", `"7"`})},
			want: &CosmosDBLease{Token: "-80", EPK: true, Min: "", Max: "80", Continuation: `"7"`}},
		{name: ".NET v2 library (PartitionId)", doc: map[string]any{"id": testCosmosDBLeaseID("1"), "PartitionId": "1", "ContinuationToken": `"9"`, "Owner": "worker"},
			want: &CosmosDBLease{Token: "1", Continuation: `"9"`}},
		{name: "bare LSN continuation", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": "24"},
			want: &CosmosDBLease{Token: "0", Continuation: `"24"`}},
		{name: "null continuation (never checkpointed)", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": nil}}, // "never checkpointed"
		{name: "empty continuation", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": ""}},                      // "never checkpointed"
		{name: "no continuation field", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0"}},                                            // "never checkpointed"
		{name: "Java v1 state not checkpointed", doc: map[string]any{"id": testCosmosDBLeaseID("-FF"), "version": 1, "LeaseToken": "-FF",
			"feedRange": javaRange("", "FF"), "ContinuationToken": testCosmosDBJavaState(t, "INCREMENTAL", [3]string{"", "FF", "null"})}}, // "never checkpointed"
		{name: "continuation is not an LSN", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": `"abc"`}},                                                 // "malformed continuation"
		{name: "no lease token", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "ContinuationToken": `"24"`}},                                                                                 // "no lease token"
		{name: "EPK lease without a range", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 1, "LeaseToken": "0", "ContinuationToken": `"24"`}},                                                   // "malformed range"
		{name: "EPK lease with an empty range", doc: map[string]any{"id": testCosmosDBLeaseID("80-80"), "version": 1, "LeaseToken": "80-80", "ContinuationToken": `"24"`, "FeedRange": dotnetRange("80", "80")}}, // "malformed range"
		{name: "a future lease version", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": 2, "LeaseToken": "0", "ContinuationToken": `"24"`}},                                                      // "unknown version"
		{name: "malformed field types", doc: map[string]any{"id": testCosmosDBLeaseID("0"), "version": "zero", "LeaseToken": 0, "ContinuationToken": 24}},                                                        // "not decodable"
		{name: ".info document", doc: map[string]any{"id": "ordersmyaccount.documents.azure.com_" + testCosmosDBDatabaseRID + "_" + testCosmosDBContainerRID + ".info"}},
		{name: ".lock document", doc: map[string]any{"id": "ordersmyaccount.documents.azure.com_" + testCosmosDBDatabaseRID + "_" + testCosmosDBContainerRID + ".lock", "ttl": 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			estimate, tr, err := testCosmosDBEstimate(t, &testCosmosDBService{leasePages: [][]string{{testCosmosDBJSON(t, tt.doc)}}})
			require.NoError(t, err)
			reads := tr.find(func(r testCosmosDBRecord) bool {
				return r.method == http.MethodGet && r.path == "/dbs/db/colls/items/docs"
			})
			if tt.want == nil {
				assert.Empty(t, estimate.Leases)
				assert.Empty(t, reads, "a document that is not a lease was read")
				return
			}
			require.Len(t, estimate.Leases, 1)
			assert.Equal(t, *tt.want, estimate.Leases[0].CosmosDBLease)
			require.Len(t, reads, 1)
			assert.Equal(t, tt.want.Continuation, reads[0].header.Get("If-None-Match"))
		})
	}
}

func TestCosmosDBLeaseQueryPages(t *testing.T) {
	id := func(processor, host, database, container, token string) string {
		return processor + host + "_" + database + "_" + container + ".." + token
	}
	lease := func(leaseID, token string) string {
		return testCosmosDBJSON(t, map[string]any{"id": leaseID, "LeaseToken": token, "ContinuationToken": `"1"`})
	}
	prefix := "ordersmyaccount.documents.azure.com_" + testCosmosDBDatabaseRID + "_" + testCosmosDBContainerRID
	pages := [][]string{{
		lease(testCosmosDBLeaseID("0"), "0"),
		lease(id("orders", "myaccount-westus2.documents.azure.com", testCosmosDBDatabaseRID, testCosmosDBContainerRID, "1"), "1"), // another host name: not ours
		lease(id("orders", "myaccount-prod.documents.azure.com", testCosmosDBDatabaseRID, testCosmosDBContainerRID, "7"), "7"),    // another account
		testCosmosDBJSON(t, map[string]any{"id": prefix + ".info"}),
		testCosmosDBJSON(t, map[string]any{"id": prefix + ".lock", "ttl": 60}),
		testCosmosDBJSON(t, map[string]any{"id": testCosmosDBLeaseID("9"), "LeaseToken": []int{9}, "ContinuationToken": `"1"`}), // malformed
		lease(id("orders-v2", "myaccount.documents.azure.com", testCosmosDBDatabaseRID, testCosmosDBContainerRID, "0"), "0"),    // prefix collision
	}, {
		lease(id("orders", "myaccount.documents.azure.com", "db", "items", "2"), "2"),                                        // Java v0 names
		lease(id("orders", "myaccount.documents.azure.com", testCosmosDBDatabaseRID, "OtherRID0A=", "3"), "3"),               // another container
		lease(id("orders", "otheraccount.documents.azure.com", testCosmosDBDatabaseRID, testCosmosDBContainerRID, "4"), "4"), // another account
		lease(id("orders", "myaccountx.documents.azure.com", testCosmosDBDatabaseRID, testCosmosDBContainerRID, "5"), "5"),   // an account name prefix
		lease(id("orders", "myaccount.documents.azure.com", "db", "items-archive", "6"), "6"),                                // a container name prefix
	}}
	estimate, tr, err := testCosmosDBEstimate(t, &testCosmosDBService{leasePages: pages})
	require.NoError(t, err)
	var tokens []string
	for _, l := range estimate.Leases {
		tokens = append(tokens, l.Token)
	}
	assert.Equal(t, []string{"0", "2"}, tokens)

	queries := tr.find(func(r testCosmosDBRecord) bool { return r.method == http.MethodPost })
	require.Len(t, queries, 2)
	assert.Empty(t, queries[0].header.Get("x-ms-continuation"))
	assert.Equal(t, "page-1", queries[1].header.Get("x-ms-continuation"))
	for _, q := range queries {
		assert.Equal(t, "True", q.header.Get("x-ms-documentdb-isquery"))
		assert.Equal(t, "True", q.header.Get("x-ms-documentdb-query-enablecrosspartition"))
		assert.Equal(t, "application/query+json", q.header.Get("Content-Type"))
		var query struct {
			Query      string
			Parameters []struct{ Name, Value string }
		}
		require.NoError(t, json.Unmarshal([]byte(q.body), &query))
		assert.Contains(t, query.Query, "STARTSWITH(c.id, @processor)")
		assert.Equal(t, []struct{ Name, Value string }{{"@processor", "orders"}}, query.Parameters)
	}
}

func TestCosmosDBSessionTokenAndItemLSN(t *testing.T) {
	tests := []struct {
		name, session, body string
		allVersions         bool
		status              int
		wantLag             int64
		wantErr             string
	}{
		{name: "simple", session: "0:15", body: `[{"id":"a","_lsn":11,"_ts":1700000000}]`, wantLag: 5},
		{name: "versioned", session: "0:-1#15", body: `[{"_lsn":11}]`, wantLag: 5},
		{name: "vector: the global LSN", session: "0:1#15#1=12#2=13", body: `[{"_lsn":11}]`, wantLag: 5},
		{name: "multi-entry: this range's entry", session: "1:-1#99, 0:-1#15,2:7", body: `[{"_lsn":11}]`, wantLag: 5},
		{name: "one change", session: "0:-1#11", body: `[{"_lsn":11}]`, wantLag: 1},
		{name: "session behind the change", session: "0:-1#9", body: `[{"_lsn":11}]`, wantLag: 0},
		{name: "empty page", session: "0:-1#15", body: `[]`, wantLag: 0},
		{name: "304", status: http.StatusNotModified, wantLag: 0},
		{name: "all versions and deletes: metadata.lsn", allVersions: true, session: "0:-1#15",
			body: `[{"current":{"id":"a","_lsn":14},"metadata":{"operationType":"replace","lsn":12,"crts":1700000000,"previousImageLSN":11}}]`, wantLag: 4},
		{name: "all versions and deletes: a delete has no item", allVersions: true, session: "0:-1#15",
			body: `[{"metadata":{"operationType":"delete","lsn":13,"crts":1700000000,"timeToLiveExpired":false}}]`, wantLag: 3},
		{name: "multi-entry without this range", session: "1:-1#99,2:-1#5", body: `[{"_lsn":11}]`, wantErr: "session token lists no entry for partition key range 0"},
		{name: "no session token", body: `[{"_lsn":11}]`, wantErr: "response has no x-ms-session-token"},
		{name: "session token without range", session: "15", body: `[{"_lsn":11}]`, wantErr: "malformed session token: no range id"},
		{name: "session LSN not a number", session: "0:-1#x", body: `[{"_lsn":11}]`, wantErr: "malformed session token: LSN is not a non-negative 64-bit integer"},
		{name: "negative session LSN", session: "0:-5", body: `[{"_lsn":11}]`, wantErr: "malformed session token: LSN is not a non-negative 64-bit integer"},
		{name: "item without _lsn", session: "0:-1#15", body: `[{"id":"a"}]`, wantErr: "first change's _lsn is not a non-negative 64-bit integer"},
		{name: "_lsn as a string", session: "0:-1#15", body: `[{"_lsn":"11"}]`, wantErr: "first change's _lsn is not a non-negative 64-bit integer"},
		{name: "negative _lsn", session: "0:-1#15", body: `[{"_lsn":-1}]`, wantErr: "first change's _lsn is not a non-negative 64-bit integer"},
		{name: "all versions and deletes without metadata", allVersions: true, session: "0:-1#15", body: `[{"_lsn":11}]`, wantErr: "first change has no metadata"},
		{name: "malformed body", session: "0:-1#15", body: `{`, wantErr: "read change feed: malformed response body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := map[string]any{"id": testCosmosDBLeaseID("0"), "version": 0, "LeaseToken": "0", "ContinuationToken": `"10"`}
			if tt.allVersions {
				lease["Mode"] = "Full-Fidelity Feed"
			}
			estimate, _, err := testCosmosDBEstimate(t, &testCosmosDBService{
				leasePages: [][]string{{testCosmosDBJSON(t, lease)}},
				changeFeed: func(http.Header) (int, http.Header, string) {
					if tt.status != 0 {
						return tt.status, http.Header{}, ""
					}
					h := http.Header{}
					if tt.session != "" {
						h.Set("x-ms-session-token", tt.session)
					}
					return http.StatusOK, h, `{"Documents":` + tt.body + `}`
				},
			})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "lease 0")
				return
			}
			require.NoError(t, err)
			require.Len(t, estimate.Leases, 1)
			assert.Equal(t, tt.wantLag, estimate.Leases[0].Lag)
		})
	}
}

func TestCosmosDBSummarize(t *testing.T) {
	lags := func(values ...int64) []CosmosDBLeaseLag {
		var out []CosmosDBLeaseLag
		for _, v := range values {
			out = append(out, CosmosDBLeaseLag{Lag: v})
		}
		return out
	}
	const maxInt64 = int64(^uint64(0) >> 1)
	tests := []struct {
		name                  string
		estimate              CosmosDBLagEstimate
		threshold, activation int64
		want                  CosmosDBLagSummary
	}{
		{"no leases", CosmosDBLagEstimate{}, 100, 0, CosmosDBLagSummary{}},
		{"caught up", CosmosDBLagEstimate{Leases: lags(0, 0)}, 100, 0, CosmosDBLagSummary{}},
		{"sum below the cap", CosmosDBLagEstimate{Leases: lags(30, 0, 20)}, 100, 0, CosmosDBLagSummary{TotalLag: 50, ActivePartitions: 2, Metric: 50, Active: true}},
		{"one hot partition is capped at one threshold", CosmosDBLagEstimate{Leases: lags(1000, 0)}, 100, 0, CosmosDBLagSummary{TotalLag: 1000, ActivePartitions: 1, Metric: 100, Active: true}},
		{"cap per active partition", CosmosDBLagEstimate{Leases: lags(500, 50, 0)}, 100, 0, CosmosDBLagSummary{TotalLag: 550, ActivePartitions: 2, Metric: 200, Active: true}},
		{"at the activation threshold is inactive", CosmosDBLagEstimate{Leases: lags(10)}, 100, 10, CosmosDBLagSummary{TotalLag: 10, ActivePartitions: 1, Metric: 10}},
		{"stale parent alone wakes one replica", CosmosDBLagEstimate{Leases: lags(0), StaleParents: 1}, 100, 5, CosmosDBLagSummary{TotalLag: 6, ActivePartitions: 1, Metric: 6, Active: true}},
		{"stale parent raises a small lag above activation", CosmosDBLagEstimate{Leases: lags(3), StaleParents: 1}, 100, 5, CosmosDBLagSummary{TotalLag: 6, ActivePartitions: 1, Metric: 6, Active: true}},
		{"stale parent adds no partition to the cap", CosmosDBLagEstimate{Leases: lags(500), StaleParents: 2}, 100, 5, CosmosDBLagSummary{TotalLag: 500, ActivePartitions: 1, Metric: 100, Active: true}},
		{"sums saturate", CosmosDBLagEstimate{Leases: lags(maxInt64, maxInt64)}, maxInt64, 0, CosmosDBLagSummary{TotalLag: maxInt64, ActivePartitions: 2, Metric: maxInt64, Active: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.estimate.Summarize(tt.threshold, tt.activation))
		})
	}
}

// Java writes its change feed state in URL-safe Base64 with padding; standard
// Base64 is read as the one fallback. "~~~" makes the two encodings differ.
func TestCosmosDBJavaStateEncodings(t *testing.T) {
	raw := []byte(`{"Mode":"FULL_FIDELITY","Pad":"~~~?>","Continuation":{"Continuation":[{"token":"\"42\"","range":{"min":""}}]}}`)
	require.NotEqual(t, base64.URLEncoding.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw))
	for name, enc := range map[string]*base64.Encoding{"URL-safe, as Java writes it": base64.URLEncoding, "standard": base64.StdEncoding} {
		t.Run(name, func(t *testing.T) {
			state, ok := decodeCosmosDBJavaState(enc.EncodeToString(raw))
			require.True(t, ok)
			require.NotNil(t, state.token(""))
			assert.Equal(t, `"42"`, *state.token(""))
			assert.True(t, parseCosmosDBMode(state.Mode))
		})
	}
	_, ok := decodeCosmosDBJavaState("not base64 at all!")
	assert.False(t, ok)
}

// A container deleted and created again under its names (a restore, a
// redeploy) has new RIDs, and its processor writes new leases, maybe leaving
// the old ones behind. The poll after it reads the RIDs again and counts
// the new container's leases, never the old ones against the new feed.
func TestCosmosDBRecreatedContainer(t *testing.T) {
	const newDatabaseRID, newContainerRID, otherContainerRID = "Xk9bAA==", "Xk9bAMz1fQg=", "Xk9bAJ7wPhI="
	lease := func(databaseRID, containerRID, token string, lsn int) string {
		id := "ordersmyaccount.documents.azure.com_" + databaseRID + "_" + containerRID + ".." + token
		return testCosmosDBJSON(t, map[string]any{"id": id, "LeaseToken": token, "ContinuationToken": fmt.Sprintf(`"%d"`, lsn)})
	}
	oldLeases := []string{lease(testCosmosDBDatabaseRID, testCosmosDBContainerRID, "0", 80), lease(testCosmosDBDatabaseRID, testCosmosDBContainerRID, "1", 80)}
	newLeases := []string{lease(newDatabaseRID, newContainerRID, "0", 5), lease(newDatabaseRID, newContainerRID, "1", 5)}
	// feed is a container whose ranges are at LSN current: a read from
	// LSN n < current is answered with change n+1 (lag current-n), else 304.
	// Only pages name the container (x-ms-content-path); a 304 does not.
	feed := func(containerRID string, current int) func(http.Header) (int, http.Header, string) {
		return func(h http.Header) (int, http.Header, string) {
			var from int
			_, _ = fmt.Sscanf(h.Get("If-None-Match"), `"%d"`, &from)
			if from >= current {
				return http.StatusNotModified, http.Header{}, ""
			}
			header := http.Header{"X-Ms-Session-Token": {fmt.Sprintf("0:-1#%d", current)}, "X-Ms-Content-Path": {containerRID}}
			return http.StatusOK, header, fmt.Sprintf(`{"Documents":[{"_lsn":%d}]}`, from+1)
		}
	}
	before := &testCosmosDBService{leasePages: [][]string{oldLeases}, changeFeed: feed(testCosmosDBContainerRID, 90)}
	recreated := func(current int, pages ...[]string) *testCosmosDBService {
		return &testCosmosDBService{leasePages: pages, changeFeed: feed(newContainerRID, current), databaseRID: newDatabaseRID, containerRID: newContainerRID}
	}
	tests := []struct {
		name      string
		after     *testCosmosDBService
		wantLags  map[string]int64 // token: lag
		wantReads int              // of the database's RID, over both polls
	}{
		{"leases recreated", recreated(20, newLeases), map[string]int64{"0": 15, "1": 15}, 2},
		{"old leases left behind", recreated(20, append(slices.Clone(oldLeases), newLeases...)), map[string]int64{"0": 15, "1": 15}, 2},
		{"old leases read first, new ones on the next page", recreated(20, oldLeases, newLeases), map[string]int64{"0": 15, "1": 15}, 2},
		{"processor not restarted: the feed names the new container", recreated(100, oldLeases), map[string]int64{}, 2},
		{"nothing recreated", before, map[string]int64{"0": 10, "1": 10}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &testCosmosDBTransport{service: before}
			estimator := testCosmosDBEstimator(t, tr)
			first, err := estimator.Estimate(context.Background())
			require.NoError(t, err)
			require.Len(t, first.Leases, 2)
			assert.Equal(t, int64(10), first.Leases[0].Lag)

			tr.service = tt.after
			second, err := estimator.Estimate(context.Background())
			require.NoError(t, err)
			lags := map[string]int64{}
			for _, l := range second.Leases {
				lags[l.Token] = l.Lag
			}
			assert.Equal(t, tt.wantLags, lags)
			assert.Len(t, tr.find(func(r testCosmosDBRecord) bool { return r.path == "/dbs/db" }), tt.wantReads, "reads of the database's RID")
		})
	}
}

// A lease container shared with the processor of another container holds
// leases that name that container: known after the first poll, they make no
// later poll read the RIDs again.
func TestCosmosDBOtherContainersLeasesKeepTheRIDs(t *testing.T) {
	other := testCosmosDBJSON(t, map[string]any{"id": "ordersmyaccount.documents.azure.com_" + testCosmosDBDatabaseRID + "_Dm0aAJ7wPhI=..0", "LeaseToken": "0", "ContinuationToken": `"1"`})
	tr := &testCosmosDBTransport{service: &testCosmosDBService{leasePages: [][]string{{other, testCosmosDBJSON(t, map[string]any{"id": testCosmosDBLeaseID("0"), "LeaseToken": "0", "ContinuationToken": `"1"`})}}}}
	estimator := testCosmosDBEstimator(t, tr)
	for range 3 {
		estimate, err := estimator.Estimate(context.Background())
		require.NoError(t, err)
		require.Len(t, estimate.Leases, 1)
	}
	assert.Len(t, tr.find(func(r testCosmosDBRecord) bool { return r.path == "/dbs/db/colls/items" }), 1, "reads of the container's RID")
}

// A change feed answer names the resource it came from in
// x-ms-content-path. One under the container (the container itself, an item
// or a partition key range, whose RIDs begin with the container's bytes) is
// the container's; another container's (it was recreated during the poll)
// fails the poll: no value is better than one from the wrong container.
func TestCosmosDBChangeFeedContentPath(t *testing.T) {
	tests := []struct {
		name, contentPath string
		wantErr           string
	}{
		{"none", "", ""},
		{"the container", testCosmosDBContainerRID, ""},
		{"an item of the container", "Dm0aAKj0eAcBAAAAAAAAAA==", ""},
		{"a partition key range of the container", "Dm0aAKj0eAcCAAAAAAAAUA==", ""},
		{"a RID with - for /", "Dm0aAKj0eAf-++8AAAAAUA==", ""},
		{"a recreated container", "Xk9bAMz1fQg=", "answered by container Xk9bAMz1fQg="},
		{"another container of the database", "Dm0aAKj0eAg=", "answered by container Dm0aAKj0eAg="},
		{"another container, its RID with - for /", "Dm0aAP-77wg=", "answered by container Dm0aAP-77wg="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			estimate, _, err := testCosmosDBEstimate(t, &testCosmosDBService{
				leasePages: [][]string{{testCosmosDBJSON(t, map[string]any{"id": testCosmosDBLeaseID("0"), "LeaseToken": "0", "ContinuationToken": `"1"`})}},
				changeFeed: func(http.Header) (int, http.Header, string) {
					header := http.Header{"X-Ms-Session-Token": {"0:-1#5"}}
					if tt.contentPath != "" {
						header.Set("X-Ms-Content-Path", tt.contentPath)
					}
					return http.StatusOK, header, `{"Documents":[{"_lsn":2}]}`
				},
			})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "the monitored container is not the one whose RIDs were read")
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, estimate.Leases, 1)
			assert.Equal(t, int64(4), estimate.Leases[0].Lag)
		})
	}
}

// The change feed reads of a lease page start as the page arrives: the
// service answers the second page only once a read of a first-page lease
// has reached it, which a poll that waited for every page never sends.
func TestCosmosDBReadsStartWithTheFirstLeasePage(t *testing.T) {
	firstRead := make(chan struct{})
	var once sync.Once
	lease := func(token string) string {
		return testCosmosDBJSON(t, map[string]any{"id": testCosmosDBLeaseID(token), "LeaseToken": token, "ContinuationToken": `"1"`})
	}
	estimate, _, err := testCosmosDBEstimate(t, &testCosmosDBService{
		leasePages: [][]string{{lease("0")}, {lease("1")}},
		beforePage: func(page int) {
			if page == 1 {
				select {
				case <-firstRead:
				case <-time.After(10 * time.Second):
					t.Error("no change feed read before the last lease page was asked for")
				}
			}
		},
		changeFeed: func(http.Header) (int, http.Header, string) {
			once.Do(func() { close(firstRead) })
			return http.StatusNotModified, http.Header{}, ""
		},
	})
	require.NoError(t, err)
	assert.Len(t, estimate.Leases, 2)
}

// The bound per monitored container and the credential per identity, shared by the
// scalers of the process (azure_cosmosdb_shared.go).
// testCosmosDBGate is a transport that counts the Cosmos DB requests in
// flight (peak included) and holds the change feed reads to the hosts in
// held until release is called (or their context ends).
type testCosmosDBGate struct {
	next    *testCosmosDBTransport
	held    map[string]bool
	open    chan struct{}
	release func()

	mu             sync.Mutex
	inFlight, peak int
}

func newTestCosmosDBGate(service *testCosmosDBService, held ...string) *testCosmosDBGate {
	g := &testCosmosDBGate{next: &testCosmosDBTransport{service: service}, held: map[string]bool{}, open: make(chan struct{})}
	g.release = sync.OnceFunc(func() { close(g.open) })
	for _, h := range held {
		g.held[h] = true
	}
	return g
}

func (g *testCosmosDBGate) Do(req *http.Request) (*http.Response, error) {
	if testCosmosDBIsLogin(testCosmosDBRecord{path: req.URL.Path}) {
		return g.next.Do(req)
	}
	g.mu.Lock()
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	if g.held[req.URL.Hostname()] && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/docs") {
		select {
		case <-g.open:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return g.next.Do(req)
}

func (g *testCosmosDBGate) counts() (inFlight, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.peak
}

// waitInFlight waits until n requests are in flight.
func (g *testCosmosDBGate) waitInFlight(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { in, _ := g.counts(); return in == n }, 10*time.Second, time.Millisecond,
		"waiting for %d requests in flight", n)
}

// testCosmosDBLeaseService answers leases leases (tokens "0", "1", ...) of
// processor orders on the accounts named by host, nothing pending.
func testCosmosDBLeaseService(t *testing.T, leases int, hosts ...string) *testCosmosDBService {
	var page []string
	for _, host := range hosts {
		for i := range leases {
			token := fmt.Sprint(i)
			id := "orders" + host + "_" + testCosmosDBDatabaseRID + "_" + testCosmosDBContainerRID + ".." + token
			page = append(page, testCosmosDBJSON(t, map[string]any{"id": id, "LeaseToken": token, "ContinuationToken": `"1"`}))
		}
	}
	return &testCosmosDBService{leasePages: [][]string{page}}
}

// testCosmosDBAccountEstimator is the estimator of processor orders on
// host's db/items with an account key, through transport; the test closes it.
func testCosmosDBAccountEstimator(t *testing.T, host string, transport http.RoundTripper) *CosmosDBLagEstimator {
	t.Helper()
	auth := CosmosDBAuth{Connection: testCosmosDBConnection("https://"+host+":443/", testCosmosDBKey)}
	return testCosmosDBEstimatorOf(t, auth, testCosmosDBRoundTripper{transport})
}

// testCosmosDBEstimatorOf is the estimator of processor orders on db/items
// with its leases in db/leases, with auth's connections (a data and a lease
// client), through transport; the test closes it.
func testCosmosDBEstimatorOf(t *testing.T, auth CosmosDBAuth, transport policy.Transporter) *CosmosDBLagEstimator {
	t.Helper()
	data, leases, err := ResolveCosmosDBConnections(auth, transport, logr.Discard())
	require.NoError(t, err)
	e := NewCosmosDBLagEstimator(NewCosmosDBClient(data, transport), NewCosmosDBClient(leases, transport),
		CosmosDBContainers{Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders"})
	t.Cleanup(e.Close)
	return e
}

// testCosmosDBTokenForms are the forms of the token requests tr saw.
func testCosmosDBTokenForms(t *testing.T, tr *testCosmosDBTransport) []url.Values {
	t.Helper()
	var forms []url.Values
	for _, r := range tr.find(func(r testCosmosDBRecord) bool { return strings.HasSuffix(r.path, "/oauth2/v2.0/token") }) {
		form, err := url.ParseQuery(r.body)
		require.NoError(t, err)
		forms = append(forms, form)
	}
	return forms
}

// testCosmosDBRoundTripper adapts a RoundTripper to policy.Transporter.
type testCosmosDBRoundTripper struct{ http.RoundTripper }

func (t testCosmosDBRoundTripper) Do(req *http.Request) (*http.Response, error) {
	return t.RoundTrip(req)
}

func (g *testCosmosDBGate) RoundTrip(req *http.Request) (*http.Response, error) { return g.Do(req) }

// estimateAsync polls e in the background; the result arrives on the channel.
func estimateAsync(ctx context.Context, e *CosmosDBLagEstimator) <-chan error {
	done := make(chan error, 1)
	go func() {
		estimate, err := e.Estimate(ctx)
		if err == nil && len(estimate.Leases) == 0 {
			err = fmt.Errorf("no lease estimated")
		}
		done <- err
	}()
	return done
}

func TestCosmosDBContainerBoundIsSharedByItsScalers(t *testing.T) {
	// Two scalers of one monitored container, 100 leases each: their polls
	// together never have more than the bound in flight (without it, 200
	// reads), and each poll has no more readers than reads in flight.
	const host = "bound-shared.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, host), host)
	defer gate.release()
	first := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	second := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	gate.waitInFlight(t, cosmosDBContainerRequests)
	time.Sleep(50 * time.Millisecond) // room for any request beyond the bound
	_, peak := gate.counts()
	assert.Equal(t, cosmosDBContainerRequests, peak)
	assert.Equal(t, cosmosDBContainerRequests, testCosmosDBGoroutines("(*CosmosDBLagEstimator).attempt.func1"), "one reader per read in flight")
	gate.release()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	_, peak = gate.counts()
	assert.Equal(t, cosmosDBContainerRequests, peak)
}

func TestCosmosDBContainerBoundIsPerContainer(t *testing.T) {
	// Container db/items of account a is held by two scalers' polls; a
	// scaler of db/items on another account is not held by it, nor is
	// another container of account a.
	const a, b = "bound-a.documents.azure.com", "bound-b.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, a, b), a)
	defer gate.release()
	held := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, a, gate))
	alsoHeld := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, a, gate))
	gate.waitInFlight(t, cosmosDBContainerRequests)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, <-estimateAsync(ctx, testCosmosDBAccountEstimator(t, b, gate)))
	endpoint := &url.URL{Scheme: "https", Host: a + ":443"}
	items, releaseItems, _ := cosmosDBContainers.acquire(newCosmosDBContainerKey(endpoint, "db", "items"), newCosmosDBContainer)
	defer releaseItems()
	other, releaseOther, _ := cosmosDBContainers.acquire(newCosmosDBContainerKey(endpoint, "db", "other"), newCosmosDBContainer)
	defer releaseOther()
	assert.NotSame(t, items, other)
	require.NoError(t, other.acquire(ctx, false), "a place at another container of the account")
	other.release()
	// Host names are compared as the account: case and a trailing dot do
	// not make another container.
	key := func(host string) cosmosDBContainerKey {
		return newCosmosDBContainerKey(&url.URL{Scheme: "https", Host: host}, "db", "items")
	}
	assert.Equal(t, key("bound-a.documents.azure.com:443"), key("Bound-A.Documents.Azure.Com."))
	assert.NotEqual(t, key("bound-a.documents.azure.com:8081"), key("bound-a.documents.azure.com"))
	gate.release()
	require.NoError(t, <-held)
	require.NoError(t, <-alsoHeld)
}

func TestCosmosDBContainerWaitEndsWithThePoll(t *testing.T) {
	// With the container's bound taken, a poll whose context ends while it
	// waits fails, with no value and no read sent; once the others are done
	// every place is back (none lost) and the next poll succeeds.
	const host = "bound-wait.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, host), host)
	defer gate.release()
	held := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	alsoHeld := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	gate.waitInFlight(t, cosmosDBContainerRequests)
	reads := func() int {
		return len(gate.next.find(func(r testCosmosDBRecord) bool {
			return r.method == http.MethodGet && strings.HasSuffix(r.path, "/docs")
		}))
	}
	sent := reads()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	waiting := testCosmosDBAccountEstimator(t, host, gate)
	estimate, err := waiting.Estimate(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), fmt.Sprintf("waiting for one of the container's %d requests in flight", cosmosDBContainerRequests))
	assert.Empty(t, estimate.Leases)
	assert.Equal(t, sent, reads(), "the waiting poll read nothing")

	gate.release()
	require.NoError(t, <-held)
	require.NoError(t, <-alsoHeld)
	assert.Zero(t, testCosmosDBInFlight(waiting.container), "every place given back")
	estimate, err = waiting.Estimate(context.Background())
	require.NoError(t, err)
	assert.Len(t, estimate.Leases, 100)
}

// testCosmosDBInFlight is c's requests in flight and waiting.
func testCosmosDBInFlight(c *cosmosDBContainer) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight + len(c.waiting)
}

func TestCosmosDBFailedReadGivesItsPlacesBack(t *testing.T) {
	// One read of 300 answers 404 while the query is still handing leases
	// out: the poll fails by itself (nothing hangs), every place is back
	// (no lease was lost in flight with its place), and the next poll
	// succeeds.
	const host = "bound-fail.documents.azure.com"
	service := testCosmosDBLeaseService(t, 300, host)
	var failed atomic.Bool
	transport := testCosmosDBRoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/docs") &&
			req.Header.Get("X-Ms-Documentdb-Partitionkeyrangeid") == "7" && failed.CompareAndSwap(false, true) {
			return &http.Response{StatusCode: http.StatusNotFound, Request: req, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"code":"NotFound","message":"gone"}`))}, nil
		}
		return (&testCosmosDBTransport{service: service}).Do(req)
	})
	estimator := testCosmosDBAccountEstimator(t, host, transport)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := estimator.Estimate(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 404")
	require.NoError(t, ctx.Err(), "the poll ended by itself")
	assert.Zero(t, testCosmosDBInFlight(estimator.container), "every place given back")
	estimate, err := estimator.Estimate(context.Background())
	require.NoError(t, err)
	assert.Len(t, estimate.Leases, 300)
}

func TestCosmosDBContainerEntryLivesWhileHeld(t *testing.T) {
	// The container's entry is held by each of its scalers and dropped when
	// the last is closed; Close may be called twice.
	const host = "bound-refs.documents.azure.com"
	tr := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 1, host)}
	first := testCosmosDBAccountEstimator(t, host, testCosmosDBRoundTripper{tr})
	second := testCosmosDBAccountEstimator(t, host, testCosmosDBRoundTripper{tr})
	key := newCosmosDBContainerKey(first.data.endpoint, "db", "items")
	assert.Equal(t, 2, cosmosDBContainers.holders(key))
	first.Close()
	first.Close()
	assert.Equal(t, 1, cosmosDBContainers.holders(key))
	second.Close()
	assert.Zero(t, cosmosDBContainers.holders(key))
	cosmosDBShared.mu.Lock()
	_, kept := cosmosDBShared.entries[key]
	cosmosDBShared.mu.Unlock()
	assert.False(t, kept, "the entry is dropped with its last scaler")
}

func TestCosmosDBNextLeasePageIsAskedForWhileReadsWait(t *testing.T) {
	// The change feed reads are held: the second lease page is asked for
	// while the first page's reads wait, so the reads do not run dry at
	// each page's end.
	const host = "next-page.documents.azure.com"
	service := testCosmosDBLeaseService(t, 3, host)
	service.leasePages = [][]string{service.leasePages[0][:2], service.leasePages[0][2:]}
	gate := newTestCosmosDBGate(service, host)
	defer gate.release()
	poll := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	require.Eventually(t, func() bool {
		return len(gate.next.find(func(r testCosmosDBRecord) bool { return r.header.Get("X-Ms-Continuation") == "page-1" })) == 1
	}, 5*time.Second, time.Millisecond, "the second page asked for while the first page's reads wait")
	reads := gate.next.find(func(r testCosmosDBRecord) bool {
		return r.method == http.MethodGet && strings.HasSuffix(r.path, "/docs")
	})
	assert.Empty(t, reads, "no read answered yet")
	gate.release()
	require.NoError(t, <-poll)
}

// testCosmosDBGoroutines counts the goroutines running function.
func testCosmosDBGoroutines(function string) int {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, function+"(") {
			n++
		}
	}
	return n
}

// testCosmosDBThrottle is an account with a request budget, as one with
// provisioned throughput: beyond perSecond requests a second (a bucket of
// burst) it answers 429 with x-ms-retry-after-ms, the time until the
// budget has room again (at least 5 ms); it answers the others after
// latency. It counts both answers.
type testCosmosDBThrottle struct {
	next       policy.Transporter
	perSecond  float64
	burst      float64
	latency    time.Duration // of each admitted request
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	throttled  int
	admitted   int
	throttleAt []time.Time
}

func (a *testCosmosDBThrottle) Do(req *http.Request) (*http.Response, error) {
	if testCosmosDBIsLogin(testCosmosDBRecord{path: req.URL.Path}) {
		return a.next.Do(req)
	}
	a.mu.Lock()
	now := time.Now()
	if a.last.IsZero() {
		a.tokens = a.burst
	}
	a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.perSecond)
	a.last = now
	if a.tokens < 1 {
		a.throttled++
		a.throttleAt = append(a.throttleAt, now)
		wait := max(5*time.Millisecond, time.Duration((1-a.tokens)/a.perSecond*float64(time.Second)))
		a.mu.Unlock()
		return &http.Response{StatusCode: http.StatusTooManyRequests, Request: req,
			Header: http.Header{"Content-Type": {"application/json"}, "X-Ms-Retry-After-Ms": {fmt.Sprint(wait.Milliseconds())}, "X-Ms-Substatus": {"3200"}},
			Body:   io.NopCloser(strings.NewReader(`{"code":"429","message":"Request rate is large."}`))}, nil
	}
	a.tokens--
	a.admitted++
	a.mu.Unlock()
	time.Sleep(a.latency)
	return a.next.Do(req)
}

func (a *testCosmosDBThrottle) RoundTrip(req *http.Request) (*http.Response, error) { return a.Do(req) }

func (a *testCosmosDBThrottle) counts() (admitted, throttled int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.admitted, a.throttled
}

func TestCosmosDBThrottledReadWaitsAsAsked(t *testing.T) {
	// The account answers one read 429 asking for a wait: that read is sent
	// again no sooner, and its poll succeeds; the poll's other reads, and
	// another scaler's poll, are not held by it (the wait is the request's,
	// as azcore honours it, not the account's).
	const host = "throttled-wait.documents.azure.com"
	// The wait: long enough for the other scaler's poll to read its leases on
	// a loaded machine (300 ms was not, once in CI), within azcore's 2 s cap.
	const wait = 1500 * time.Millisecond
	service := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 4, host)}
	var (
		mu        sync.Mutex
		throttled time.Time
		retried   time.Time
		others    int // reads answered within the wait
	)
	transport := testCosmosDBRoundTripFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/docs") {
			switch token := req.Header.Get("X-Ms-Documentdb-Partitionkeyrangeid"); {
			case token == "0" && throttled.IsZero():
				throttled = time.Now()
				return &http.Response{StatusCode: http.StatusTooManyRequests, Request: req,
					Header: http.Header{"Content-Type": {"application/json"}, "X-Ms-Retry-After-Ms": {fmt.Sprint(wait.Milliseconds())}, "X-Ms-Substatus": {"3200"}},
					Body:   io.NopCloser(strings.NewReader(`{"code":"429","message":"Request rate is large."}`))}, nil
			case token == "0":
				retried = time.Now()
			case !throttled.IsZero() && time.Since(throttled) < wait:
				others++
			}
		}
		return service.Do(req)
	})
	first := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, transport))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return !throttled.IsZero() }, 5*time.Second, time.Millisecond)
	second := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, transport))
	require.NoError(t, <-second)
	require.NoError(t, <-first)
	mu.Lock()
	defer mu.Unlock()
	require.False(t, retried.IsZero(), "the throttled read is sent again")
	assert.GreaterOrEqual(t, retried.Sub(throttled), wait)
	assert.GreaterOrEqual(t, others, 4, "the other scaler's reads went on during the wait")
}

func TestCosmosDBThrottledContainerIsNotStormed(t *testing.T) {
	// Four scalers of a container that admits 2,000 requests a second (a
	// burst of 20; 2 ms a request) poll 100 leases each at once, as after
	// an operator restart: every poll succeeds, and the account answers
	// fewer 429s than it admits requests (the container's bound halves at
	// each round of 429s, so fewer requests are in flight).
	const host = "throttled.documents.azure.com"
	account := &testCosmosDBThrottle{next: &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 100, host)}, perSecond: 2000, burst: 20, latency: 2 * time.Millisecond}
	var (
		polls      []<-chan error
		estimators []*CosmosDBLagEstimator
	)
	for range 4 {
		e := testCosmosDBAccountEstimator(t, host, account)
		estimators = append(estimators, e)
		polls = append(polls, estimateAsync(context.Background(), e))
	}
	for _, p := range polls {
		require.NoError(t, <-p)
	}
	admitted, throttled := account.counts()
	t.Logf("%d requests admitted, %d answered 429", admitted, throttled)
	assert.GreaterOrEqual(t, admitted, 4*100)
	assert.Positive(t, throttled, "the budget was exceeded")
	assert.Less(t, throttled, admitted, "fewer 429s than admitted requests")
	limit := func() int {
		c := estimators[0].container
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.limit
	}

	// Recovery from the lowest limit: the account stops throttling, and
	// from a second after the last 429, within two polls of 100 leases the
	// bound is whole again.
	c := estimators[0].container
	c.mu.Lock()
	c.limit = 1
	c.mu.Unlock()
	time.Sleep(cosmosDBThrottleHold)
	account.mu.Lock()
	account.perSecond, account.burst = 1e9, 1e9
	account.mu.Unlock()
	for range 2 {
		_, err := estimators[0].Estimate(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, cosmosDBContainerRequests, limit(), "whole again within two polls")
}

func TestCosmosDBThrottledLeaseQueryLeavesTheBound(t *testing.T) {
	// The lease container answers the lease query 429 twice: the poll
	// succeeds, and the monitored container's bound is not lowered (its
	// throughput is another container's).
	const host = "throttled-leases.documents.azure.com"
	service := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 10, host)}
	var throttled atomic.Int32
	transport := testCosmosDBRoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/leases/docs") && throttled.Add(1) <= 2 {
			return &http.Response{StatusCode: http.StatusTooManyRequests, Request: req,
				Header: http.Header{"Content-Type": {"application/json"}, "X-Ms-Retry-After-Ms": {"10"}, "X-Ms-Substatus": {"3200"}},
				Body:   io.NopCloser(strings.NewReader(`{"code":"429","message":"Request rate is large."}`))}, nil
		}
		return service.Do(req)
	})
	estimator := testCosmosDBAccountEstimator(t, host, transport)
	estimate, err := estimator.Estimate(context.Background())
	require.NoError(t, err)
	assert.Len(t, estimate.Leases, 10)
	assert.EqualValues(t, 3, throttled.Load(), "two 429s, then the page")
	c := estimator.container
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, cosmosDBContainerRequests, c.limit)
	assert.Zero(t, c.inFlight)
}

func TestCosmosDBContainerLimitFollowsThrottling(t *testing.T) {
	// The limit halves once for the 429s of requests sent before the last
	// halving, again for a request sent after it; no other answer adds one
	// within a second of the last 429, each adds one after; a place freed
	// by growth goes to the first waiting, and the limit never grows
	// beyond the bound.
	c, _ := newCosmosDBContainer()
	before := time.Now()
	time.Sleep(time.Millisecond)
	c.answered(time.Now(), true)
	assert.Equal(t, cosmosDBContainerRequests/2, c.limit)
	c.answered(before, true)
	assert.Equal(t, cosmosDBContainerRequests/2, c.limit, "sent before the halving: no second halving")
	time.Sleep(time.Millisecond)
	c.answered(time.Now(), true)
	assert.Equal(t, cosmosDBContainerRequests/4, c.limit)
	c.answered(time.Now(), false)
	assert.Equal(t, cosmosDBContainerRequests/4, c.limit, "no growth within a second of a 429")
	time.Sleep(cosmosDBThrottleHold)
	for range cosmosDBContainerRequests / 4 {
		require.NoError(t, c.acquire(context.Background(), false))
	}
	admitted := make(chan error, 1)
	go func() { admitted <- c.acquire(context.Background(), false) }()
	require.Eventually(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiting) == 1 }, 5*time.Second, time.Millisecond)
	c.answered(time.Now(), false)
	require.NoError(t, <-admitted, "growth admits the waiting")
	for range cosmosDBContainerRequests {
		c.answered(time.Now(), false)
	}
	assert.Equal(t, cosmosDBContainerRequests, c.limit, "never beyond the bound")
}

// testCosmosDBRoundTripFunc is a transport made of a function.
type testCosmosDBRoundTripFunc func(*http.Request) (*http.Response, error)

func (f testCosmosDBRoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) {
	return f(req)
}

func TestCosmosDBScalersSignWithTheirOwnKey(t *testing.T) {
	// Scalers of one account with other keys: each one's requests are
	// signed with its key, never the other's; the scalers of one key share
	// one pipeline, dropped with the last.
	const host = "own-key.documents.azure.com"
	tr := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 1, host)}
	transport := testCosmosDBRoundTripper{tr}
	var estimators []*CosmosDBLagEstimator
	for _, key := range []string{testCosmosDBKey, testCosmosDBLeaseKey, testCosmosDBKey} {
		e := testCosmosDBEstimatorOf(t, CosmosDBAuth{Connection: testCosmosDBConnection("https://"+host+":443/", key)}, transport)
		tr.mu.Lock()
		tr.records = nil
		tr.mu.Unlock()
		_, err := e.Estimate(context.Background())
		require.NoError(t, err)
		records := tr.find(func(r testCosmosDBRecord) bool { return r.host == host+":443" })
		require.NotEmpty(t, records)
		for _, r := range records {
			resourceType, resourceLink := cosmosDBResourceOf(r.path)
			assert.Equal(t, testCosmosDBSignature(t, key, r.method, resourceType, resourceLink, r.header.Get("X-Ms-Date")), r.header.Get("Authorization"), "%s %s", r.method, r.path)
		}
		estimators = append(estimators, e)
	}
	pipelineOf := func(key string) cosmosDBPipelineKey {
		raw, err := base64.StdEncoding.DecodeString(key)
		require.NoError(t, err)
		return cosmosDBPipelineKey{accountKey: sha256.Sum256(raw), transport: cosmosDBTransportKey(transport)}
	}
	assert.Equal(t, 4, cosmosDBPipelines.holders(pipelineOf(testCosmosDBKey)), "data and lease clients of two scalers")
	assert.Equal(t, 2, cosmosDBPipelines.holders(pipelineOf(testCosmosDBLeaseKey)))
	for _, e := range estimators {
		e.Close()
	}
	assert.Zero(t, cosmosDBPipelines.holders(pipelineOf(testCosmosDBKey)))
	assert.Zero(t, cosmosDBPipelines.holders(pipelineOf(testCosmosDBLeaseKey)))
}

func (tr *testCosmosDBTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return tr.Do(req)
}

// testCosmosDBSecretCheck answers token requests with 401 invalid_client
// unless they carry secret, as Microsoft Entra ID does for a wrong secret.
type testCosmosDBSecretCheck struct {
	*testCosmosDBTransport
	secret string
}

func (c testCosmosDBSecretCheck) Do(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/oauth2/v2.0/token") {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		if form, _ := url.ParseQuery(string(body)); form.Get("client_secret") != c.secret {
			_, _ = c.testCosmosDBTransport.Do(req) // recorded
			return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`)), Request: req}, nil
		}
	}
	return c.testCosmosDBTransport.Do(req)
}

func TestCosmosDBOneTokenPerServicePrincipal(t *testing.T) {
	const host = "token-share.documents.azure.com"
	tr := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 1, host)}
	check := testCosmosDBSecretCheck{tr, testCosmosDBClientSecret}
	servicePrincipal := func(secret string) CosmosDBAuth {
		return CosmosDBAuth{Endpoint: "https://" + host + "/", TenantID: "tenant-share", ClientID: "client-share", ClientSecret: CosmosDBSecret(secret)}
	}
	scaler := func(auth CosmosDBAuth) *CosmosDBLagEstimator {
		t.Helper()
		return testCosmosDBEstimatorOf(t, givenIn(auth), check)
	}
	tokenRequests := func() (secrets []string) {
		for _, form := range testCosmosDBTokenForms(t, tr) {
			secrets = append(secrets, form.Get("client_secret"))
		}
		return secrets
	}

	// Three scalers of one service principal polled at once: one token.
	var estimators []*CosmosDBLagEstimator
	for range 3 {
		estimators = append(estimators, scaler(servicePrincipal(testCosmosDBClientSecret)))
	}
	var polls []<-chan error
	for _, e := range estimators {
		polls = append(polls, estimateAsync(context.Background(), e))
	}
	for _, p := range polls {
		require.NoError(t, <-p)
	}
	assert.Equal(t, []string{testCosmosDBClientSecret}, tokenRequests(), "one token request for three scalers")
	keys := testCosmosDBCredentialKeys("client-share")
	require.Len(t, keys, 1)
	key := keys[0]
	assert.Equal(t, 3, cosmosDBCredentials.holders(key), "one connection per scaler: the leases are in the data account")

	// The same tenant and client id with another secret: its own token
	// request with its own secret, refused; never the cached token.
	const wrongSecret = "another-secret-not-for-logs"
	impostor := scaler(servicePrincipal(wrongSecret))
	_, err := impostor.Estimate(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_client")
	assert.NotContains(t, err.Error(), wrongSecret)
	assert.NotContains(t, err.Error(), testCosmosDBClientSecret)
	assert.Equal(t, []string{testCosmosDBClientSecret, wrongSecret}, tokenRequests())
	assert.Len(t, testCosmosDBCredentialKeys("client-share"), 2, "another secret, another credential")

	// The key names the identity, never the secret.
	for _, s := range []string{fmt.Sprint(key), fmt.Sprintf("%v", key)} {
		assert.Contains(t, s, "client-share")
		assert.NotContains(t, s, testCosmosDBClientSecret)
	}

	// Closing every scaler of the identity drops its credential: the next
	// scaler's credential asks for a token again.
	for _, e := range estimators {
		e.Close()
	}
	assert.Equal(t, 0, cosmosDBCredentials.holders(key))
	again := scaler(servicePrincipal(testCosmosDBClientSecret))
	_, err = again.Estimate(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{testCosmosDBClientSecret, wrongSecret, testCosmosDBClientSecret}, tokenRequests())
}

// testCosmosDBCredentialKeys are the keys of the shared credentials of clientID.
func testCosmosDBCredentialKeys(clientID string) []cosmosDBTokenKey {
	cosmosDBShared.mu.Lock()
	defer cosmosDBShared.mu.Unlock()
	var keys []cosmosDBTokenKey
	for k := range cosmosDBShared.entries {
		if k, ok := k.(cosmosDBTokenKey); ok && k.clientID == clientID {
			keys = append(keys, k)
		}
	}
	return keys
}

func TestCosmosDBOneTokenPerWorkloadIdentity(t *testing.T) {
	// KEDA's workload identity (KEDA's chained credential, which gets its
	// token outside the scaler's transport): scalers of one identity hold
	// one shared credential; an identityId of the TriggerAuthentication is
	// another identity.
	t.Setenv("AZURE_CLIENT_ID", "client-wi-share")
	t.Setenv("AZURE_TENANT_ID", "tenant-wi-share")
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", filepath.Join(t.TempDir(), "token"))
	transport := &testCosmosDBTransport{} // one operator: one transport
	keys := func(clientID string) (n int) {
		for _, k := range testCosmosDBCredentialKeys(clientID) {
			if k.transport == cosmosDBTransportKey(transport) {
				n++
			}
		}
		return n
	}
	resolve := func(identityID string) (release func()) {
		t.Helper()
		auth := CosmosDBAuth{Endpoint: "https://wi-share.documents.azure.com/",
			PodIdentity: v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}}
		if identityID != "" {
			auth.PodIdentity.IdentityID = &identityID
		}
		data, _, err := ResolveCosmosDBConnections(givenIn(auth), transport, logr.Discard())
		require.NoError(t, err)
		return data.releaseToken
	}
	var releases []func()
	for range 3 {
		releases = append(releases, resolve(""))
	}
	// The operator's own identity has no client id in the key (KEDA's
	// chained credential reads AZURE_CLIENT_ID itself).
	assert.Equal(t, 1, keys(""), "one credential for three scalers of one identity")
	releases = append(releases, resolve("other-identity"))
	assert.Equal(t, 1, keys("other-identity"))
	for _, release := range releases {
		release()
	}
	assert.Zero(t, keys(""), "dropped when the last holder releases it")
}

package azure

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

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
	data, leases, err := ResolveCosmosDBConnections(auth, testCosmosDBRoundTripper{transport}, logr.Discard())
	require.NoError(t, err)
	e := NewCosmosDBLagEstimator(NewCosmosDBClient(data, testCosmosDBRoundTripper{transport}), NewCosmosDBClient(leases, testCosmosDBRoundTripper{transport}),
		CosmosDBContainers{Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders"})
	t.Cleanup(e.Close)
	return e
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

func TestCosmosDBAccountBoundIsSharedByItsScalers(t *testing.T) {
	// Two scalers of one account, 100 leases each: their polls together
	// never have more than the bound in flight (without it, 200 reads).
	const host = "bound-shared.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, host), host)
	defer gate.release()
	first := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	second := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	gate.waitInFlight(t, cosmosDBAccountRequests)
	time.Sleep(50 * time.Millisecond) // room for any request beyond the bound
	_, peak := gate.counts()
	assert.Equal(t, cosmosDBAccountRequests, peak)
	gate.release()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	_, peak = gate.counts()
	assert.Equal(t, cosmosDBAccountRequests, peak)
}

func TestCosmosDBAccountBoundIsPerAccount(t *testing.T) {
	// Account a's bound is all taken; account b's poll is not held by it.
	const a, b = "bound-a.documents.azure.com", "bound-b.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, a, b), a)
	defer gate.release()
	held := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, a, gate))
	alsoHeld := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, a, gate))
	gate.waitInFlight(t, cosmosDBAccountRequests)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, <-estimateAsync(ctx, testCosmosDBAccountEstimator(t, b, gate)))
	// Host names are compared as the account: case and a trailing dot do
	// not make another account.
	assert.Equal(t, cosmosDBAccountKey(&url.URL{Scheme: "https", Host: "bound-a.documents.azure.com:443"}),
		cosmosDBAccountKey(&url.URL{Scheme: "https", Host: "Bound-A.Documents.Azure.Com."}))
	assert.NotEqual(t, cosmosDBAccountKey(&url.URL{Scheme: "https", Host: "bound-a.documents.azure.com:8081"}),
		cosmosDBAccountKey(&url.URL{Scheme: "https", Host: "bound-a.documents.azure.com"}))
	gate.release()
	require.NoError(t, <-held)
	require.NoError(t, <-alsoHeld)
}

func TestCosmosDBAccountBoundWaitEndsWithThePoll(t *testing.T) {
	// With the account's bound taken, a poll whose context ends while it
	// waits fails, with no value and no request sent.
	const host = "bound-wait.documents.azure.com"
	gate := newTestCosmosDBGate(testCosmosDBLeaseService(t, 100, host), host)
	defer gate.release()
	held := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	alsoHeld := estimateAsync(context.Background(), testCosmosDBAccountEstimator(t, host, gate))
	gate.waitInFlight(t, cosmosDBAccountRequests)
	sent := len(gate.next.find(func(testCosmosDBRecord) bool { return true }))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	waiting := testCosmosDBAccountEstimator(t, host, gate)
	estimate, err := waiting.Estimate(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), fmt.Sprintf("waiting for one of the account's %d requests in flight", cosmosDBAccountRequests))
	assert.Empty(t, estimate.Leases)
	assert.Len(t, gate.next.find(func(testCosmosDBRecord) bool { return true }), sent, "the waiting poll sent nothing")

	gate.release()
	require.NoError(t, <-held)
	require.NoError(t, <-alsoHeld)
	// The bound is free again: the same scaler's next poll succeeds.
	estimate, err = waiting.Estimate(context.Background())
	require.NoError(t, err)
	assert.Len(t, estimate.Leases, 100)
}

func TestCosmosDBSharedEntriesLiveWhileHeld(t *testing.T) {
	// The account's entry is held by every client of it and dropped when
	// the last is closed; Close may be called twice.
	const host = "bound-refs.documents.azure.com"
	key := cosmosDBAccountKey(&url.URL{Scheme: "https", Host: host})
	tr := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 1, host)}
	first := testCosmosDBAccountEstimator(t, host, testCosmosDBRoundTripper{tr})
	second := testCosmosDBAccountEstimator(t, host, testCosmosDBRoundTripper{tr})
	assert.Equal(t, 4, cosmosDBAccountSlots.holders(key), "data and lease clients of two scalers")
	first.Close()
	first.Close()
	assert.Equal(t, 2, cosmosDBAccountSlots.holders(key))
	second.Close()
	assert.Equal(t, 0, cosmosDBAccountSlots.holders(key))
	cosmosDBAccountSlots.mu.Lock()
	_, kept := cosmosDBAccountSlots.entries[key]
	cosmosDBAccountSlots.mu.Unlock()
	assert.False(t, kept, "the entry is dropped with its last client")
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
		data, leases, err := ResolveCosmosDBConnections(givenIn(auth), check, logr.Discard())
		require.NoError(t, err)
		e := NewCosmosDBLagEstimator(NewCosmosDBClient(data, check), NewCosmosDBClient(leases, check),
			CosmosDBContainers{Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders"})
		t.Cleanup(e.Close)
		return e
	}
	tokenRequests := func() (secrets []string) {
		for _, r := range tr.find(func(r testCosmosDBRecord) bool { return strings.HasSuffix(r.path, "/oauth2/v2.0/token") }) {
			form, err := url.ParseQuery(r.body)
			require.NoError(t, err)
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
	assert.Equal(t, 6, cosmosDBCredentials.holders(key), "data and lease connections of three scalers")

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
	cosmosDBCredentials.mu.Lock()
	defer cosmosDBCredentials.mu.Unlock()
	var keys []cosmosDBTokenKey
	for k := range cosmosDBCredentials.entries {
		if k.clientID == clientID {
			keys = append(keys, k)
		}
	}
	return keys
}

func TestCosmosDBOneTokenPerWorkloadIdentity(t *testing.T) {
	// KEDA's workload identity on a private cloud (its credential takes the
	// scaler's transport): scalers of one identity share one token; an
	// identityId of the TriggerAuthentication is another identity.
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600))
	t.Setenv("AZURE_CLIENT_ID", "client-wi-share")
	t.Setenv("AZURE_TENANT_ID", "tenant-wi-share")
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", tokenFile)
	t.Setenv(CosmosDBPrivateCloudEnv, "domains=cosmos.private.example;audience=https://cosmos.private.example;authority=https://login.private.example/")
	const host = "wi-share.cosmos.private.example"
	tr := &testCosmosDBTransport{service: testCosmosDBLeaseService(t, 1, host)}
	scaler := func(identityID string) *CosmosDBLagEstimator {
		t.Helper()
		auth := CosmosDBAuth{Endpoint: "https://" + host + "/", Cloud: "Private",
			PodIdentity: v1alpha1.AuthPodIdentity{Provider: v1alpha1.PodIdentityProviderAzureWorkload}}
		if identityID != "" {
			auth.PodIdentity.IdentityID = &identityID
		}
		data, leases, err := ResolveCosmosDBConnections(givenIn(auth), tr, logr.Discard())
		require.NoError(t, err)
		e := NewCosmosDBLagEstimator(NewCosmosDBClient(data, tr), NewCosmosDBClient(leases, tr),
			CosmosDBContainers{Database: "db", Container: "items", LeaseDatabase: "db", LeaseContainer: "leases", Processor: "orders"})
		t.Cleanup(e.Close)
		return e
	}
	tokenClients := func() (ids []string) {
		for _, r := range tr.find(func(r testCosmosDBRecord) bool { return strings.HasSuffix(r.path, "/oauth2/v2.0/token") }) {
			form, err := url.ParseQuery(r.body)
			require.NoError(t, err)
			ids = append(ids, form.Get("client_id"))
		}
		return ids
	}

	var polls []<-chan error
	for range 3 {
		polls = append(polls, estimateAsync(context.Background(), scaler("")))
	}
	for _, p := range polls {
		require.NoError(t, <-p)
	}
	assert.Equal(t, []string{"client-wi-share"}, tokenClients(), "one token request for three scalers")

	require.NoError(t, <-estimateAsync(context.Background(), scaler("other-identity")))
	assert.Equal(t, []string{"client-wi-share", "other-identity"}, tokenClients())
}

package emulator

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// testKey is base64 for "secret-key-for-tests".
const testKey = "c2VjcmV0LWtleS1mb3ItdGVzdHM="

// A connection string's names match case-insensitively and other parts are
// ignored, as in the SDKs; the endpoint is normalised. A bad one is refused
// naming the parameter, never quoting the key.
func TestConnectionStrings(t *testing.T) {
	data, lease, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{
		Connection: " accountendpoint=https://myaccount.documents.azure.com:443/ ; AccountKey=" + testKey + "; ApplicationName=x;"}, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if data.Endpoint.String() != "https://myaccount.documents.azure.com:443/" || !data.UsesKey() || lease.Endpoint.String() != data.Endpoint.String() || !lease.UsesKey() {
		t.Fatalf("data %s (key %v), lease %s (key %v)", data.Endpoint, data.UsesKey(), lease.Endpoint, lease.UsesKey())
	}
	for _, bad := range []string{"AccountKey=" + testKey, "AccountEndpoint=https://a.documents.azure.com/", "garbage;" + testKey,
		"AccountEndpoint=https://a.documents.azure.com/;AccountKey=%%%" + testKey, "AccountEndpoint=https:///;AccountKey=" + testKey} {
		_, _, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: azure.CosmosDBSecret(bad)}, nil, logr.Discard())
		if err == nil {
			t.Errorf("connection string %q accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), testKey) {
			t.Errorf("connection string %q: error %q, want one naming the parameter and not quoting the key", bad, err)
		}
	}
}

// FuzzConnectionString: any connection string either fails without quoting
// its key, or yields an http(s) endpoint ending in "/" with a key, for the
// lease account too.
func FuzzConnectionString(f *testing.F) {
	for _, seed := range []string{
		"AccountEndpoint=https://myaccount.documents.azure.com:443/;AccountKey=" + testKey + ";",
		"accountendpoint=http://127.0.0.1:8081/;accountkey=" + testKey,
		"AccountKey=" + testKey, "AccountEndpoint=https:///;AccountKey=" + testKey, ";;=;", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, connection string) {
		if connection == "" {
			return // no connection string: the endpoint parameters apply
		}
		data, lease, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: azure.CosmosDBSecret(connection)}, nil, logr.Discard())
		if err != nil {
			for part := range strings.SplitSeq(connection, ";") {
				name, secret, _ := strings.Cut(part, "=")
				if secret = strings.TrimSpace(secret); strings.EqualFold(strings.TrimSpace(name), "AccountKey") && len(secret) >= 8 && strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes the key", err)
				}
			}
			return
		}
		for _, a := range []*azure.CosmosDBConnection{data, lease} {
			if u := a.Endpoint; (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "/" || !a.UsesKey() {
				t.Fatalf("connection string %q: endpoint %v, key %v", connection, u, a.UsesKey())
			}
		}
	})
}

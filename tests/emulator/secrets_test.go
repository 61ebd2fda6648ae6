package emulator

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// Canary secrets planted in every credential never appear in an error or a
// log line, on success and on every failure path.
func TestSecretsNeverLeak(t *testing.T) {
	const canaryAccountKey = "U0VDUkVULUNBTkFSWS1LRVktMDEyMzQ1Njc4OQ==" // base64 "SECRET-CANARY-KEY-0123456789"
	// Served over HTTPS through the tests' proxy: no key but the emulator's
	// goes over plain HTTP.
	const host = "canary.documents.azure.com"
	srv := cosmostest.NewServer(cosmostest.WithKey(canaryAccountKey))
	t.Cleanup(srv.Close)
	routeHost(t, host, srv.Handler)
	endpoint, connection := "https://"+host+"/", "AccountEndpoint=https://"+host+"/;AccountKey="+canaryAccountKey+";"
	db := srv.Account.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", 2)
	p := leasetest.NewWriter("orders-processor", monitored, db.CreateContainer("leases", "/id", 1), dotNetV0)
	p.AccountHost = host
	if _, err := p.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	if err := monitored.WriteItemsToRange("1", 5); err != nil {
		t.Fatal(err)
	}
	metadata := map[string]string{"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb", "leaseContainerId": "leases", "processorName": "orders-processor"}
	canaries := []string{canaryAccountKey, "SECRET-CANARY", connection, canarySecret, canaryKey}
	var texts []string

	good := newScaler(t, scalerConfig(metadata, map[string]string{"connection": connection, "clientSecret": canarySecret, "tenantId": testTenant, "clientId": "x"}))
	poll(t, good)
	for _, fault := range []cosmostest.Fault{
		{Kind: cosmostest.KindQuery, Status: http.StatusForbidden},
		{Kind: cosmostest.KindChangeFeed, Status: http.StatusGone, SubStatus: 1002},
		{Kind: cosmostest.KindChangeFeed, Status: http.StatusGone, SubStatus: 1007},
		{Kind: cosmostest.KindChangeFeed, MalformedBody: true},
		{Kind: cosmostest.KindChangeFeed, DropConnection: true},
		{Kind: cosmostest.KindChangeFeed, Status: http.StatusTooManyRequests},
	} {
		remove := srv.Handler.InjectFault(fault)
		if _, _, err := good.GetMetricsAndActivity(t.Context(), "s0-metric"); err != nil {
			texts = append(texts, err.Error())
		}
		remove()
	}
	wrong := newScaler(t, scalerConfig(metadata, map[string]string{"endpoint": endpoint, "cosmosDBKey": canaryKey}))
	texts = append(texts, pollError(t, wrong).Error())
	for _, bad := range []map[string]string{
		{"connection": "AccountEndpoint=ftp://x/;AccountKey=" + canaryAccountKey},
		{"connection": "AccountEndpoint=" + endpoint + ";AccountKey=SECRET-CANARY-not-base64"},
		{"endpoint": endpoint, "cosmosDBKey": "SECRET-CANARY-not-base64"},
		{"endpoint": endpoint, "clientSecret": canarySecret, "tenantId": testTenant},
	} {
		if _, err := scalers.NewAzureCosmosDBScaler(scalerConfig(metadata, bad)); err != nil {
			texts = append(texts, err.Error())
		} else {
			t.Fatalf("bad configuration accepted: %v", bad)
		}
	}
	if len(texts) < 8 {
		t.Fatalf("only %d failure texts collected", len(texts))
	}
	texts = append(texts, scalerLogs.String())
	if !strings.Contains(scalerLogs.String(), "change feed lag estimated") {
		t.Fatal("the per-poll log line was not captured; the check below would prove nothing")
	}
	for _, text := range texts {
		for _, canary := range canaries {
			if strings.Contains(text, canary) {
				t.Fatalf("secret %q leaked into: %s", canary[:6]+"…", text)
			}
		}
	}
}

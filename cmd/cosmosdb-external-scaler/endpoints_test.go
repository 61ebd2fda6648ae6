package main

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestEndpointAllowList(t *testing.T) {
	defaults, err := parseEndpointAllowList(defaultAllowedEndpoints, false)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"shop.documents.azure.com":                true,
		"SHOP-westeurope.Documents.Azure.com.":    true,
		"shop.privatelink.documents.azure.com":    true,
		"abc.z12.sql.cosmos.fabric.microsoft.com": true,
		"shop.documents.azure.cn":                 true,
		"localhost":                               true,
		"127.0.0.1":                               true,
		"documents.azure.com":                     false, // not under the domain
		"shop.documents.azure.com.evil.example":   false,
		"evildocuments.azure.com":                 false,
		"evil.example.net":                        false,
	} {
		if got := defaults.allows(host); got != want {
			t.Errorf("allows(%q) = %v, want %v", host, got, want)
		}
	}
	if _, err := parseEndpointAllowList("a.example,,*.", true); err == nil {
		t.Error("an empty pattern was accepted")
	}
	if err := defaults.check(map[string]string{"cloud": "Private", "endpoint": "https://gw.internal/"}); err == nil || !strings.Contains(err.Error(), "--allowed-endpoints") {
		t.Errorf("cloud: Private with the default list: %v", err)
	}
	listed, _ := parseEndpointAllowList("gw.internal", true)
	if err := listed.check(map[string]string{"cloud": "Private", "endpoint": "https://gw.internal:443/"}); err != nil {
		t.Errorf("cloud: Private with its host listed: %v", err)
	}
	if err := listed.check(map[string]string{"cloud": "private", "leaseEndpoint": "https://other.internal/"}); err == nil || !strings.Contains(err.Error(), "leaseEndpoint") {
		t.Errorf("an unlisted leaseEndpoint: %v", err)
	}
}

// A caller that points endpoint or leaseEndpoint at a host of its own gets
// InvalidArgument naming the parameter before any scaler is built, so the
// key from the scaler's environment signs nothing for it.
func TestForeignEndpointGetsNoCredential(t *testing.T) {
	f := newFixture(t)
	f.env["COSMOS_KEY"] = "c2VjcmV0LWtleS1mb3ItdGVzdHM="
	ctx := testContext(t)
	for _, endpoint := range []string{"https://evil.example.net/", "https://shop.documents.azure.com.evil.example/"} {
		for _, param := range []string{"endpoint", "leaseEndpoint"} {
			md := metadata("connectionFromScalerEnv", "", "cosmosDBKeyFromScalerEnv", "COSMOS_KEY", "endpoint", "https://shop.documents.azure.com/", param, endpoint)
			if param == "leaseEndpoint" {
				md["leaseCosmosDBKeyFromScalerEnv"] = "COSMOS_KEY"
			}
			_, err := f.client.GetMetricSpec(ctx, ref(md))
			assertStatus(t, err, codes.InvalidArgument, []string{param, "--allowed-endpoints"}, "c2VjcmV0")
		}
	}
	_, err := f.client.GetMetricSpec(ctx, ref(metadata("cloud", "Private", "endpoint", "https://evil.example.net/")))
	assertStatus(t, err, codes.InvalidArgument, []string{"cloud: Private", "--allowed-endpoints"})
	if n := f.created.Load(); n != 0 {
		t.Errorf("%d scalers were built for refused endpoints", n)
	}
}

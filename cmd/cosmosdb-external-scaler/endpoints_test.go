package main

import (
	"slices"
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

// The scaler's credentials are its operator's, not the gRPC caller's: with
// cloud: Private, the token resource and the Entra ID authority the caller
// names must be in --allowed-endpoints too, as the endpoint must (issue X).
// The listed destinations then work: they reach the in-tree scaler as its
// TriggerAuthentication's would.
func TestCallerCannotRedirectTheScalersCredentials(t *testing.T) {
	listed := func(o *serverOptions) {
		o.allowedEndpoints, _ = parseEndpointAllowList("gw.internal,login.gw.internal,cosmos.gw.internal", true)
	}
	f := newFixture(t, listed)
	f.env["SP_SECRET"] = "c2VjcmV0LWNsaWVudC1zZWNyZXQ="
	ctx := testContext(t)
	sp := []string{"connectionFromScalerEnv", "", "endpoint", "https://gw.internal/", "tenantId", "tenant-1", "clientId", "client-1",
		"clientSecretFromScalerEnv", "SP_SECRET", "cloud", "Private"}
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"authority of the caller's", []string{"cosmosDBResourceURL", "https://cosmos.gw.internal/", "activeDirectoryEndpoint", "https://evil.example.net/"}, "activeDirectoryEndpoint"},
		{"token for Resource Manager", []string{"cosmosDBResourceURL", "https://management.azure.com/", "activeDirectoryEndpoint", "https://login.gw.internal/"}, "cosmosDBResourceURL"},
		{"token for the caller's host", []string{"cosmosDBResourceURL", "https://evil.example.net", "activeDirectoryEndpoint", "https://login.gw.internal/"}, "cosmosDBResourceURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, ref(metadata(append(slices.Clone(sp), tc.extra...)...)))
			assertStatus(t, err, codes.InvalidArgument, []string{tc.want, "--allowed-endpoints"}, "c2VjcmV0")
		})
	}
	if n := f.created.Load(); n != 0 {
		t.Errorf("%d scalers were built for refused destinations", n)
	}
	// Every destination listed: the scaler is built (the poll itself would
	// need the private cloud).
	md := metadata(append(slices.Clone(sp), "cosmosDBResourceURL", "https://cosmos.gw.internal/", "activeDirectoryEndpoint", "https://login.gw.internal/")...)
	if _, err := f.client.GetMetricSpec(ctx, ref(md)); err != nil {
		t.Fatalf("listed private cloud refused: %v", err)
	}
	if n := f.created.Load(); n != 1 {
		t.Errorf("%d scalers built for the listed private cloud, want 1", n)
	}
}

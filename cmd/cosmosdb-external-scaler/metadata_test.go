package main

import (
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Each secret parameter is read from the server's environment, by either
// form of its env key, into AuthParams; none is left in the metadata.
func TestSecretsComeFromTheServerEnvironment(t *testing.T) {
	env := map[string]string{"A": "value-a", "B": "value-b"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for _, param := range secretParams {
		for _, suffix := range []string{"FromScalerEnv", "FromEnv"} {
			md := metadata("connectionFromScalerEnv", "", param+suffix, "A")
			tc, err := buildTriggerConfig(ref(md), lookup, 7*time.Second)
			if err != nil {
				t.Fatalf("%s%s: %v", param, suffix, err)
			}
			c := tc.scaler
			if c.AuthParams[param] != "value-a" || len(c.AuthParams) != 1 {
				t.Errorf("%s%s: auth params %v", param, suffix, c.AuthParams)
			}
			if _, ok := c.TriggerMetadata[param+suffix]; ok {
				t.Errorf("%s%s left in the trigger metadata", param, suffix)
			}
			if len(tc.secrets) != 1 || tc.secrets[0] != "value-a" {
				t.Errorf("%s%s: secrets to scrub %v", param, suffix, tc.secrets)
			}
			if c.GlobalHTTPTimeout != 7*time.Second || c.TriggerIndex != 0 || c.ScalableObjectNamespace != testNamespace || c.ScalableObjectName != testName {
				t.Errorf("%s%s: config %+v", param, suffix, c)
			}
		}
	}
	// The data and lease accounts from different variables.
	tc, err := buildTriggerConfig(ref(metadata("connectionFromScalerEnv", "A", "leaseConnectionFromScalerEnv", "B")), lookup, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if tc.scaler.AuthParams["connection"] != "value-a" || tc.scaler.AuthParams["leaseConnection"] != "value-b" {
		t.Errorf("auth params %v", tc.scaler.AuthParams)
	}
	if tc.scaler.TriggerMetadata["processorName"] != "orders-processor" {
		t.Errorf("trigger metadata %v", tc.scaler.TriggerMetadata)
	}
}

func TestPodIdentityMetadata(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	tc, err := buildTriggerConfig(ref(metadata("connectionFromScalerEnv", "", "endpoint", "https://acct.documents.azure.com:443/",
		"podIdentityProvider", "azure-workload", "podIdentityId", "client-1", "podIdentityTenantId", "tenant-1")), none, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	id := tc.scaler.PodIdentity
	if id.Provider != kedav1alpha1.PodIdentityProviderAzureWorkload || id.GetIdentityID() != "client-1" || id.GetIdentityTenantID() != "tenant-1" {
		t.Errorf("pod identity %+v", id)
	}
	if _, ok := tc.scaler.TriggerMetadata["podIdentityProvider"]; ok {
		t.Error("podIdentityProvider left in the trigger metadata")
	}
	if _, err := buildTriggerConfig(ref(metadata("podIdentityId", "client-1")), none, time.Second); err == nil {
		t.Error("podIdentityId without a provider accepted")
	}
}

func TestMetadataHash(t *testing.T) {
	a := metadataHash(map[string]string{"x": "1", "y": "2"})
	if a != metadataHash(map[string]string{"y": "2", "x": "1"}) {
		t.Error("hash depends on map order")
	}
	if metadataHash(map[string]string{"ab": "c"}) == metadataHash(map[string]string{"a": "bc"}) {
		t.Error("pairs that join to the same text collide")
	}
	if a == metadataHash(map[string]string{"x": "1", "y": "3"}) {
		t.Error("a changed value keeps the hash")
	}
}

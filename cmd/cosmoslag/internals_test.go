package main

import (
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// TestScalerEstimator guards the reflection stopgap in internals.go: if the
// scaler's fields are renamed, this fails rather than check at run time.
func TestScalerEstimator(t *testing.T) {
	s, err := scalers.NewAzureCosmosDBScaler(&scalersconfig.ScalerConfig{
		TriggerType:       "azure-cosmosdb",
		GlobalHTTPTimeout: time.Second,
		TriggerMetadata: map[string]string{
			"databaseId": "db", "containerId": "c", "leaseDatabaseId": "db", "leaseContainerId": "leases",
			"processorName": "p", "changeFeedLagThreshold": "42", "activationChangeFeedLagThreshold": "7",
		},
		AuthParams: map[string]string{"connection": "AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey=a2V5a2V5a2V5;"},
	})
	if err != nil {
		t.Fatal(err)
	}
	est, threshold, activation, err := scalerEstimator(s)
	if err != nil || est == nil || threshold != 42 || activation != 7 {
		t.Fatalf("scalerEstimator: %v, %v, %d, %d", est, err, threshold, activation)
	}
	if _, _, _, err := scalerEstimator(nil); err == nil {
		t.Error("a nil scaler was accepted")
	}
}

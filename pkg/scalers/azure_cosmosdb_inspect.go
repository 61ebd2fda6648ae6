package scalers

// This file is NOT part of the in-tree drop-in: it lets this repository's
// command-line tool (cmd/cosmoslag) show per-lease detail from the very
// estimator a scaler built by NewAzureCosmosDBScaler polls.

import "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lag"

// AzureCosmosDBEstimator returns the estimator and thresholds of an
// azure-cosmosdb scaler; ok is false for any other Scaler.
func AzureCosmosDBEstimator(s Scaler) (estimator *lag.Estimator, threshold, activation int64, ok bool) {
	cosmos, ok := s.(*azureCosmosDBScaler)
	if !ok {
		return nil, 0, 0, false
	}
	return cosmos.estimator, cosmos.metadata.ChangeFeedLagThreshold, cosmos.metadata.ActivationChangeFeedLagThreshold, true
}

package main

// This file is the external scaler's one seam onto the azure-cosmosdb scaler
// (pkg/scalers and its support packages). Every type and function of the
// scaler the command uses is named here and nowhere else, so that moving
// the scaler's API changes this file alone.

import (
	"context"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// cosmosScaler is the in-tree scaler: Estimate runs one poll as its
// GetMetricsAndActivity does and returns it whole.
type cosmosScaler interface {
	Estimate(ctx context.Context) (triggerEstimate, error)
	Close(ctx context.Context) error
}

// triggerInfo is a scaler's configuration as the command shows it:
// MetricName (without KEDA's "s<index>-" prefix), Processor, Threshold,
// Activation.
type triggerInfo = scalers.AzureCosmosDBTrigger

// triggerEstimate is what the command reads of one estimate of a trigger.
type triggerEstimate struct {
	TotalLag         int64 // pending transactions, summed over the leases
	Metric           int64 // the value served: min(TotalLag, ActivePartitions × threshold)
	ActivePartitions int64
	Active           bool
	Leases           int // leases read
	StaleParents     int // leases of a split or merged range
	// OldestPendingAge is the age of the oldest pending change (from the
	// _ts, or crts for all-versions-and-deletes, of the first pending item
	// a per-lease read returned); zero when unknown or nothing is pending.
	OldestPendingAge time.Duration
	Duration         time.Duration
	Requests         int64
	RequestCharge    float64
}

func toTriggerEstimate(e scalers.AzureCosmosDBEstimate) triggerEstimate {
	return triggerEstimate{
		TotalLag:         e.TotalLag,
		Metric:           e.Metric,
		ActivePartitions: e.ActivePartitions,
		Active:           e.Active,
		Leases:           len(e.Leases),
		StaleParents:     e.StaleParents,
		OldestPendingAge: oldestPendingAge(e, time.Now()),
		Duration:         e.Duration,
		Requests:         e.Requests,
		RequestCharge:    e.RequestCharge,
	}
}

// newCosmosScaler builds the scaler exactly as KEDA's constructor for type
// azure-cosmosdb does.
func newCosmosScaler(c *scalersconfig.ScalerConfig) (cosmosScaler, triggerInfo, error) {
	s, err := scalers.NewInspectedAzureCosmosDBScaler(c)
	if err != nil {
		return nil, triggerInfo{}, err
	}
	return inTreeScaler{s}, s.Trigger, nil
}

// inTreeScaler gives the scaler's estimates in the command's terms.
type inTreeScaler struct{ *scalers.AzureCosmosDBScaler }

func (s inTreeScaler) Estimate(ctx context.Context) (triggerEstimate, error) {
	e, err := s.AzureCosmosDBScaler.Estimate(ctx)
	return toTriggerEstimate(e), err
}

// triggerParams are the scaler's trigger parameter names; secretParams
// those that hold credentials.
var triggerParams, secretParams = func() (all, secret []string) {
	for _, p := range scalers.AzureCosmosDBParameters() {
		all = append(all, p.Name)
		if p.Secret {
			secret = append(secret, p.Name)
		}
	}
	return all, secret
}()

// oldestPendingAge is the age of the oldest first-pending change among the
// leases with lag (zero when none is known).
func oldestPendingAge(e scalers.AzureCosmosDBEstimate, now time.Time) time.Duration {
	var oldest time.Time
	for _, l := range e.Leases {
		if l.Lag > 0 && !l.PendingSince.IsZero() && (oldest.IsZero() || l.PendingSince.Before(oldest)) {
			oldest = l.PendingSince
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return max(now.Sub(oldest), 0)
}

// triggerWarnings are the warnings a trigger's metadata draws (unknown keys,
// secrets in plain metadata), naming keys only.
func triggerWarnings(metadata map[string]string) []string {
	return scalers.AzureCosmosDBWarnings(metadata)
}

// Package poll builds a trigger's scaler and runs one estimate as KEDA's
// poll does (ending at once on a server certificate that is refused), and
// holds what check and tune both report of it: the trigger's header, the
// order of lease tokens, the leases not counted, and what the lease
// container holds when no document of the processor is found.
package poll

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// NewTriggerReport is what check and tune report of the trigger.
func NewTriggerReport(setup *trigger.Setup, sample bool) TriggerReport {
	md := setup.Config.TriggerMetadata
	return TriggerReport{
		ScaledObject: setup.ScaledObject, TriggerIndex: setup.Index, TriggerName: setup.Name, SampleAccount: sample,
		Database: md["databaseId"], Container: md["containerId"],
		LeaseDatabase: md["leaseDatabaseId"], LeaseContainer: md["leaseContainerId"],
		Processor: md["processorName"], MetricType: string(setup.Config.MetricType),
		Warnings: append([]string{}, setup.Warnings...),
	}
}

// NewScaler builds the trigger's scaler and fills the report's metric
// name and thresholds from it.
func NewScaler(ctx context.Context, setup *trigger.Setup, report *TriggerReport) (*scalers.AzureCosmosDBScaler, error) {
	scaler, err := scalers.NewInspectedAzureCosmosDBScaler(setup.Config)
	if err != nil {
		return nil, err
	}
	if specs := scaler.GetMetricSpecForScaling(ctx); len(specs) > 0 && specs[0].External != nil {
		report.MetricName = specs[0].External.Metric.Name
	}
	report.Threshold, report.Activation = scaler.Trigger.Threshold, scaler.Trigger.Activation
	return scaler, nil
}

// EstimateOnce runs one estimate, as KEDA's poll does, within timeout. A
// server certificate that is refused ends it at once (see
// certificateGuard), and the error says how to fix it.
func EstimateOnce(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, timeout time.Duration) (scalers.AzureCosmosDBEstimate, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, guard, release := guardCertificates(ctx)
	defer release()
	e, err := scaler.Estimate(ctx)
	if certErr := guard.failed(); err != nil && certErr != nil {
		// The client may report the context the guard ended instead of
		// its cause.
		msg := strings.TrimSuffix(err.Error(), ": "+context.Canceled.Error())
		if !strings.Contains(msg, certErr.Error()) {
			msg += ": " + certErr.Error()
		}
		return e, fmt.Errorf("%s; %s", msg, certificateHint(certErr))
	}
	return e, err
}

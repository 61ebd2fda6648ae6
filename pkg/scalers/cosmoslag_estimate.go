package scalers

// This file is NOT part of the in-tree drop-in (it is named cosmoslag_*.go,
// outside the drop-in's azure_cosmosdb_*.go pattern). It is what this repository's
// commands (cmd/cosmoslag, cmd/cosmosdb-external-scaler) know of the
// azure-cosmosdb scaler: each estimate whole (Estimate makes it as
// GetMetricsAndActivity does), its parameters as its `keda:` tags declare
// them, and the warnings its configuration draws.
// What the commands keep from printing (credentials) is internal/redact's.

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// AzureCosmosDBTrigger is an azure-cosmosdb scaler's configuration as the
// commands show it.
type AzureCosmosDBTrigger struct {
	// MetricName is the metric's name without KEDA's "s<index>-" prefix.
	MetricName            string
	Processor             string
	Threshold, Activation int64 // changeFeedLagThreshold, activationChangeFeedLagThreshold
}

// AzureCosmosDBEstimate is one estimate as the commands show it: the
// per-lease estimate with what the recorder saw of each lease, the summary
// the scaler returns to KEDA for it, the thresholds it applied and how long
// it took. LiveRanges are the monitored container's live partition key
// ranges when the estimator holds them (it reads them for EPK leases), else
// nil: see ReadLiveRanges.
type AzureCosmosDBEstimate struct {
	azure.CosmosDBInspection
	StaleParents int
	SplitRetried bool
	azure.CosmosDBLagSummary
	LiveRanges            []azure.CosmosDBPartitionKeyRange
	Threshold, Activation int64
	Duration              time.Duration
}

// AzureCosmosDBScaler is the azure-cosmosdb scaler as the commands hold it:
// KEDA's Scaler, its configuration, Estimate, and the recorder its requests
// go through.
type AzureCosmosDBScaler struct {
	*azureCosmosDBScaler
	Trigger  AzureCosmosDBTrigger
	recorder *azure.CosmosDBRecorder
}

// AzureCosmosDBMetadata is the trigger's typed configuration, whose keda:
// tags the docs test reads.
type AzureCosmosDBMetadata = azureCosmosDBMetadata

// NewInspectedAzureCosmosDBScaler builds the scaler as NewAzureCosmosDBScaler
// does, on KEDA's HTTP client behind a recorder.
func NewInspectedAzureCosmosDBScaler(config *scalersconfig.ScalerConfig) (*AzureCosmosDBScaler, error) {
	recorder := &azure.CosmosDBRecorder{Next: kedautil.CreateHTTPClient(config.GlobalHTTPTimeout, false)}
	cosmos, err := newAzureCosmosDBScaler(config, recorder)
	if err != nil {
		return nil, err
	}
	return &AzureCosmosDBScaler{azureCosmosDBScaler: cosmos, recorder: recorder, Trigger: AzureCosmosDBTrigger{MetricName: cosmos.metricName,
		Processor: cosmos.processor, Threshold: cosmos.threshold, Activation: cosmos.activation}}, nil
}

// Estimate runs one poll as GetMetricsAndActivity does (the same estimator,
// summary and log lines) and returns it whole: GetMetricsAndActivity would
// return Metric and Active, or the error. On error the estimate holds what
// the requests cost and how long they took.
func (s *AzureCosmosDBScaler) Estimate(ctx context.Context) (AzureCosmosDBEstimate, error) {
	start := time.Now()
	e := AzureCosmosDBEstimate{Threshold: s.Trigger.Threshold, Activation: s.Trigger.Activation}
	s.recorder.Take() // what earlier reads cost is theirs
	estimate, err := s.estimator.Estimate(ctx)
	e.Duration = time.Since(start)
	e.CosmosDBInspection = s.recorder.Inspect(s.estimator, estimate)
	e.LiveRanges = s.estimator.HeldRanges()
	if err != nil {
		return e, fmt.Errorf("azure-cosmosdb: estimating change feed lag of processor %q: %w", s.Trigger.Processor, err)
	}
	e.StaleParents, e.SplitRetried = estimate.StaleParents, estimate.SplitRetried
	e.CosmosDBLagSummary = estimate.Summarize(e.Threshold, e.Activation)
	s.logEstimate(estimate, e.CosmosDBLagSummary, e.Duration)
	return e, nil
}

// Summarize is the scaler's arithmetic over this estimate with other thresholds.
func (e AzureCosmosDBEstimate) Summarize(threshold, activation int64) azure.CosmosDBLagSummary {
	estimate := azure.CosmosDBLagEstimate{StaleParents: e.StaleParents, SplitRetried: e.SplitRetried}
	for _, l := range e.Leases {
		estimate.Leases = append(estimate.Leases, l.CosmosDBLeaseLag)
	}
	return estimate.Summarize(threshold, activation)
}

// ReadLiveRanges reads the monitored container's live partition key ranges
// with the scaler's client, for what an estimate does not hold (a range-id
// lease whose range split or merged); requests and requestCharge are what
// the read cost.
func (s *AzureCosmosDBScaler) ReadLiveRanges(ctx context.Context) (ranges []azure.CosmosDBPartitionKeyRange, requests int64, requestCharge float64, err error) {
	s.recorder.Take()
	ranges, err = s.estimator.ReadRanges(ctx)
	requests, requestCharge = s.recorder.Take()
	return ranges, requests, requestCharge, err
}

// AzureCosmosDBParameter is one trigger parameter, read from the scaler's
// `keda:` tags.
type AzureCosmosDBParameter struct {
	Name string
	// Secret: the value is a credential (an azure.CosmosDBSecret field).
	Secret bool
	// Account: the parameter chooses an account or its credential (a field
	// of azure.CosmosDBAuth).
	Account bool
	// FromEnv: the parameter may instead name a variable of the scale
	// target's environment, as <Name>FromEnv.
	FromEnv bool
}

// AzureCosmosDBParameters lists the trigger's parameters in declaration order.
func AzureCosmosDBParameters() []AzureCosmosDBParameter {
	accountParams := map[string]bool{}
	for _, p := range cosmosDBParameters(reflect.TypeFor[azure.CosmosDBAuth]()) {
		accountParams[p.Name] = true
	}
	params := cosmosDBParameters(reflect.TypeFor[azureCosmosDBMetadata]())
	for i := range params {
		params[i].Account = accountParams[params[i].Name]
	}
	return params
}

// cosmosDBParameters reads the keda: tags of t as KEDA's typed config does,
// nested structs included, in declaration order.
func cosmosDBParameters(t reflect.Type) []AzureCosmosDBParameter {
	var params []AzureCosmosDBParameter
	for field := range t.Fields() {
		tag, ok := field.Tag.Lookup("keda")
		if !ok {
			continue
		}
		var names []string
		fromEnv := false
		for part := range strings.SplitSeq(tag, ",") {
			key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch key {
			case "name":
				names = strings.Split(value, ";")
			case "order":
				fromEnv = strings.Contains(value, string(scalersconfig.ResolvedEnv))
			}
		}
		if len(names) == 0 && field.Type.Kind() == reflect.Struct {
			params = append(params, cosmosDBParameters(field.Type)...)
		}
		for _, name := range names {
			params = append(params, AzureCosmosDBParameter{Name: strings.TrimSpace(name), FromEnv: fromEnv,
				Secret: field.Type == reflect.TypeFor[azure.CosmosDBSecret]()})
		}
	}
	return params
}

// AzureCosmosDBWarnings lists, in the scaler's wording, what in a trigger's
// metadata parses but is probably a mistake: secrets given in plain
// metadata, and keys the trigger does not know (inside KEDA, its typed
// config reports those when KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS is
// enabled). ignore holds keys that are not the trigger's but expected (an
// external scaler's own). Key names only, never a value.
func AzureCosmosDBWarnings(triggerMetadata map[string]string, ignore ...string) []string {
	var warnings []string
	if names := plainCosmosDBSecrets(triggerMetadata); len(names) > 0 {
		warnings = append(warnings, fmt.Sprintf("Warning: secret parameter(s) %s of scaler azure-cosmosdb given in plain trigger metadata; move them to a TriggerAuthentication", strings.Join(names, ", ")))
	}
	known := map[string]bool{}
	for _, p := range AzureCosmosDBParameters() {
		known[p.Name] = true
		known[p.Name+"FromEnv"] = p.FromEnv
	}
	for _, key := range slices.Sorted(maps.Keys(triggerMetadata)) {
		if !known[key] && !slices.Contains(ignore, key) {
			warnings = append(warnings, fmt.Sprintf("Unmatched input property %s in scaler azure-cosmosdb", key))
		}
	}
	return warnings
}

// ReadLeasePrefixes reads the ids of the lease container with the scaler's
// lease client and counts them by processor name prefix (see
// azure.CosmosDBLagEstimator.ReadLeasePrefixes); requests and requestCharge are what the read cost.
func (s *AzureCosmosDBScaler) ReadLeasePrefixes(ctx context.Context) (prefixes azure.CosmosDBLeasePrefixes, requests int64, requestCharge float64, err error) {
	s.recorder.Take()
	prefixes, err = s.estimator.ReadLeasePrefixes(ctx)
	requests, requestCharge = s.recorder.Take()
	return prefixes, requests, requestCharge, err
}

package scalers

// This file is NOT part of the in-tree drop-in. It is what this repository's
// commands (cmd/cosmoslag, cmd/cosmosdb-external-scaler) know of the
// azure-cosmosdb scaler: each estimate as the scaler made it (through the
// same estimate method GetMetricsAndActivity uses), its parameters as its
// `keda:` tags declare them, and the warnings its configuration draws.
// What the commands keep from printing (credentials) is internal/redact's.

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/metrics/pkg/apis/external_metrics"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// AzureCosmosDBTrigger is an azure-cosmosdb scaler's configuration as the
// commands show it.
type AzureCosmosDBTrigger struct {
	// MetricName is the metric's name without KEDA's "s<index>-" prefix.
	MetricName            string
	Processor             string
	Threshold, Activation int64 // changeFeedLagThreshold, activationChangeFeedLagThreshold
}

// AzureCosmosDBEstimate is one estimate as the scaler's estimator made it:
// the per-lease estimate, the summary the scaler returns to KEDA for it and
// the thresholds it applied.
type AzureCosmosDBEstimate struct {
	azure.CosmosDBLagEstimate
	azure.CosmosDBLagSummary
	Threshold, Activation int64
	Duration              time.Duration
	// Err is the error the scaler returns; then the summary is zero and
	// the estimate holds only the requests and request charge.
	Err error
}

// observedAzureCosmosDBScaler is the scaler, with every estimate also
// handed to observe before GetMetricsAndActivity returns.
type observedAzureCosmosDBScaler struct {
	*azureCosmosDBScaler
	trigger AzureCosmosDBTrigger
	observe func(AzureCosmosDBEstimate)
}

// GetMetricsAndActivity returns and logs what the scaler's own would: the
// summary's metric and activity, or its error.
func (o observedAzureCosmosDBScaler) GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error) {
	start := time.Now()
	e := AzureCosmosDBEstimate{Threshold: o.trigger.Threshold, Activation: o.trigger.Activation}
	e.CosmosDBLagEstimate, e.Err = o.estimator.Estimate(ctx)
	e.Duration = time.Since(start)
	if e.Err != nil {
		e.Err = fmt.Errorf("azure-cosmosdb: estimating change feed lag of processor %q: %w", o.trigger.Processor, e.Err)
	} else {
		e.CosmosDBLagSummary = e.Summarize(e.Threshold, e.Activation)
		o.logEstimate(e.CosmosDBLagEstimate, e.CosmosDBLagSummary, e.Duration)
	}
	o.observe(e)
	if e.Err != nil {
		return []external_metrics.ExternalMetricValue{}, false, e.Err
	}
	return []external_metrics.ExternalMetricValue{GenerateMetricInMili(metricName, float64(e.Metric))}, e.Active, nil
}

// NewObservedAzureCosmosDBScaler builds the scaler as NewAzureCosmosDBScaler
// does; when observe is not nil, it is called with every estimate.
func NewObservedAzureCosmosDBScaler(config *scalersconfig.ScalerConfig, observe func(AzureCosmosDBEstimate)) (Scaler, AzureCosmosDBTrigger, error) {
	s, err := NewAzureCosmosDBScaler(config)
	if err != nil {
		return nil, AzureCosmosDBTrigger{}, err
	}
	cosmos := s.(*azureCosmosDBScaler)
	m := cosmos.metadata
	trigger := AzureCosmosDBTrigger{MetricName: cosmos.metricName(), Processor: m.ProcessorName,
		Threshold: m.ChangeFeedLagThreshold, Activation: m.ActivationChangeFeedLagThreshold}
	if observe == nil {
		return cosmos, trigger, nil
	}
	return observedAzureCosmosDBScaler{azureCosmosDBScaler: cosmos, trigger: trigger, observe: observe}, trigger, nil
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

package scalers

// This file is NOT part of the in-tree drop-in. It is what this repository's
// commands (cmd/cosmoslag, cmd/cosmosdb-external-scaler) know of the
// azure-cosmosdb scaler: what it computed for each estimate, and its
// parameters as its `keda:` tags declare them. Nothing here reads the
// scaler's log.

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lag"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// AzureCosmosDBTrigger is an azure-cosmosdb scaler's configuration as the
// commands show it.
type AzureCosmosDBTrigger struct {
	// MetricName is the metric's name without KEDA's "s<index>-" prefix
	// (KEDA adds it to an external scaler's name itself).
	MetricName            string
	Processor             string
	Threshold, Activation int64 // changeFeedLagThreshold, activationChangeFeedLagThreshold
}

// AzureCosmosDBEstimate is one estimate exactly as the scaler made it: the
// per-lease result (leases, stale parents, requests, request charge,
// duration), the summary it returned to KEDA and the thresholds it applied.
type AzureCosmosDBEstimate struct {
	lag.Result
	lag.Summary
	Threshold, Activation int64
	// Err is the error the scaler returned; then Summary is zero and Result
	// holds only the requests, request charge and duration of the attempt.
	Err error
}

// NewObservedAzureCosmosDBScaler builds the scaler as NewAzureCosmosDBScaler
// does and has it call observe (if not nil) with every estimate it makes,
// before GetMetricsAndActivity returns.
func NewObservedAzureCosmosDBScaler(config *scalersconfig.ScalerConfig, observe func(AzureCosmosDBEstimate)) (Scaler, AzureCosmosDBTrigger, error) {
	s, err := NewAzureCosmosDBScaler(config)
	if err != nil {
		return nil, AzureCosmosDBTrigger{}, err
	}
	cosmos := s.(*azureCosmosDBScaler)
	m := cosmos.metadata
	trigger := AzureCosmosDBTrigger{MetricName: cosmos.metricName(), Processor: m.ProcessorName,
		Threshold: m.ChangeFeedLagThreshold, Activation: m.ActivationChangeFeedLagThreshold}
	if observe != nil {
		cosmos.observe = func(r lag.Result, s lag.Summary, err error) {
			observe(AzureCosmosDBEstimate{Result: r, Summary: s, Threshold: trigger.Threshold, Activation: trigger.Activation, Err: err})
		}
	}
	return cosmos, trigger, nil
}

// AzureCosmosDBParameter is one trigger parameter, read from the scaler's
// `keda:` tags.
type AzureCosmosDBParameter struct {
	Name string
	// Secret: the value is a credential (an account.Secret field).
	Secret bool
	// Account: the parameter chooses an account or its credential (a field
	// of account.Settings).
	Account bool
	// FromEnv: the parameter may instead name a variable of the scale
	// target's environment, as <Name>FromEnv.
	FromEnv bool
}

// AzureCosmosDBParameters lists the trigger's parameters in declaration order.
func AzureCosmosDBParameters() []AzureCosmosDBParameter {
	accountParams := map[string]bool{}
	for _, p := range cosmosDBParameters(reflect.TypeFor[account.Settings]()) {
		accountParams[p.name] = true
	}
	var out []AzureCosmosDBParameter
	for _, p := range cosmosDBParameters(reflect.TypeFor[azureCosmosDBMetadata]()) {
		out = append(out, AzureCosmosDBParameter{Name: p.name, Secret: p.secret, Account: accountParams[p.name], FromEnv: p.fromEnv})
	}
	return out
}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsEnvVarName reports whether s is a portable environment variable name.
// Cosmos DB keys and connection strings always contain '=', so a secret
// value is never taken for a name.
func IsEnvVarName(s string) bool { return envVarName.MatchString(s) }

// Secrets collects credential values that must never be printed.
type Secrets struct{ values []string }

// Add records values to redact and, for a connection string, the account
// key inside it.
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		if v == "" {
			continue
		}
		s.values = append(s.values, v)
		if _, key, err := account.SplitConnectionString(v); err == nil && key != "" && key != v {
			s.values = append(s.values, key)
		}
	}
}

// Redact replaces every recorded secret of at least 4 characters in text
// (shorter ones would garble it without hiding anything worth hiding).
func (s *Secrets) Redact(text string) string {
	long := make([]string, 0, len(s.values))
	for _, v := range s.values {
		if len(v) >= 4 {
			long = append(long, v)
		}
	}
	// Longest first, so a connection string goes before the key inside it.
	sort.SliceStable(long, func(i, j int) bool { return len(long[i]) > len(long[j]) })
	for _, v := range long {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// Clone returns an independent copy.
func (s *Secrets) Clone() *Secrets { return &Secrets{values: slices.Clone(s.values)} }

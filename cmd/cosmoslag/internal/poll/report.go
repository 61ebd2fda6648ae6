package poll

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// TriggerReport is what check and tune report of the trigger itself.
type TriggerReport struct {
	ScaledObject   string `json:"scaledObject"` // namespace/name
	TriggerIndex   int    `json:"triggerIndex"`
	TriggerName    string `json:"triggerName,omitempty"`
	SampleAccount  bool   `json:"emulator,omitempty"` // check --emulator: the embedded server's sample
	Processor      string `json:"processorName"`
	Database       string `json:"databaseId"`
	Container      string `json:"containerId"`
	LeaseDatabase  string `json:"leaseDatabaseId"`
	LeaseContainer string `json:"leaseContainerId"`
	MetricName     string `json:"metricName"`
	MetricType     string `json:"metricType"`
	Threshold      int64  `json:"changeFeedLagThreshold"`
	Activation     int64  `json:"activationChangeFeedLagThreshold"`
	// Warnings: the scaler's warnings on the trigger's metadata, then
	// the command's own; never a value. Always an array.
	Warnings []string `json:"warnings"`
	// NoLeaseMatch is set when the estimate found no document of the
	// processor: what the lease container holds instead.
	NoLeaseMatch *NoLeaseMatch `json:"noLeaseMatch,omitempty"`
}

// TokenLess orders numeric range ids numerically ("2" before "10") and
// anything else as text.
func TokenLess(a, b string) bool {
	if isDigits(a) && isDigits(b) && len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// WriteHeader writes the trigger, the processor, the metric and the
// warnings.
func WriteHeader(b *strings.Builder, r *TriggerReport) {
	trigger := fmt.Sprintf("trigger %d", r.TriggerIndex)
	if r.TriggerName != "" {
		trigger += " (" + r.TriggerName + ")"
	}
	account := ""
	if r.SampleAccount {
		account = " [embedded server]"
	}
	fmt.Fprintf(b, "ScaledObject  %s, %s%s\n", r.ScaledObject, trigger, account)
	fmt.Fprintf(b, "Processor     %s: monitors %s/%s, leases in %s/%s\n", r.Processor, r.Database, r.Container, r.LeaseDatabase, r.LeaseContainer)
	fmt.Fprintf(b, "Metric        %s (%s, target %d, activation above %d)\n\n", r.MetricName, r.MetricType, r.Threshold, r.Activation)
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "WARNING  %s\n", w)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
	}
}

// FormatAge prints an age in whole seconds as 45s, 3m05s, 2h03m or 4d02h.
func FormatAge(sec int64) string {
	switch {
	case sec < 60:
		return fmt.Sprintf("%ds", sec)
	case sec < 3600:
		return fmt.Sprintf("%dm%02ds", sec/60, sec%60)
	case sec < 86400:
		return fmt.Sprintf("%dh%02dm", sec/3600, sec%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", sec/86400, sec%86400/3600)
}

// UncountedLeases splits the processor's documents the estimate skipped
// into leases never checkpointed and leases that did not decode (documents
// without a lease token are the processor's metadata, not leases).
func UncountedLeases(skipped []azure.CosmosDBSkippedDocument) (neverCheckpointed, other []string) {
	for _, d := range skipped {
		switch {
		case d.Reason == azure.CosmosDBNeverCheckpointed:
			neverCheckpointed = append(neverCheckpointed, d.Token)
		case d.Token != "":
			other = append(other, d.Token)
		case d.Reason != "no lease token":
			other = append(other, d.ID)
		}
	}
	slices.SortFunc(neverCheckpointed, CompareTokens)
	slices.SortFunc(other, CompareTokens)
	return neverCheckpointed, other
}

// CompareTokens orders lease tokens as TokenLess does.
func CompareTokens(a, b string) int {
	switch {
	case TokenLess(a, b):
		return -1
	case TokenLess(b, a):
		return 1
	}
	return 0
}

// TokenList names up to five lease tokens.
func TokenList(tokens []string) string {
	if len(tokens) <= 5 {
		return strings.Join(tokens, ", ")
	}
	return strings.Join(tokens[:5], ", ") + ", … (" + strconv.Itoa(len(tokens)-5) + " more)"
}

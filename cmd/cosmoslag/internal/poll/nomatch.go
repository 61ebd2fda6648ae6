package poll

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// NoLeaseMatch is what check and tune report when the estimate found no
// document of the processor for the monitored container (none counted,
// none skipped): what the lease container holds instead, by the processor
// name its ids start with. It tells a misspelt processorName from a
// processor that has not checkpointed yet.
type NoLeaseMatch struct {
	Processor string `json:"processorName"`
	// Documents read in the lease container; WithProcessorName of them have
	// ids that start with the processor name and an account host (they name
	// another container or account, or are its .info and .lock documents).
	Documents         int `json:"leaseDocuments"`
	WithProcessorName int `json:"withProcessorName"`
	// OtherPrefixes: up to noMatchPrefixes other prefixes, most documents
	// first; MorePrefixes counts those not listed.
	OtherPrefixes []LeasePrefix `json:"otherPrefixes"`
	MorePrefixes  int           `json:"morePrefixes"`
	// Truncated: the read stopped after azure.CosmosDBLeaseSurveyLimit
	// documents; the counts are lower bounds.
	Truncated bool   `json:"truncated"`
	Error     string `json:"error,omitempty"` // the read failed (redacted); the counts are 0
}

type LeasePrefix struct {
	Prefix    string `json:"prefix"`
	Documents int    `json:"documents"`
}

// noMatchPrefixes is how many other prefixes are listed.
const noMatchPrefixes = 5

// foundNoLeaseDocument reports whether an estimate found no document of
// the processor at all: neither a counted lease nor a skipped one.
func foundNoLeaseDocument(e scalers.AzureCosmosDBEstimate) bool {
	return len(e.Leases) == 0 && len(e.Skipped) == 0
}

// readNoLeaseMatch reads what the lease container holds (within timeout),
// for an estimate that found no document of the processor; the read's cost
// is added to cost. A failed read is reported in the result, redacted.
func readNoLeaseMatch(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, secrets *redact.Secrets, timeout time.Duration, cost *RequestCost) *NoLeaseMatch {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	processor := scaler.Trigger.Processor
	found, requests, charge, err := scaler.ReadLeasePrefixes(ctx)
	cost.Requests += requests
	cost.RequestCharge += charge
	m := &NoLeaseMatch{Processor: processor, OtherPrefixes: []LeasePrefix{}}
	if err != nil {
		m.Error = secrets.Redact(err.Error())
		return m
	}
	m.Documents, m.Truncated, m.WithProcessorName = found.Documents, found.Truncated, found.Prefixes[processor]
	delete(found.Prefixes, processor)
	prefixes := slices.SortedFunc(maps.Keys(found.Prefixes), func(a, b string) int {
		return cmp.Or(cmp.Compare(found.Prefixes[b], found.Prefixes[a]), cmp.Compare(a, b))
	})
	for i, p := range prefixes {
		if i == noMatchPrefixes {
			m.MorePrefixes = len(prefixes) - i
			break
		}
		m.OtherPrefixes = append(m.OtherPrefixes, LeasePrefix{Prefix: p, Documents: found.Prefixes[p]})
	}
	return m
}

// Warning is the no-match warning of check and tune, and tune's reason.
func (m *NoLeaseMatch) Warning(r *TriggerReport) string {
	head := fmt.Sprintf("no lease document matches processorName %q: ", m.Processor)
	container := r.LeaseDatabase + "/" + r.LeaseContainer
	fix := "; check processorName (for an Azure Functions trigger, its LeaseContainerPrefix) and leaseContainerId"
	switch {
	case m.Error != "":
		return head + "its ids in lease container " + container + " could not be listed: " + m.Error + fix
	case m.Documents == 0:
		return head + "lease container " + container + " is empty: the processor has not started, or writes its leases elsewhere"
	}
	atLeast := ""
	if m.Truncated {
		atLeast = "at least "
	}
	s := fmt.Sprintf("%slease container %s holds %s%d document(s), none a lease of this processor for %s/%s", head, container, atLeast, m.Documents, r.Database, r.Container)
	if m.WithProcessorName > 0 {
		s += fmt.Sprintf("; %d start with %q and name another container or account (or are its .info and .lock documents)", m.WithProcessorName, m.Processor)
	}
	if len(m.OtherPrefixes) > 0 {
		var names []string
		for _, p := range m.OtherPrefixes {
			names = append(names, fmt.Sprintf("%q (%d)", p.Prefix, p.Documents))
		}
		if m.MorePrefixes > 0 {
			names = append(names, fmt.Sprintf("%d more", m.MorePrefixes))
		}
		s += "; ids start with other processor names: " + strings.Join(names, ", ")
	}
	return s + fix
}

// ReportNoLeaseMatch reads what the lease container holds when the
// estimate found no document of the processor, and records it in the
// report with its warning; it reports whether it did.
func ReportNoLeaseMatch(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, secrets *redact.Secrets, r *TriggerReport, e scalers.AzureCosmosDBEstimate,
	timeout time.Duration, cost *RequestCost) bool {
	if !foundNoLeaseDocument(e) {
		return false
	}
	r.NoLeaseMatch = readNoLeaseMatch(ctx, scaler, secrets, timeout, cost)
	r.Warnings = append(r.Warnings, r.NoLeaseMatch.Warning(r))
	return true
}

// WriteNoLeaseMatchLine is the line that stands for the lease table.
func WriteNoLeaseMatchLine(b io.StringWriter, r *TriggerReport) {
	_, _ = b.WriteString(fmt.Sprintf("No lease document of processor %q for %s/%s in %s/%s (see the warning above).\n\n",
		r.Processor, r.Database, r.Container, r.LeaseDatabase, r.LeaseContainer))
}

// RequestCost is what requests cost: tries sent, and request units charged.
type RequestCost struct {
	Requests      int64
	RequestCharge float64
}

package main

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
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// noLeaseMatch is what check and tune report when the estimate found no
// document of the processor for the monitored container (none counted,
// none skipped): what the lease container holds instead, by the processor
// name its ids start with. It tells a misspelt processorName from a
// processor that has not checkpointed yet.
type noLeaseMatch struct {
	Processor string `json:"processorName"`
	// Documents read in the lease container; WithProcessorName of them have
	// ids that start with the processor name and an account host (they name
	// another container or account, or are its .info and .lock documents).
	Documents         int `json:"leaseDocuments"`
	WithProcessorName int `json:"withProcessorName"`
	// OtherPrefixes: up to noMatchPrefixes other prefixes, most documents
	// first; MorePrefixes counts those not listed.
	OtherPrefixes []leasePrefix `json:"otherPrefixes"`
	MorePrefixes  int           `json:"morePrefixes"`
	// Truncated: the read stopped after azure.CosmosDBLeaseSurveyLimit
	// documents; the counts are lower bounds.
	Truncated bool   `json:"truncated"`
	Error     string `json:"error,omitempty"` // the read failed (redacted); the counts are 0
}

type leasePrefix struct {
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
func readNoLeaseMatch(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, secrets *redact.Secrets, timeout time.Duration, cost *azure.CosmosDBCost) *noLeaseMatch {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	processor := scaler.Trigger.Processor
	found, readCost, err := scaler.ReadLeasePrefixes(ctx)
	cost.Requests += readCost.Requests
	cost.RequestCharge += readCost.RequestCharge
	m := &noLeaseMatch{Processor: processor, OtherPrefixes: []leasePrefix{}}
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
		m.OtherPrefixes = append(m.OtherPrefixes, leasePrefix{Prefix: p, Documents: found.Prefixes[p]})
	}
	return m
}

// warning is the no-match warning of check and tune, and tune's reason.
func (m *noLeaseMatch) warning(r *triggerReport) string {
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

// reportNoLeaseMatch reads what the lease container holds when the
// estimate found no document of the processor, and records it in the
// report with its warning; it reports whether it did.
func reportNoLeaseMatch(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, secrets *redact.Secrets, r *triggerReport, e scalers.AzureCosmosDBEstimate,
	timeout time.Duration, cost *azure.CosmosDBCost) bool {
	if !foundNoLeaseDocument(e) {
		return false
	}
	r.NoLeaseMatch = readNoLeaseMatch(ctx, scaler, secrets, timeout, cost)
	r.Warnings = append(r.Warnings, r.NoLeaseMatch.warning(r))
	return true
}

// writeNoLeaseMatchLine is the line that stands for the lease table.
func writeNoLeaseMatchLine(b io.StringWriter, r *triggerReport) {
	_, _ = b.WriteString(fmt.Sprintf("No lease document of processor %q for %s/%s in %s/%s (see the warning above).\n\n",
		r.Processor, r.Database, r.Container, r.LeaseDatabase, r.LeaseContainer))
}

// stopWithoutLeases is tune's check of its first sample: when it found no
// document of the processor, what the lease container holds is recorded
// in the report and the sampling stops.
func stopWithoutLeases(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, o *tuneOptions, r *tuneReport, e scalers.AzureCosmosDBEstimate) bool {
	cost := azure.CosmosDBCost{Requests: r.Requests, RequestCharge: r.RequestCharge}
	if !reportNoLeaseMatch(ctx, scaler, r.secrets, &r.triggerReport, e, o.timeout, &cost) {
		return false
	}
	r.Requests, r.RequestCharge = cost.Requests, cost.RequestCharge
	return true
}

// writeTuneNoLeaseMatch prints tune's result when its first sample found
// no document of the processor: no recommendation (exit status 3), the
// no-match warning as the reason, without waiting for the window.
func writeTuneNoLeaseMatch(stdout, stderr io.Writer, output string, r *tuneReport) int {
	reason := r.NoLeaseMatch.warning(&r.triggerReport)
	r.tuneMeasurement = &tuneMeasurement{Samples: 1, Leases: []tuneLease{}, PerOwner: []tuneOwner{}, Notes: []string{}}
	r.Reasons, r.Reason, r.ExitCode = []string{reason}, reason, exitNoRecommendation
	code := writeReport("tune", stdout, stderr, output, r, func(w io.Writer) error {
		var b strings.Builder
		writeCheckHeader(&b, &r.triggerReport)
		writeNoLeaseMatchLine(&b, &r.triggerReport)
		fmt.Fprintf(&b, "No recommendation: nothing to measure; stopped after the first sample.\n\n")
		fmt.Fprintf(&b, "Cost          %d request(s), %.2f RU over 1 sample(s)\n", r.Requests, r.RequestCharge)
		_, err := io.WriteString(w, b.String())
		return err
	}, r.ExitCode)
	if code == exitNoRecommendation && output != "json" {
		fmt.Fprintf(stderr, "cosmoslag tune: no recommendation: %s\n", r.Reason)
	}
	return code
}

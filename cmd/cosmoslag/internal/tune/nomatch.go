package tune

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// stopWithoutLeases is tune's check of its first sample: when it found no
// document of the processor, what the lease container holds is recorded
// in the report and the sampling stops.
func stopWithoutLeases(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, o *tuneOptions, r *tuneReport, e scalers.AzureCosmosDBEstimate) bool {
	cost := poll.RequestCost{Requests: r.Requests, RequestCharge: r.RequestCharge}
	if !poll.ReportNoLeaseMatch(ctx, scaler, r.secrets, &r.TriggerReport, e, o.Timeout, &cost) {
		return false
	}
	r.Requests, r.RequestCharge = cost.Requests, cost.RequestCharge
	return true
}

// writeTuneNoLeaseMatch prints tune's result when its first sample found
// no document of the processor: no recommendation (exit status 3), the
// no-match warning as the reason, without waiting for the window.
func writeTuneNoLeaseMatch(stdout, stderr io.Writer, output string, r *tuneReport) int {
	reason := r.NoLeaseMatch.Warning(&r.TriggerReport)
	r.tuneMeasurement = &tuneMeasurement{Samples: 1, Leases: []tuneLease{}, PerOwner: []tuneOwner{}, Notes: []string{}}
	r.Reasons, r.Reason, r.ExitCode = []string{reason}, reason, exitNoRecommendation
	code := cli.WriteReport("tune", stdout, stderr, output, r, func(w io.Writer) error {
		var b strings.Builder
		poll.WriteHeader(&b, &r.TriggerReport)
		poll.WriteNoLeaseMatchLine(&b, &r.TriggerReport)
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

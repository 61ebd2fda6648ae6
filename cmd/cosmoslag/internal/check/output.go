package check

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// checkReport is check's result, printed as a table or as JSON.
type checkReport struct {
	poll.TriggerReport

	// The estimate's fields are absent when it failed, so that a script
	// cannot read a failure as a real zero lag or an inactive trigger.
	*checkEstimate
	Replicas *hpamodel.Plan `json:"replicas,omitempty"`
	// KEDA is KEDA's view of the ScaledObject beside the estimate, in the
	// cluster form (check -n NAMESPACE SCALEDOBJECT).
	KEDA *kedaReport `json:"keda,omitempty"`

	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
}

// checkEstimate is the part of check's result that only a successful
// estimate has.
type checkEstimate struct {
	Leases       []leaseRow `json:"leases"`
	StaleParents int        `json:"staleParents"`
	SplitRetried bool       `json:"splitRetried"`
	// NeverCheckpointed are the tokens of the processor's leases without a
	// continuation, NotDecodable those (or the document ids) of its leases
	// that did not decode: the estimate does not count either.
	NeverCheckpointed []string `json:"neverCheckpointed,omitempty"`
	NotDecodable      []string `json:"notDecodable,omitempty"`
	TotalLag          int64    `json:"totalLag"`
	ActivePartitions  int64    `json:"activePartitions"`
	Metric            int64    `json:"metric"`
	Active            bool     `json:"active"`
	// The oldest pending change over every lease, and its age.
	OldestPendingSince      *time.Time `json:"oldestPendingSince,omitempty"`
	OldestPendingAgeSeconds *int64     `json:"oldestPendingAgeSeconds,omitempty"`
	OldestPendingLease      string     `json:"oldestPendingLease,omitempty"`
	Requests                int64      `json:"requests"`
	RequestCharge           float64    `json:"requestCharge"`
	DurationMillis          int64      `json:"durationMillis"`
}

type leaseRow struct {
	Token        string `json:"token"`
	Format       string `json:"format"` // v0 (a partition key range) or v1 (an EPK range)
	Mode         string `json:"mode"`   // the change feed mode the lease is read in
	Owner        string `json:"owner"`
	Continuation string `json:"continuation"`
	Lag          int64  `json:"lag"`
	StaleParent  bool   `json:"staleParent"`
	// RangeChange is "merged" or "split" when the lease's range merged or
	// split, LiveRanges the live ranges that now hold it (check reads the
	// container's ranges when a lease is a stale parent or an EPK lease).
	RangeChange string   `json:"rangeChange,omitempty"`
	LiveRanges  []string `json:"liveRanges,omitempty"`
	// PendingSince is when the oldest pending change of the lease was made
	// (its _ts; crts in all-versions-and-deletes mode), when it lags and
	// the read returned it; PendingAgeSeconds is its age at the estimate.
	PendingSince      *time.Time `json:"pendingSince,omitempty"`
	PendingAgeSeconds *int64     `json:"pendingAgeSeconds,omitempty"`
}

func (r *checkReport) fill(e scalers.AzureCosmosDBEstimate, now time.Time) {
	res, s := e, e.CosmosDBLagSummary
	r.checkEstimate = &checkEstimate{}
	r.Leases = make([]leaseRow, 0, len(res.Leases))
	for _, l := range res.Leases {
		row := leaseRow{
			Token: l.Token, Format: leaseFormat(l.CosmosDBLease), Mode: modeName(l.AllVersionsAndDeletes), Owner: l.Owner, Continuation: l.Continuation,
			Lag: l.Lag, StaleParent: l.StaleParent,
		}
		if l.Lag > 0 && !l.PendingSince.IsZero() {
			since := l.PendingSince.UTC()
			age := max(int64(now.Sub(since)/time.Second), 0)
			row.PendingSince, row.PendingAgeSeconds = &since, &age
			if r.OldestPendingSince == nil || since.Before(*r.OldestPendingSince) {
				r.OldestPendingSince, r.OldestPendingAgeSeconds, r.OldestPendingLease = &since, &age, l.Token
			}
		}
		r.Leases = append(r.Leases, row)
	}
	sort.SliceStable(r.Leases, func(i, j int) bool { return poll.TokenLess(r.Leases[i].Token, r.Leases[j].Token) })
	r.StaleParents, r.SplitRetried = res.StaleParents, res.SplitRetried
	r.NeverCheckpointed, r.NotDecodable = poll.UncountedLeases(res.Skipped)
	r.TotalLag, r.ActivePartitions, r.Metric, r.Active = s.TotalLag, s.ActivePartitions, s.Metric, s.Active
	r.Requests, r.RequestCharge, r.DurationMillis = res.Requests, res.RequestCharge, e.Duration.Milliseconds()
}

// leaseFormat is a lease's version: v1 leases cover an EPK range.
func leaseFormat(l azure.CosmosDBLease) string {
	if l.EPK {
		return "v1"
	}
	return "v0"
}

// modeName is how a lease's change feed mode is printed.
func modeName(allVersionsAndDeletes bool) string {
	if allVersionsAndDeletes {
		return "AllVersionsAndDeletes"
	}
	return "LatestVersion"
}

func writeCheckTable(w io.Writer, r *checkReport) error {
	var b strings.Builder
	poll.WriteHeader(&b, &r.TriggerReport)
	if err := writeLeaseTable(&b, r); err != nil {
		return err
	}
	writeCheckTotals(&b, r)
	writeKEDAView(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLeaseTable writes a row per lease, with a RANGE column when a
// lease's range merged or split.
func writeLeaseTable(b *strings.Builder, r *checkReport) error {
	if len(r.Leases) == 0 && r.NoLeaseMatch != nil {
		poll.WriteNoLeaseMatchLine(b, &r.TriggerReport)
		return nil
	}
	if len(r.Leases) == 0 {
		b.WriteString("No leases counted for this processor: leases never checkpointed (ContinuationToken null)\n" +
			"and bookkeeping documents are not counted.\n\n")
		return nil
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	changes := slices.ContainsFunc(r.Leases, func(l leaseRow) bool { return l.RangeChange != "" })
	header := "LEASE\tFORMAT\tMODE\tOWNER\tCONTINUATION\tLAG\tOLDEST PENDING"
	if changes {
		header += "\tRANGE"
	}
	fmt.Fprintln(tw, header)
	for _, l := range r.Leases {
		lagText := fmt.Sprint(l.Lag)
		if l.StaleParent {
			lagText = "stale parent"
		}
		age := "-"
		if l.PendingAgeSeconds != nil {
			age = poll.FormatAge(*l.PendingAgeSeconds)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", l.Token, l.Format, l.Mode, cli.Or(l.Owner, "-"), shorten(l.Continuation, 28), lagText, age)
		if changes {
			row += "\t" + rangeChangeText(l)
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

// writeCheckTotals writes the totals, the metric, the activity, the HPA's
// decision and the cost.
func writeCheckTotals(b *strings.Builder, r *checkReport) {
	fmt.Fprintf(b, "Total lag          %d over %s\n", r.TotalLag, leasesText(r))
	if r.OldestPendingSince != nil {
		fmt.Fprintf(b, "Oldest pending     %s ago (lease %s, made %s)\n", poll.FormatAge(*r.OldestPendingAgeSeconds), r.OldestPendingLease, r.OldestPendingSince.Format(time.RFC3339))
	} else {
		fmt.Fprintf(b, "Oldest pending     none known\n")
	}
	fmt.Fprintf(b, "Active partitions  %d\n", r.ActivePartitions)
	fmt.Fprintf(b, "Metric             %d = min(total lag %d, %d active partition(s) × %d)\n", r.Metric, r.TotalLag, r.ActivePartitions, r.Threshold)
	cmp := "≤"
	if r.Active {
		cmp = ">"
	}
	fmt.Fprintf(b, "Active             %s (total lag %d %s activation %d)\n", cli.YesNo(r.Active), r.TotalLag, cmp, r.Activation)
	if p := r.Replicas; p != nil {
		fmt.Fprintf(b, "Replicas           %d → %d: %s [min %d, max %d]\n", p.Current, p.Desired, strings.Join(p.Steps, "; "), p.Min, p.Max)
		if p.AfterWindow != nil {
			fmt.Fprintf(b, "                   → %d once the scale-down stabilization window (%ds) has passed with readings like this one\n", *p.AfterWindow, p.ScaleDownWindowSeconds)
		}
	}
	split := ""
	if r.SplitRetried {
		split = "; a split was seen and the estimate redone"
	}
	fmt.Fprintf(b, "Cost               %d request(s), %.2f RU, %d ms%s\n", r.Requests, r.RequestCharge, r.DurationMillis, split)
}

// leasesText counts the leases for the Total lag line, and the stale
// parents among them by the change of their range.
func leasesText(r *checkReport) string {
	leases := fmt.Sprintf("%d lease(s)", len(r.Leases))
	if r.StaleParents == 0 {
		return leases
	}
	kinds := map[string]int{}
	for _, l := range r.Leases {
		if l.StaleParent && l.RangeChange != "" {
			kinds[l.RangeChange]++
		}
	}
	var of []string
	for _, k := range []string{"merged", "split"} {
		if kinds[k] > 0 {
			of = append(of, fmt.Sprintf("%d of a %s range", kinds[k], k))
		}
	}
	stale := fmt.Sprintf("%d stale parent(s)", r.StaleParents)
	if len(of) > 0 {
		stale += " (" + strings.Join(of, ", ") + ")"
	}
	return leases + ", " + stale + ": at least 1 partition counted active so the processor wakes to replace them"
}

// rangeChangeText is the RANGE cell of a lease whose range merged or split.
func rangeChangeText(l leaseRow) string {
	into := strings.Join(l.LiveRanges, ", ")
	switch {
	case l.RangeChange == "merged" && l.StaleParent:
		return "merged into " + into
	case l.RangeChange == "merged":
		return "part of merged range " + into
	case l.RangeChange == "split":
		return "split into " + into
	}
	return "-"
}

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

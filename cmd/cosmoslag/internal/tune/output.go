package tune

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
)

// tuneReport is tune's result, printed as text or as one JSON document.
type tuneReport struct {
	poll.TriggerReport
	// Simulation describes the simulated processor (--emulator).
	Simulation      *tuneSimulationInfo `json:"simulation,omitempty"`
	WindowSeconds   float64             `json:"windowSeconds"`
	IntervalSeconds float64             `json:"intervalSeconds"`
	Clock           string              `json:"clock"` // "wall", or "simulated" with --emulator

	// The measurement is absent when the first estimate failed.
	*tuneMeasurement
	Requests      int64   `json:"requests"` // of every sample, failed ones included
	RequestCharge float64 `json:"requestCharge"`

	Error string `json:"error,omitempty"`
	// Reason (the reasons joined) and Reasons say why there is no
	// recommendation (exit status 3).
	Reason   string   `json:"reason,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	ExitCode int      `json:"exitCode"`

	secrets     *redact.Secrets
	failed      int
	failure     string // the first failed sample's error, redacted
	interrupted string
}

// tuneMeasurement is what the samples gave.
type tuneMeasurement struct {
	Samples         int                 `json:"samples"`
	MeasuredSeconds float64             `json:"measuredSeconds"` // from the first sample to the last
	FailedSamples   int                 `json:"failedSamples"`
	Leases          []tuneLease         `json:"leases"`
	PerOwner        []tuneOwner         `json:"perOwner"`
	Total           tuneTotal           `json:"total"`
	Recommendation  *tuneRecommendation `json:"recommendation,omitempty"`
	Notes           []string            `json:"notes"`
}

// tuneSimulationInfo is the simulated processor of tune --emulator.
type tuneSimulationInfo struct {
	Replicas   int     `json:"replicas"`
	Partitions int     `json:"partitions"`
	DrainRate  float64 `json:"drainRate"` // per replica
	WriteRate  float64 `json:"writeRate"`
	Backlog    int     `json:"backlogPerPartition"`
}

func newTuneReport(setup *trigger.Setup, o *tuneOptions, sim *tuneSimulation) *tuneReport {
	r := &tuneReport{TriggerReport: poll.NewTriggerReport(setup, o.Sample), WindowSeconds: o.window.Seconds(), IntervalSeconds: o.interval.Seconds(),
		Clock: "wall", secrets: setup.Secrets}
	if sim != nil {
		c := sim.w.Cfg
		r.Clock = "simulated"
		r.Simulation = &tuneSimulationInfo{Replicas: sim.replicas, Partitions: c.Partitions, DrainRate: c.DrainRate, WriteRate: c.WriteRate, Backlog: c.Backlog}
	}
	return r
}

// skipped records a failed sample after the first.
func (r *tuneReport) skipped(err error) {
	r.failed++
	if r.failure == "" {
		r.failure = r.secrets.Redact(err.Error())
	}
}

// interrupt records that the run was interrupted before sample k of n.
func (r *tuneReport) interrupt(k, n int) {
	r.interrupted = fmt.Sprintf("interrupted before sample %d of %d: the measurement covers less than the %s window", k+1, n, time.Duration(r.WindowSeconds*float64(time.Second)))
}

// fill adds the measurement and the recommendation, or the reasons there
// is none.
func (r *tuneReport) fill(samples []tuneSample, a tuneAnalysis) {
	m := &tuneMeasurement{Samples: len(samples), FailedSamples: r.failed, Leases: a.Leases, PerOwner: a.PerOwner, Total: a.Total,
		Recommendation: a.Recommendation, Notes: append([]string{}, a.Notes...)}
	if m.Leases == nil {
		m.Leases, m.PerOwner = []tuneLease{}, []tuneOwner{}
	}
	if len(samples) > 1 {
		m.MeasuredSeconds = samples[len(samples)-1].at.Sub(samples[0].at).Seconds()
	}
	if r.failed > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d sample(s) failed and were skipped; the first: %s", r.failed, r.failure))
	}
	if r.interrupted != "" {
		m.Notes = append(m.Notes, r.interrupted)
	}
	r.tuneMeasurement = m
	if len(a.Reasons) > 0 {
		r.Reasons, r.Reason, r.ExitCode = a.Reasons, strings.Join(a.Reasons, "; "), exitNoRecommendation
	}
}

// reportTuneFailure prints a run that failed (msg, redacted): the JSON
// document with -o json, the warnings and the error on stderr.
func reportTuneFailure(stdout, stderr io.Writer, output string, r *tuneReport, msg string) int {
	r.Error, r.ExitCode = msg, cli.ExitFailed
	return cli.ReportFailure("tune", stdout, stderr, output, r, r.Warnings, msg)
}

// writeTuneReport prints the report as text or JSON; the exit status is
// the report's. Without a recommendation, stderr says why too.
func writeTuneReport(stdout, stderr io.Writer, output string, r *tuneReport) int {
	code := cli.WriteReport("tune", stdout, stderr, output, r, func(w io.Writer) error { return writeTuneText(w, r) }, r.ExitCode)
	if code == exitNoRecommendation && output != "json" {
		fmt.Fprintf(stderr, "cosmoslag tune: no recommendation: %s\n", r.Reason)
	}
	return code
}

func writeTuneText(w io.Writer, r *tuneReport) error {
	var b strings.Builder
	poll.WriteHeader(&b, &r.TriggerReport)
	clock := "real time"
	if s := r.Simulation; s != nil {
		clock = "the simulation's clock"
		fmt.Fprintf(&b, "Simulation    %d replica(s) draining %g/s each from a backlog of %d per partition; writes %g/s over %d partition(s)\n",
			s.Replicas, s.DrainRate, s.Backlog, s.WriteRate, s.Partitions)
	}
	window := time.Duration(r.WindowSeconds * float64(time.Second))
	interval := time.Duration(r.IntervalSeconds * float64(time.Second))
	fmt.Fprintf(&b, "Window        %s: %d sample(s) every %s on %s, %s measured\n\n", window, r.Samples, interval, clock,
		time.Duration(r.MeasuredSeconds*float64(time.Second)).Round(time.Millisecond))
	if err := writeTuneTables(&b, r); err != nil {
		return err
	}
	writeTuneVerdict(&b, r)
	fmt.Fprintf(&b, "Cost          %d request(s), %.2f RU over %d sample(s)\n", r.Requests, r.RequestCharge, r.Samples+r.FailedSamples)
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTuneTables writes a row per lease, then a row per owner and the
// total.
func writeTuneTables(b *strings.Builder, r *tuneReport) error {
	if len(r.Leases) == 0 {
		b.WriteString("No leases counted for this processor: leases never checkpointed (ContinuationToken null)\nand bookkeeping documents are not counted.\n\n")
		return nil
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEASE\tOWNER\tCHECKPOINTS\tDRAINED\tDRAIN/s\tWRITES/s\tLAG\tTIME TO DRAIN")
	for _, l := range r.Leases {
		checkpoints := "-"
		if l.FirstCheckpoint != nil && l.LastCheckpoint != nil {
			checkpoints = fmt.Sprintf("%d → %d", *l.FirstCheckpoint, *l.LastCheckpoint)
		}
		owner := cli.Or(l.Owner, "-")
		if len(l.Owners) > 0 {
			owner = ownersText(l.Owners)
		}
		lag := fmt.Sprint(l.Lag)
		if l.StaleParent {
			lag = "stale parent"
		}
		drained := fmt.Sprint(l.Drained)
		if l.DrainRate == nil {
			drained = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Token, owner, checkpoints, drained, rateText(l.DrainRate), rateText(l.WriteRate), lag,
			drainTimeText(l.tuneDrainTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OWNER\tLEASES\tDRAIN/s\tWRITES/s\tLAG\tTIME TO DRAIN\tSTATE")
	for _, o := range r.PerOwner {
		drain := rateText(o.DrainRate)
		if o.LowerBound {
			drain = "≥" + drain
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s: %s\n", cli.Or(o.Owner, "-"), strings.Join(o.Leases, ", "), drain, rateText(o.WriteRate), o.Lag,
			drainTimeText(o.tuneDrainTime), o.State, o.Note)
	}
	t := r.Total
	fmt.Fprintf(tw, "Total\t%d lease(s), %d owner(s)\t%s\t%s\t%d\t%s\n", t.Leases, t.Owners, rateText(t.DrainRate), rateText(t.WriteRate), t.Lag, drainTimeText(t.tuneDrainTime))
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

// writeTuneVerdict writes the recommendation with its arithmetic and the
// HPA's decisions, or the reasons there is none.
func writeTuneVerdict(b *strings.Builder, r *tuneReport) {
	rec := r.Recommendation
	if rec == nil {
		b.WriteString("No recommendation:\n")
		for _, reason := range r.Reasons {
			fmt.Fprintf(b, "  - %s\n", reason)
		}
		b.WriteString("\n")
		return
	}
	if rec.LowerBound {
		fmt.Fprintf(b, "Per replica   ≥%.2f LSN/s, a lower bound: the mean of %d replica(s) that did all they were given: %s\n", rec.PerReplicaRate, len(rec.Replicas), strings.Join(rec.Replicas, ", "))
		fmt.Fprintf(b, "Recommended   changeFeedLagThreshold: \"%d\" (now %d), a lower bound: %s\n", rec.Threshold, r.Threshold, rec.LowerBoundReason)
	} else {
		fmt.Fprintf(b, "Per replica   %.2f LSN/s: the mean of %d busy replica(s): %s\n", rec.PerReplicaRate, len(rec.Replicas), strings.Join(rec.Replicas, ", "))
		fmt.Fprintf(b, "Recommended   changeFeedLagThreshold: \"%d\" (now %d)\n", rec.Threshold, r.Threshold)
	}
	fmt.Fprintf(b, "              %s\n", rec.Arithmetic)
	from := "--current-replicas"
	if rec.CurrentReplicasFrom == "owners" {
		from = "the lease owners at the last sample; --current-replicas to say otherwise"
	}
	fmt.Fprintf(b, "Replicas      from %d (%s), for the last sample's lag:\n", rec.CurrentReplicas, from)
	for _, h := range []struct {
		label string
		hpa   tuneHPA
	}{{"recommended", rec.HPA}, {"now", rec.CurrentHPA}} {
		p := h.hpa.Replicas
		after := ""
		if p.AfterWindow != nil {
			after = fmt.Sprintf("; → %d once the scale-down stabilization window (%ds) has passed", *p.AfterWindow, p.ScaleDownWindowSeconds)
		}
		fmt.Fprintf(b, "              with %d (%s): %s; %d → %d: %s [min %d, max %d]%s\n", h.hpa.Threshold, h.label, h.hpa.Arithmetic, p.Current, p.Desired,
			strings.Join(p.Steps, "; "), p.Min, p.Max, after)
	}
	b.WriteString("\n")
}

// drainTimeText prints a time to drain: a duration, never (and why, in
// short), or "-" when none is given.
func drainTimeText(t tuneDrainTime) string {
	switch {
	case t.TimeToDrainSeconds != nil:
		return poll.FormatAge(int64(*t.TimeToDrainSeconds))
	case strings.HasPrefix(t.NeverDrains, "writes arrive"):
		return "never (writes ≥ drain)"
	case strings.HasPrefix(t.NeverDrains, "a replica drains nothing"):
		return "never (stuck)"
	case strings.HasPrefix(t.NeverDrains, "nobody drains"):
		return "never (no owner)"
	case t.NeverDrains != "":
		return "never"
	}
	return "-"
}

// rateText prints a rate, "-" when not measured.
func rateText(rate *float64) string {
	if rate == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *rate)
}

// printTuneProgress prints a line per sample (on a terminal).
func printTuneProgress(w io.Writer, samples []tuneSample, k, n int) {
	if w == io.Discard {
		return
	}
	last := samples[len(samples)-1]
	var moved int64
	if len(samples) > 1 {
		first := map[string]int64{}
		for _, l := range samples[0].estimate.Leases {
			if lsn, ok := continuationLSN(l.Continuation); ok {
				first[l.Token] = lsn
			}
		}
		for _, l := range last.estimate.Leases {
			if lsn, ok := continuationLSN(l.Continuation); ok {
				if f, seen := first[l.Token]; seen {
					moved += lsn - f
				}
			}
		}
	}
	fmt.Fprintf(w, "cosmoslag tune: sample %d/%d at %s: lag %d over %d lease(s), checkpoints moved %d since the first sample\n",
		k+1, n, offset(samples, len(samples)-1), last.estimate.TotalLag, len(last.estimate.Leases), moved)
}

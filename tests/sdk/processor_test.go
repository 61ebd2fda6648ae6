//go:build linux

package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProcessor runs `cosmoslag tune` and `cosmoslag check`, as built
// binaries, against a change feed processor we did not write the client
// of: js/processor.mjs, which reads the change feed with @azure/cosmos and
// keeps .NET v3 leases, checkpointing as the .NET processor does (after
// each processed page; a read every poll delay when caught up). Each
// subtest is one situation of issue 41: the processor runs, tune watches
// it for tuneWindow (as JSON and as text, at once), then the processor
// freezes (no writes, every lease checkpointed), prints its state, and
// check's estimate is compared with it.
//
// The subtests run one after another, so that the processor's rates are
// not disturbed by another scenario on the same cores; each takes about
// 35 s.
func TestProcessor(t *testing.T) {
	t.Parallel()
	node, dir := jsSuite(t)
	acc := startServers(t)
	bin := buildCosmoslag(t)
	connect := howToConnect(t, acc.plain)
	for _, sc := range processorScenarios {
		t.Run(sc.name, func(t *testing.T) {
			run := runProcessorScenario(t, node, dir, bin, acc.plain, connect, sc.name)
			sc.assert(t, run)
			// Issue 41 item 10: a lag that does not drain is not "kept up".
			if strings.Contains(run.tuneText, "the writes keep up with the drain") {
				t.Errorf("tune says the opposite of what it means:\n%s", run.tuneText)
			}
			assertCheckMatches(t, run)
			if run.typo != nil {
				assertNoLeaseMatch(t, run)
				assertUntrusted(t, run)
			}
		})
	}
}

// connectHelp is what check and tune need to reach serve: the
// connection string and the certificate to trust (SSL_CERT_FILE).
type connectHelp struct {
	connection, caFile string
}

// howToConnect reads what serve printed after its endpoints: a user
// follows it from serve to check and tune (issue 41 item 7), so the tests
// do too. When serve does not print it, the test fails and goes on with
// the connection string the test makes itself.
func howToConnect(t *testing.T, srv *server) connectHelp {
	t.Helper()
	c := connectHelp{connection: "AccountEndpoint=" + srv.endpoint + ";AccountKey=" + accountKey + ";", caFile: srv.caFile}
	var printed connectHelp
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(srv.after.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "connection string "); ok {
				printed.connection = v
			}
			if v, ok := strings.CutPrefix(line, "trust it SSL_CERT_FILE="); ok {
				printed.caFile, _, _ = strings.Cut(v, " ")
			}
		}
		if printed.connection != "" && printed.caFile != "" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	switch {
	case printed.connection == "" || printed.caFile == "":
		t.Errorf("serve printed no connection string or no SSL_CERT_FILE line after its endpoints:\n%s", srv.after.String())
		return c
	case printed.connection != c.connection || printed.caFile != c.caFile:
		t.Errorf("serve printed connection string %q and SSL_CERT_FILE=%s; want %q and %s", printed.connection, printed.caFile, c.connection, c.caFile)
	}
	return printed
}

// The tune window and interval: 11 samples over 20 s.
const (
	tuneWindow   = "20s"
	tuneInterval = "2s"
	tuneBudget   = 30.0 // seconds
	// threshold is the trigger's changeFeedLagThreshold in the ScaledObject.
	threshold = 100
	// rateTolerance: a measured capacity within 10 % of the processor's rate.
	rateTolerance = 0.10
)

// processorScenarios are the situations of issue 41 ("An independent
// processor in the tests"), named as js/processor.mjs names them, with what
// tune must say in each.
var processorScenarios = []struct {
	name   string
	assert func(t *testing.T, r *scenarioRun)
}{
	{"keeping-up", assertKeepingUp},
	{"backlog", assertBacklog},
	{"stuck", assertStuck},
	{"owner-change", assertOwnerChange},
	{"checkpoint-reset", assertCheckpointReset},
	{"split", assertSplit},
	{"overloaded", assertOverloaded},
}

// afterTune is what the test tells a scenario's processor once tune is
// done, before it freezes, and the event it then waits for: after the
// split, the processor replaces the stale parent by its children, so that
// check's lag for child leases, which resume the parent's continuation, is
// compared with the processor's too.
var afterTune = map[string][2]string{"split": {"handle-splits", "split-handled"}}

// assertKeepingUp: no backlog, 10 writes/s per partition, owners able to do
// 40/s, a checkpoint about every second. Each owner drained what it was
// given (20/s), so its rate is a lower bound, not its capacity (issue 41
// item 1).
func assertKeepingUp(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	if j.ExitCode != 0 && j.ExitCode != 3 {
		t.Fatalf("tune exit %d: %s", j.ExitCode, r.tuneJSONErr)
	}
	for _, o := range j.PerOwner {
		if o.State == "busy" {
			t.Errorf("owner %s kept up (no backlog, capacity %g/s, %g/s given) but is called busy: %s", o.Owner, r.ready.Rate, o.DrainRate, o.Note)
		}
		if !o.LowerBound {
			t.Errorf("owner %s: its rate %.2f/s is what it was given, but lowerBound is false (state %s)", o.Owner, o.DrainRate, o.State)
		}
	}
	if rec := j.Recommendation; rec != nil {
		if !rec.LowerBound || rec.LowerBoundReason == "" {
			t.Errorf("the recommendation (%d from %.2f/s per replica) comes from replicas that kept up, but lowerBound=%v, lowerBoundReason=%q",
				rec.Threshold, rec.PerReplicaRate, rec.LowerBound, rec.LowerBoundReason)
		}
		assertKeepUpCount(t, j)
	} else if j.ExitCode != 3 || j.Reason == "" {
		t.Errorf("no recommendation and no reason (exit %d)", j.ExitCode)
	}
	if j.ExitCode == 0 {
		if !strings.Contains(r.tuneText, "a lower bound") {
			t.Errorf("the text does not mark the rate as a lower bound:\n%s", r.tuneText)
		}
		if !regexp.MustCompile(`(?m)^host-a\s.*≥\d`).MatchString(r.tuneText) {
			t.Errorf("the text's per-owner DRAIN/s is not marked ≥ (a lower bound):\n%s", r.tuneText)
		}
	}
	if strings.Contains(r.tuneText, "its rate is what a replica can do") {
		t.Errorf("the text presents a rate of a replica that kept up as its capacity:\n%s", r.tuneText)
	}
	// A lease that keeps up drains in about a checkpoint interval, not never.
	for _, l := range j.Leases {
		if l.TimeToDrainSeconds == nil || l.NeverDrains != "" {
			t.Errorf("lease %s keeps up, but its time to drain is %s: %s", l.Token, fmtSeconds(l.TimeToDrainSeconds), l.NeverDrains)
		}
	}
	assertNoNegative(t, r)
}

// assertBacklog: both owners had more work than they did for the whole
// window; their rate is their capacity, within rateTolerance of the
// processor's rate.
func assertBacklog(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	if j.ExitCode != 0 || j.Recommendation == nil {
		t.Fatalf("tune exit %d, no recommendation: %s; %s", j.ExitCode, j.Reason, r.tuneJSONErr)
	}
	rec := j.Recommendation
	for _, o := range j.PerOwner {
		if o.State != "busy" || !o.Counted || o.LowerBound {
			t.Errorf("owner %s drained a backlog but is %s (counted %v, lowerBound %v): %s", o.Owner, o.State, o.Counted, o.LowerBound, o.Note)
		}
		assertNear(t, "owner "+o.Owner+"'s drain rate", o.DrainRate, r.ready.Rate)
	}
	if rec.LowerBound {
		t.Errorf("every replica was busy, but the recommendation is a lower bound: %s", rec.LowerBoundReason)
	}
	assertNear(t, "per-replica rate", rec.PerReplicaRate, r.ready.Rate)
	want := int64(math.Floor(rec.PerReplicaRate * tuneBudget))
	if rec.Threshold != want {
		t.Errorf("changeFeedLagThreshold %d, want floor(%.2f × %g) = %d", rec.Threshold, rec.PerReplicaRate, tuneBudget, want)
	}
	assertNear(t, "changeFeedLagThreshold", float64(rec.Threshold), r.ready.Rate*tuneBudget)
	// Each lease's backlog drains at its drain rate less its write rate;
	// an owner's time is its slowest lease's, the total the longest owner's.
	assertLongestDrain(t, j)
	for _, o := range j.PerOwner {
		if o.TimeToDrainSeconds == nil {
			t.Errorf("owner %s drains net %.2f/s but its time to drain is null (%s)", o.Owner, o.DrainRate-o.WriteRate, o.NeverDrains)
			continue
		}
		var want float64
		for _, l := range j.Leases {
			if l.Owner == o.Owner && l.DrainRate != nil && l.WriteRate != nil {
				want = max(want, float64(l.Lag)/(*l.DrainRate-*l.WriteRate))
			}
		}
		if math.Abs(*o.TimeToDrainSeconds-want) > 0.01*want+0.5 {
			t.Errorf("owner %s: time to drain %.1fs, want its slowest lease's lag / (drain − writes), %.1fs", o.Owner, *o.TimeToDrainSeconds, want)
		}
	}
	assertKeepUpCount(t, j)
	assertNoNegative(t, r)
}

// assertStuck: host-b holds its leases and processes nothing while writes
// continue; its time to drain, and the total, are never (null with a
// reason); host-a's rate is still measured.
func assertStuck(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	b, ok := ownerNamed(j, "host-b")
	if !ok {
		t.Fatalf("no owner host-b in %+v", j.PerOwner)
	}
	if b.State != "stuck" || b.Counted {
		t.Errorf("host-b processed nothing, with lag pending: state %s, counted %v", b.State, b.Counted)
	}
	if b.TimeToDrainSeconds != nil || b.NeverDrains == "" {
		t.Errorf("host-b never drains: timeToDrainSeconds %v, neverDrains %q", fmtSeconds(b.TimeToDrainSeconds), b.NeverDrains)
	}
	if j.Total.TimeToDrainSeconds != nil || j.Total.NeverDrains == "" {
		t.Errorf("one owner never drains, so the total never does: timeToDrainSeconds %v, neverDrains %q",
			fmtSeconds(j.Total.TimeToDrainSeconds), j.Total.NeverDrains)
	}
	if !regexp.MustCompile(`(?m)^host-b\s.*never \(stuck\)`).MatchString(r.tuneText) {
		t.Errorf("the text does not say host-b never drains (stuck):\n%s", r.tuneText)
	}
	a, ok := ownerNamed(j, "host-a")
	if !ok {
		t.Fatalf("no owner host-a in %+v", j.PerOwner)
	}
	if a.State != "busy" || !a.Counted {
		t.Errorf("host-a drained a backlog but is %s (counted %v)", a.State, a.Counted)
	}
	assertNear(t, "host-a's drain rate", a.DrainRate, r.ready.Rate)
	if a.TimeToDrainSeconds == nil {
		t.Errorf("host-a drains its backlog but its time to drain is null: %s", a.NeverDrains)
	}
	if rec := j.Recommendation; rec != nil {
		if !slices.Equal(rec.Replicas, []string{"host-a"}) {
			t.Errorf("counted replicas %v, want [host-a]: a stuck replica says nothing of what a replica can do", rec.Replicas)
		}
		assertNear(t, "per-replica rate", rec.PerReplicaRate, r.ready.Rate)
	}
	assertNoNegative(t, r)
}

// assertOwnerChange: host-a shuts down at 8 s and host-c takes its leases
// at 10 s; host-b drains throughout. The moved leases stay in the totals,
// their owners are not counted, and host-b's rate is the capacity.
func assertOwnerChange(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	if r.event("released") == nil || r.event("acquired") == nil {
		t.Fatalf("the processor did not hand over host-a's leases: %v", r.events)
	}
	moved := r.event("released").Leases
	var drained int64
	for _, l := range j.Leases {
		drained += l.Drained
		if slices.Contains(moved, l.Token) && (!slices.Contains(l.Owners, "host-a") || !slices.Contains(l.Owners, "host-c")) {
			t.Errorf("lease %s went from host-a to host-c, but its owners are %v (owner %q)", l.Token, l.Owners, l.Owner)
		}
	}
	if j.Total.Leases != 4 || j.Total.Drained != drained {
		t.Errorf("total: %d lease(s), drained %d; want 4 leases and the leases' %d", j.Total.Leases, j.Total.Drained, drained)
	}
	for _, o := range j.PerOwner {
		if o.Counted && o.Owner != "host-b" {
			t.Errorf("owner %q held a lease that changed hands but is counted in the per-replica rate", o.Owner)
		}
	}
	if j.ExitCode != 0 || j.Recommendation == nil {
		t.Fatalf("tune exit %d, no recommendation from host-b: %s", j.ExitCode, j.Reason)
	}
	rec := j.Recommendation
	if !slices.Equal(rec.Replicas, []string{"host-b"}) || rec.LowerBound {
		t.Errorf("counted %v (lowerBound %v), want [host-b], busy throughout", rec.Replicas, rec.LowerBound)
	}
	assertNear(t, "per-replica rate", rec.PerReplicaRate, r.ready.Rate)
	// host-c's two leases drain slower than host-b's: the total is the
	// longer time, not the time at the pooled rate (issue 41 item 3).
	assertLongestDrain(t, j)
	assertNoNegative(t, r)
}

// assertCheckpointReset: at 10 s a lease's continuation goes back to its
// first checkpoint and the processor drains it again, past where the
// window started. tune refuses (issue 41 item 2).
func assertCheckpointReset(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	ev := r.event("reset")
	if ev == nil {
		t.Fatalf("the processor did not reset a checkpoint: %v", r.events)
	}
	if j.ExitCode != 3 || j.Recommendation != nil {
		t.Errorf("lease %s's checkpoint moved back (%s → %s) inside the window, but tune made a recommendation (exit %d): %+v",
			ev.Lease, ev.From, ev.To, j.ExitCode, j.Recommendation)
	}
	if !slices.ContainsFunc(j.Reasons, func(s string) bool { return strings.HasPrefix(s, "lease "+ev.Lease+"'s checkpoint moved back") }) {
		t.Errorf("no reason names lease %s's checkpoint moving back: %q", ev.Lease, j.Reasons)
	}
	assertNoNegative(t, r)
}

// assertSplit: at 6 s the first lease's range splits; the processor leaves
// the stale parent in place past the window. tune refuses, and prints no
// negative number (issue 41 item 5).
func assertSplit(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	ev := r.event("split")
	if ev == nil {
		t.Fatalf("the processor did not split a range: %v", r.events)
	}
	if j.ExitCode != 3 || j.Recommendation != nil {
		t.Errorf("lease %s's range split inside the window, but tune made a recommendation (exit %d)", ev.Lease, j.ExitCode)
	}
	if !slices.ContainsFunc(j.Leases, func(l tuneLeaseJSON) bool { return l.Token == ev.Lease && l.StaleParent }) {
		t.Errorf("lease %s is a stale parent at the last sample, which tune does not show", ev.Lease)
	}
	for _, o := range j.PerOwner {
		if o.TimeToDrainSeconds != nil {
			t.Errorf("refused run: owner %s has a time to drain of %gs", o.Owner, *o.TimeToDrainSeconds)
		}
	}
	if j.Total.TimeToDrainSeconds != nil {
		t.Errorf("refused run: the total has a time to drain of %gs", *j.Total.TimeToDrainSeconds)
	}
	assertNoNegative(t, r)
	// After tune the processor replaced the parent by its two children;
	// check (compared with the frozen state) reads them.
	if h := r.event("split-handled"); h == nil || len(h.Children) != 2 || h.Parent != ev.Lease {
		t.Errorf("the processor did not replace lease %s by two children: %+v", ev.Lease, h)
	}
	if slices.ContainsFunc(r.frozen.Leases, func(l frozenLease) bool { return l.StaleParent || l.Token == ev.Lease }) {
		t.Errorf("the frozen processor still holds the parent lease %s: %+v", ev.Lease, r.frozen.Leases)
	}
}

// assertOverloaded: each partition gets 30 writes/s and each replica,
// holding one lease, drains 25/s: one replica per partition cannot keep
// up, so tune says so instead of a replica count (issue 41 item 4), and
// nothing drains.
func assertOverloaded(t *testing.T, r *scenarioRun) {
	j := r.tuneJSON
	if j.ExitCode != 0 || j.Recommendation == nil {
		t.Fatalf("tune exit %d, no recommendation: %s; %s", j.ExitCode, j.Reason, r.tuneJSONErr)
	}
	rec := j.Recommendation
	for _, o := range j.PerOwner {
		if o.State != "busy" || !o.Counted {
			t.Errorf("owner %s has a growing backlog but is %s (counted %v)", o.Owner, o.State, o.Counted)
		}
		if o.TimeToDrainSeconds != nil || o.NeverDrains == "" {
			t.Errorf("owner %s drains %.2f/s against %.2f/s of writes, but its time to drain is %s (%q)", o.Owner, o.DrainRate, o.WriteRate, fmtSeconds(o.TimeToDrainSeconds), o.NeverDrains)
		}
	}
	assertNear(t, "per-replica rate", rec.PerReplicaRate, r.ready.Rate)
	if rec.KeepUpReplicas != nil || rec.CannotKeepUp == "" {
		t.Errorf("%g writes/s per partition, %.2f/s per replica: keepUpReplicas %s, cannotKeepUp %q; want null and a reason",
			r.ready.WriteRate, rec.PerReplicaRate, fmtInt(rec.KeepUpReplicas), rec.CannotKeepUp)
	}
	if !strings.Contains(r.tuneText, "no replica count keeps up") || strings.Contains(r.tuneText, "minReplicaCount of") {
		t.Errorf("the text does not say that no replica count keeps up, or advises a minReplicaCount:\n%s", r.tuneText)
	}
	if j.Total.TimeToDrainSeconds != nil || j.Total.NeverDrains == "" {
		t.Errorf("no owner drains, but the total time to drain is %s (%q)", fmtSeconds(j.Total.TimeToDrainSeconds), j.Total.NeverDrains)
	}
	assertNoNegative(t, r)
}

// assertCheckMatches compares check's estimate with the frozen processor's
// state: per lease its owner, continuation and the changes pending after
// it (read by the processor with the SDK), the total lag and the metric.
func assertCheckMatches(t *testing.T, r *scenarioRun) {
	t.Helper()
	c := r.check
	if c.ExitCode != 0 {
		t.Fatalf("check exit %d: %s", c.ExitCode, c.Error)
	}
	var total, active int64
	stale := 0
	for _, want := range r.frozen.Leases {
		i := slices.IndexFunc(c.Leases, func(l checkLeaseJSON) bool { return l.Token == want.Token })
		if i < 0 {
			t.Errorf("check does not show lease %s (%s)", want.Token, want.ID)
			continue
		}
		got := c.Leases[i]
		if got.Owner != want.Owner || got.Continuation != want.Continuation || got.StaleParent != want.StaleParent {
			t.Errorf("lease %s: check says owner %q continuation %s staleParent %v; the processor's lease: owner %q continuation %s staleParent %v",
				want.Token, got.Owner, got.Continuation, got.StaleParent, want.Owner, want.Continuation, want.StaleParent)
		}
		if want.StaleParent {
			stale++
			continue
		}
		if got.Lag != want.Pending {
			t.Errorf("lease %s: check's lag %d, but %d change(s) follow its checkpoint %s", want.Token, got.Lag, want.Pending, want.Continuation)
		}
		if want.Pending > 0 {
			total += want.Pending
			active++
		}
	}
	if len(c.Leases) != len(r.frozen.Leases) {
		t.Errorf("check shows %d lease(s), the processor holds %d", len(c.Leases), len(r.frozen.Leases))
	}
	if stale > 0 { // the scaler's rule for stale parents (Summarize)
		total, active = max(total, 1), max(active, 1)
	}
	metric := min(total, active*threshold)
	if c.TotalLag != total || c.ActivePartitions != active || c.Metric != metric || c.StaleParents != stale {
		t.Errorf("check: total lag %d, active partitions %d, metric %d, stale parents %d; the processor's state: %d, %d, min(%d, %d × %d) = %d, %d",
			c.TotalLag, c.ActivePartitions, c.Metric, c.StaleParents, total, active, total, active, threshold, metric, stale)
	}
	// The replicas: KEDA never runs fewer than minReplicaCount (1 here), so
	// the plan starts from 1 (issue 41 item 9); the HPA then asks for
	// ceil(metric / threshold) unless the ratio to 1 replica's target is
	// within its 10 % tolerance, bounded by maxReplicaCount 10.
	want := int32(min(max((metric+threshold-1)/threshold, 1), 10))
	if ratio := float64(metric) / threshold; ratio >= 0.9 && ratio <= 1.1 {
		want = 1
	}
	if p := c.Replicas; p == nil || p.Current != 1 || p.Desired != want {
		t.Errorf("check's replicas %+v; want from 1 (minReplicaCount) to %d for metric %d", p, want, metric)
	}
}

// typoName is the processor's name misspelt (issue 41 item 6).
const typoName = "orders-procesor"

// assertNoLeaseMatch: with a misspelt processorName, check and tune say
// that no lease document matches, name the prefix the lease container
// holds, and tune stops after its first sample (exit 3) instead of
// waiting its window to say "no checkpoint moved".
func assertNoLeaseMatch(t *testing.T, r *scenarioRun) {
	t.Helper()
	t.Logf("check --set processorName=%s: warnings %q", typoName, r.typo.check.Warnings)
	t.Logf("tune --set processorName=%s: exit %d after %d sample(s): %s", typoName, r.typo.tune.ExitCode, r.typo.tune.Samples, r.typo.tune.Reason)
	// The lease container holds the processor's leases and its .info.
	docs := len(r.frozen.Leases) + 1
	want := fmt.Sprintf(`no lease document matches processorName %q`, typoName)
	for _, c := range []struct {
		cmd      string
		exit     int
		warnings []string
		m        *noLeaseMatchJSON
	}{
		{"check", r.typo.check.ExitCode, r.typo.check.Warnings, r.typo.check.NoLeaseMatch},
		{"tune", r.typo.tune.ExitCode, r.typo.tune.Warnings, r.typo.tune.NoLeaseMatch},
	} {
		if !slices.ContainsFunc(c.warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("%s --set processorName=%s: no warning %q: %q", c.cmd, typoName, want, c.warnings)
		}
		if slices.ContainsFunc(c.warnings, func(w string) bool { return strings.Contains(w, "never checkpointed") }) {
			t.Errorf("%s --set processorName=%s reads as a processor whose leases were never checkpointed: %q", c.cmd, typoName, c.warnings)
		}
		m := c.m
		if m == nil {
			t.Errorf("%s --set processorName=%s: no noLeaseMatch in the JSON", c.cmd, typoName)
			continue
		}
		if m.ProcessorName != typoName || m.LeaseDocuments != docs || m.WithProcessorName != 0 ||
			len(m.OtherPrefixes) != 1 || m.OtherPrefixes[0].Prefix != r.ready.ProcessorName || m.OtherPrefixes[0].Documents != docs {
			t.Errorf("%s: noLeaseMatch %+v; want %d lease documents, all under the prefix %q", c.cmd, *m, docs, r.ready.ProcessorName)
		}
	}
	if r.typo.check.ExitCode != 0 {
		t.Errorf("check exit %d, want 0 (the estimate was made)", r.typo.check.ExitCode)
	}
	if r.typo.tune.ExitCode != 3 || r.typo.tune.Samples != 1 {
		t.Errorf("tune exit %d after %d sample(s); want exit 3 after the first sample", r.typo.tune.ExitCode, r.typo.tune.Samples)
	}
	if !strings.HasPrefix(r.typo.tune.Reason, want) {
		t.Errorf("tune's reason %q does not start with %q", r.typo.tune.Reason, want)
	}
}

// assertUntrusted: check without SSL_CERT_FILE meets serve's certificate;
// it is not retried, and the error names the fix (issue 41 item 7).
func assertUntrusted(t *testing.T, r *scenarioRun) {
	t.Helper()
	t.Logf("check without SSL_CERT_FILE: exit %d: %s", r.untrusted.ExitCode, r.untrusted.Error)
	if u := r.untrusted; u.ExitCode != 1 || !strings.Contains(u.Error, "not retried") || !strings.Contains(u.Error, "SSL_CERT_FILE") || !strings.Contains(u.Error, "--ca-file") {
		t.Errorf("check without SSL_CERT_FILE: exit %d, error %q; want exit 1 and an error that names --ca-file and SSL_CERT_FILE and says it was not retried", u.ExitCode, u.Error)
	}
}

// assertNear checks got within rateTolerance of want.
func assertNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > rateTolerance*want {
		t.Errorf("%s: %.2f, want %.2f ± %.0f %%", what, got, want, rateTolerance*100)
	}
}

// assertLongestDrain: the total time to drain is the longest owner's.
func assertLongestDrain(t *testing.T, j *tuneJSON) {
	t.Helper()
	var longest float64
	for _, o := range j.PerOwner {
		if o.TimeToDrainSeconds != nil {
			longest = max(longest, *o.TimeToDrainSeconds)
		}
	}
	if j.Total.TimeToDrainSeconds == nil || math.Abs(*j.Total.TimeToDrainSeconds-longest) > 0.5 {
		t.Errorf("total time to drain %v, want the longest owner's, %.1fs", fmtSeconds(j.Total.TimeToDrainSeconds), longest)
	}
}

// assertKeepUpCount: the keep-up count never exceeds the partitions with
// writes (issue 41 item 4).
func assertKeepUpCount(t *testing.T, j *tuneJSON) {
	t.Helper()
	rec := j.Recommendation
	if rec == nil || rec.KeepUpReplicas == nil {
		return
	}
	if rec.PartitionsWithWrites == nil || *rec.KeepUpReplicas > *rec.PartitionsWithWrites || *rec.PartitionsWithWrites > len(j.Leases) {
		t.Errorf("keepUpReplicas %d, partitionsWithWrites %v, %d lease(s)", *rec.KeepUpReplicas, fmtInt(rec.PartitionsWithWrites), len(j.Leases))
	}
}

// negativeNumber is a number or duration with a minus sign in text output
// ("-46.16", "-16", "-2m16s"), not a lease token such as "-3FC0" (an EPK
// range from "" to 3FC0).
var negativeNumber = regexp.MustCompile(`(^|[\s(=])-[0-9][0-9.]*(?:[hms%]|/s|[0-9.])*(?:[\s,;)]|$)`)

// assertNoNegative: no rate, lag or time in tune's JSON or text is negative.
func assertNoNegative(t *testing.T, r *scenarioRun) {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(r.tuneJSONOut), &doc); err != nil {
		t.Fatalf("tune -o json: %v", err)
	}
	walkNumbers(doc, "", func(path string, v float64) {
		if v < 0 {
			t.Errorf("tune's JSON has a negative number: %s = %g", path, v)
		}
	})
	for _, line := range strings.Split(r.tuneText, "\n") {
		if negativeNumber.MatchString(line) {
			t.Errorf("tune's text has a negative number: %q", line)
		}
	}
}

func walkNumbers(v any, path string, f func(string, float64)) {
	switch v := v.(type) {
	case float64:
		f(path, v)
	case map[string]any:
		for k, e := range v {
			walkNumbers(e, path+"."+k, f)
		}
	case []any:
		for i, e := range v {
			walkNumbers(e, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

func ownerNamed(j *tuneJSON, name string) (tuneOwnerJSON, bool) {
	i := slices.IndexFunc(j.PerOwner, func(o tuneOwnerJSON) bool { return o.Owner == name })
	if i < 0 {
		return tuneOwnerJSON{}, false
	}
	return j.PerOwner[i], true
}

func fmtSeconds(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%.1fs", *p)
}

func fmtInt(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// tuneJSON is the part of `cosmoslag tune -o json` these tests read
// (the contract of branch z-tune: /work/coord/tune-contract.md).
type tuneJSON struct {
	ExitCode     int               `json:"exitCode"`
	Error        string            `json:"error"`
	Reason       string            `json:"reason"`
	Reasons      []string          `json:"reasons"`
	Warnings     []string          `json:"warnings"`
	Samples      int               `json:"samples"`
	NoLeaseMatch *noLeaseMatchJSON `json:"noLeaseMatch"`
	Leases       []tuneLeaseJSON
	PerOwner     []tuneOwnerJSON `json:"perOwner"`
	Total        struct {
		Leases             int      `json:"leases"`
		Drained            int64    `json:"drained"`
		TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"`
		NeverDrains        string   `json:"neverDrains"`
		TimeToDrainUnknown string   `json:"timeToDrainUnknown"`
	} `json:"total"`
	Recommendation *struct {
		Threshold            int64    `json:"changeFeedLagThreshold"`
		PerReplicaRate       float64  `json:"perReplicaRate"`
		Replicas             []string `json:"countedReplicas"`
		LowerBound           bool     `json:"lowerBound"`
		LowerBoundReason     string   `json:"lowerBoundReason"`
		KeepUpReplicas       *int     `json:"keepUpReplicas"`
		PartitionsWithWrites *int     `json:"partitionsWithWrites"`
		CannotKeepUp         string   `json:"cannotKeepUp"`
	} `json:"recommendation"`
}

type tuneLeaseJSON struct {
	Token       string   `json:"token"`
	Owner       string   `json:"owner"`
	Owners      []string `json:"owners"`
	Drained     int64    `json:"drained"`
	DrainRate   *float64 `json:"drainRate"` // null: not measured
	WriteRate   *float64 `json:"writeRate"`
	Lag         int64    `json:"lag"`
	StaleParent bool     `json:"staleParent"`
	// TimeToDrainSeconds is null when the lease never drains (NeverDrains
	// says why) or its time is unknown.
	TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"`
	NeverDrains        string   `json:"neverDrains"`
}

type tuneOwnerJSON struct {
	Owner              string   `json:"owner"`
	DrainRate          float64  `json:"drainRate"`
	WriteRate          float64  `json:"writeRate"`
	Lag                int64    `json:"lag"`
	TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"`
	NeverDrains        string   `json:"neverDrains"`
	State              string   `json:"state"`
	Counted            bool     `json:"counted"`
	LowerBound         bool     `json:"lowerBound"`
	Note               string   `json:"note"`
}

// checkJSON is the part of `cosmoslag check -o json` these tests read.
type checkJSON struct {
	ExitCode int      `json:"exitCode"`
	Error    string   `json:"error"`
	Warnings []string `json:"warnings"`
	Replicas *struct {
		Current int32    `json:"current"`
		Desired int32    `json:"desired"`
		Steps   []string `json:"steps"`
	} `json:"replicas"`
	NoLeaseMatch     *noLeaseMatchJSON `json:"noLeaseMatch"`
	Leases           []checkLeaseJSON  `json:"leases"`
	StaleParents     int               `json:"staleParents"`
	TotalLag         int64             `json:"totalLag"`
	ActivePartitions int64             `json:"activePartitions"`
	Metric           int64             `json:"metric"`
}

// noLeaseMatchJSON is check's and tune's account of a lease container
// with no document of the processor (the contract of branch z-check:
// /work/coord/nomatch-contract.md).
type noLeaseMatchJSON struct {
	ProcessorName     string `json:"processorName"`
	LeaseDocuments    int    `json:"leaseDocuments"`
	WithProcessorName int    `json:"withProcessorName"`
	OtherPrefixes     []struct {
		Prefix    string `json:"prefix"`
		Documents int    `json:"documents"`
	} `json:"otherPrefixes"`
}

type checkLeaseJSON struct {
	Token        string `json:"token"`
	Owner        string `json:"owner"`
	Continuation string `json:"continuation"`
	Lag          int64  `json:"lag"`
	StaleParent  bool   `json:"staleParent"`
}

// processorEvent is one line of processor.mjs's stdout.
type processorEvent struct {
	Event          string   `json:"event"`
	Error          string   `json:"error"`
	Database       string   `json:"database"`
	Container      string   `json:"container"`
	LeaseContainer string   `json:"leaseContainer"`
	ProcessorName  string   `json:"processorName"`
	Rate           float64  `json:"rate"`
	WriteRate      float64  `json:"writeRate"`
	Lease          string   `json:"lease"`
	Parent         string   `json:"parent"`
	Children       []string `json:"children"`
	Leases         []string `json:"-"`
	From, To       string
	Frozen         []frozenLease `json:"-"`
}

// UnmarshalJSON reads "leases", which is a list of tokens in "released"
// and "acquired" and a list of lease states in "frozen".
func (e *processorEvent) UnmarshalJSON(b []byte) error {
	type plain processorEvent
	var raw struct {
		plain
		Leases json.RawMessage `json:"leases"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = processorEvent(raw.plain)
	if len(raw.Leases) == 0 {
		return nil
	}
	if e.Event == "frozen" {
		return json.Unmarshal(raw.Leases, &e.Frozen)
	}
	if e.Event == "released" || e.Event == "acquired" {
		return json.Unmarshal(raw.Leases, &e.Leases)
	}
	return nil
}

// frozenLease is a lease of the frozen processor: pending is how many
// changes follow its checkpoint, read with the SDK.
type frozenLease struct {
	ID           string `json:"id"`
	Token        string `json:"token"`
	Owner        string `json:"owner"`
	Continuation string `json:"continuation"`
	Pending      int64  `json:"pending"`
	StaleParent  bool   `json:"staleParent"`
}

// scenarioRun is what one scenario produced.
type scenarioRun struct {
	ready       processorEvent
	events      []processorEvent
	frozen      struct{ Leases []frozenLease }
	tuneJSON    *tuneJSON
	tuneJSONOut string
	tuneJSONErr string
	tuneText    string
	check       checkJSON
	// typo: check and tune with the processor's name misspelt, run in the
	// keeping-up scenario only.
	typo *struct {
		check checkJSON
		tune  tuneJSON
	}
	// untrusted: check without SSL_CERT_FILE (keeping-up only).
	untrusted checkJSON
}

func (r *scenarioRun) event(name string) *processorEvent {
	for i := range r.events {
		if r.events[i].Event == name {
			return &r.events[i]
		}
	}
	return nil
}

// runProcessorScenario starts processor.mjs, runs tune (JSON and text) for
// tuneWindow from its "ready", freezes it, runs check, and stops it.
func runProcessorScenario(t *testing.T, node, dir, bin string, srv *server, connect connectHelp, scenario string) *scenarioRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "processor.mjs"), "--scenario", scenario, "--duration", "120")
	cmd.Env = append(os.Environ(), "COSMOS_ENDPOINT="+srv.endpoint, "COSMOS_KEY="+accountKey, "COSMOS_CONTROL="+srv.control,
		"NODE_EXTRA_CA_CERTS="+srv.caFile, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	events := make(chan processorEvent, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e processorEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = processorEvent{Event: "error", Error: fmt.Sprintf("not a JSON line: %q", sc.Text())}
			}
			events <- e
		}
		close(events)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	defer func() {
		_, _ = io.WriteString(stdin, "stop\n")
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("processor.mjs stderr:\n%s", tail(stderr.String(), 6000))
		}
	}()

	r := &scenarioRun{}
	wait := func(name string) processorEvent {
		t.Helper()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("processor.mjs exited before %q:\n%s", name, tail(stderr.String(), 4000))
				}
				if e.Event == "error" {
					t.Fatalf("processor.mjs: %s\n%s", e.Error, tail(stderr.String(), 4000))
				}
				r.events = append(r.events, e)
				if e.Event == name {
					return e
				}
			case <-ctx.Done():
				t.Fatalf("no %q from processor.mjs within the time limit:\n%s", name, tail(stderr.String(), 4000))
			}
		}
	}
	r.ready = wait("ready")
	so := writeProcessorScaledObject(t, r.ready, 1)
	conn := "connection=" + connect.connection
	common := []string{"-f", so, "--set", conn}
	tuneArgs := append([]string{"tune"}, append(common, "--window", tuneWindow, "--interval", tuneInterval, "--budget", fmt.Sprint(tuneBudget)+"s")...)

	// Both tune runs watch the same window; the processor's events go on
	// being collected meanwhile.
	var wg sync.WaitGroup
	var jsonOut, jsonErr, textOut, textErr string
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, jsonOut, jsonErr = runCosmoslag(ctx, bin, connect.caFile, append(tuneArgs, "-o", "json")...)
	}()
	go func() {
		defer wg.Done()
		_, textOut, textErr = runCosmoslag(ctx, bin, connect.caFile, tuneArgs...)
	}()
	tuned := make(chan struct{})
	go func() { wg.Wait(); close(tuned) }()
	for waiting := true; waiting; {
		select {
		case <-tuned:
			waiting = false
		case e, ok := <-events:
			if !ok {
				<-tuned
				t.Fatalf("processor.mjs exited during tune:\n%s", tail(stderr.String(), 4000))
			}
			if e.Event == "error" {
				<-tuned
				t.Fatalf("processor.mjs: %s\n%s", e.Error, tail(stderr.String(), 4000))
			}
			r.events = append(r.events, e)
		}
	}
	r.tuneJSONOut, r.tuneJSONErr, r.tuneText = jsonOut, jsonErr, textOut+textErr
	t.Logf("tune:\n%s", r.tuneText)
	r.tuneJSON = &tuneJSON{}
	if err := json.Unmarshal([]byte(jsonOut), r.tuneJSON); err != nil {
		t.Fatalf("tune -o json did not print a JSON document (%v):\n%s\n%s", err, jsonOut, jsonErr)
	}

	if cmd, ok := afterTune[scenario]; ok {
		if _, err := io.WriteString(stdin, cmd[0]+"\n"); err != nil {
			t.Fatal(err)
		}
		wait(cmd[1])
	}
	if _, err := io.WriteString(stdin, "freeze\n"); err != nil {
		t.Fatal(err)
	}
	frozen := wait("frozen")
	r.frozen.Leases = frozen.Frozen
	code, out, errOut := runCosmoslag(ctx, bin, connect.caFile, append([]string{"check"}, append(common, "-o", "json")...)...)
	if err := json.Unmarshal([]byte(out), &r.check); err != nil {
		t.Fatalf("check -o json (exit %d) did not print a JSON document (%v):\n%s\n%s", code, err, out, errOut)
	}
	t.Logf("frozen processor: %+v; check: total lag %d, active partitions %d, metric %d", r.frozen.Leases, r.check.TotalLag, r.check.ActivePartitions, r.check.Metric)
	if scenario == "keeping-up" {
		r.typo = &struct {
			check checkJSON
			tune  tuneJSON
		}{}
		// minReplicaCount 0: a processor that can scale to zero, where
		// leases never checkpointed draw check's wake-from-zero warning.
		typo := []string{"-f", writeProcessorScaledObject(t, r.ready, 0), "--set", conn, "--set", "processorName=" + typoName, "-o", "json"}
		code, out, errOut := runCosmoslag(ctx, bin, connect.caFile, append([]string{"check"}, typo...)...)
		if err := json.Unmarshal([]byte(out), &r.typo.check); err != nil {
			t.Fatalf("check with processorName=%s (exit %d) did not print a JSON document (%v):\n%s\n%s", typoName, code, err, out, errOut)
		}
		code, out, errOut = runCosmoslag(ctx, bin, connect.caFile, append(append([]string{"tune"}, typo...),
			"--window", tuneWindow, "--interval", tuneInterval, "--budget", fmt.Sprint(tuneBudget)+"s")...)
		if err := json.Unmarshal([]byte(out), &r.typo.tune); err != nil {
			t.Fatalf("tune with processorName=%s (exit %d) did not print a JSON document (%v):\n%s\n%s", typoName, code, err, out, errOut)
		}
		// And without SSL_CERT_FILE: serve's certificate is refused.
		code, out, errOut = runCosmoslag(ctx, bin, "", append([]string{"check"}, append(common, "-o", "json")...)...)
		if err := json.Unmarshal([]byte(out), &r.untrusted); err != nil {
			t.Fatalf("check without SSL_CERT_FILE (exit %d) did not print a JSON document (%v):\n%s\n%s", code, err, out, errOut)
		}
	}
	return r
}

// writeProcessorScaledObject writes the ScaledObject of the processor's
// trigger (the connection comes from --set).
func writeProcessorScaledObject(t *testing.T, ready processorEvent, minReplicas int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "so.yaml")
	so := fmt.Sprintf(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders-processor}
spec:
  scaleTargetRef: {name: orders-processor}
  minReplicaCount: %d
  maxReplicaCount: 10
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: %s, containerId: %s, leaseDatabaseId: %s, leaseContainerId: %s, processorName: %s, changeFeedLagThreshold: "%d"}
`, minReplicas, ready.Database, ready.Container, ready.Database, ready.LeaseContainer, ready.ProcessorName, threshold)
	if err := os.WriteFile(p, []byte(so), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCosmoslag runs the built command; SSL_CERT_FILE makes Go trust the
// server's certificate ("": not set, so the certificate is refused).
func runCosmoslag(ctx context.Context, bin, caFile string, args ...string) (code int, stdout, stderr string) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SSL_CERT_FILE=") })
	if caFile != "" {
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+caFile)
	}
	cmd.Env = append(cmd.Env, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		errOut.WriteString(err.Error())
	}
	return code, out.String(), errOut.String()
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildCosmoslag builds ./cmd/cosmoslag once into a directory TestMain
// removes.
func buildCosmoslag(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cosmoslag-bin-")
		if err != nil {
			buildErr = err
			return
		}
		addStop(func() { _ = os.RemoveAll(dir) })
		root, _ := filepath.Abs(filepath.Join("..", ".."))
		builtBin = filepath.Join(dir, "cosmoslag")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/cosmoslag")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/cosmoslag: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

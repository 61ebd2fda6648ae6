package tune

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// The analysis of samples made by hand, 10 s apart, threshold 100.

func lagAt(token, owner string, checkpoint, lag int64) azure.CosmosDBInspectedLease {
	return azure.CosmosDBInspectedLease{Owner: owner, CosmosDBLeaseLag: azure.CosmosDBLeaseLag{
		CosmosDBLease: azure.CosmosDBLease{Token: token, Continuation: strconv.Quote(strconv.FormatInt(checkpoint, 10))}, Lag: lag}}
}

func handSamples(polls ...[]azure.CosmosDBInspectedLease) []tuneSample {
	start := time.Unix(1_700_000_000, 0)
	var out []tuneSample
	for i, leases := range polls {
		e := scalers.AzureCosmosDBEstimate{CosmosDBInspection: azure.CosmosDBInspection{Leases: leases}, Threshold: 100}
		e.CosmosDBLagSummary = e.Summarize(e.Threshold, e.Activation)
		out = append(out, tuneSample{at: start.Add(time.Duration(i) * 10 * time.Second), estimate: e})
	}
	return out
}

var handInput = tuneInput{budget: 30 * time.Second, startup: 10 * time.Second, Current: -1,
	hpa: hpamodel.Autoscaler{Min: 1, Max: 10, MetricType: v2.AverageValueMetricType, Cooldown: hpamodel.DefaultCooldown, ScaleDownWindow: hpamodel.DefaultScaleDownWindow}}

func ownerByName(t *testing.T, a tuneAnalysis, name string) tuneOwner {
	t.Helper()
	for _, o := range a.PerOwner {
		if o.Owner == name {
			return o
		}
	}
	t.Fatalf("no owner %q in %+v", name, a.PerOwner)
	return tuneOwner{}
}

// A lease that changes owner counts in the total, not in a replica's rate:
// both owners are left out, the others give the per-replica rate.
func TestTuneAnalysisLeaseThatChangedOwner(t *testing.T) {
	a := analyzeTune(handSamples(
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 100, 500), lagAt("1", "b", 100, 500), lagAt("2", "c", 0, 500)},
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 250, 400), lagAt("1", "b", 200, 400), lagAt("2", "a", 100, 400)},
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 400, 300), lagAt("1", "b", 300, 300), lagAt("2", "a", 200, 300)},
	), handInput)
	if len(a.Reasons) > 0 || a.Recommendation == nil {
		t.Fatalf("reasons %q", a.Reasons)
	}
	if o := ownerByName(t, a, "a"); o.State != ownerMoved || o.Counted {
		t.Errorf("owner a: %s, counted %v; want moved, not counted", o.State, o.Counted)
	}
	if o := ownerByName(t, a, "b"); o.State != ownerBusy || !o.Counted || rate(o.DrainRate) != 10 {
		t.Errorf("owner b: %s, counted %v, %.2f/s; want busy, counted, 10/s", o.State, o.Counted, rate(o.DrainRate))
	}
	if a.Total.Drained != 300+200+200 || rate(a.Total.DrainRate) != 35 {
		t.Errorf("total drained %d at %.2f/s; want 700 at 35/s", a.Total.Drained, rate(a.Total.DrainRate))
	}
	r := a.Recommendation
	if r.PerReplicaRate != 10 || r.Threshold != 200 || strings.Join(r.Replicas, ",") != "b" {
		t.Errorf("per replica %.2f from %q, threshold %d; want 10 from b, 200", r.PerReplicaRate, r.Replicas, r.Threshold)
	}
	if r.Arithmetic != "floor(10.00 LSN/s per replica × (30s budget − 10s startup)) = floor(10.00 × 20) = 200" {
		t.Errorf("arithmetic %q", r.Arithmetic)
	}
	// The last sample: lag 900 over 3 partitions; with 200, metric 600 and
	// 3 replicas from the 2 owners.
	if r.HPA.Metric != 600 || r.HPA.Replicas.Current != 2 || r.HPA.Replicas.Desired != 3 || r.CurrentReplicasFrom != "owners" {
		t.Errorf("HPA %+v from %s", r.HPA, r.CurrentReplicasFrom)
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "lease 2 changed owner (c → a): its drain is in the total but cannot be attributed, so c and a are left out") {
		t.Errorf("notes %q", a.Notes)
	}
}

// Replicas that kept up give a lower bound; a replica with nothing to do
// is idle, not slow; one that drains nothing while lag waits is stuck.
func TestTuneAnalysisCaughtUpIdleAndStuck(t *testing.T) {
	a := analyzeTune(handSamples(
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 100, 50), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 70)},
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 150, 0), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 90)},
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 160, 10), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 120)},
	), tuneInput{budget: 30 * time.Second, Current: 5, hpa: handInput.hpa})
	if len(a.Reasons) > 0 || a.Recommendation == nil {
		t.Fatalf("reasons %q", a.Reasons)
	}
	for name, want := range map[string]string{"a": ownerCaughtUp, "b": ownerIdle, "c": ownerStuck} {
		if o := ownerByName(t, a, name); o.State != want || o.Counted != (name == "a") {
			t.Errorf("owner %s: %s (counted %v), want %s", name, o.State, o.Counted, want)
		}
	}
	r := a.Recommendation
	if !r.LowerBound || r.PerReplicaRate != 3 || r.Threshold != 90 || r.KeepUpReplicas == nil || *r.KeepUpReplicas != 2 || r.CurrentReplicas != 5 || r.CurrentReplicasFrom != "flag" {
		t.Errorf("recommendation %+v; want a lower bound of 3/s, 90, from 5 replicas (the flag)", r)
	}
	if !strings.Contains(r.LowerBoundReason, "the threshold for the budget is at least this") {
		t.Errorf("lower bound reason %q", r.LowerBoundReason)
	}
}

func TestTuneAnalysisRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		polls [][]azure.CosmosDBInspectedLease
		want  string
	}{
		{"two samples", [][]azure.CosmosDBInspectedLease{
			{lagAt("0", "a", 100, 50)}, {lagAt("0", "a", 200, 50)},
		}, "too few samples: 2, at least 3 are needed"},
		{"checkpoint moved back", [][]azure.CosmosDBInspectedLease{
			{lagAt("0", "a", 100, 50), lagAt("1", "b", 100, 50)}, {lagAt("0", "a", 200, 50), lagAt("1", "b", 200, 50)}, {lagAt("0", "a", 300, 50), lagAt("1", "b", 0, 50)},
		}, "lease 1's checkpoint moved back between +10s and +20s (200 → 0)"},
		{"only moved leases drained", [][]azure.CosmosDBInspectedLease{
			{lagAt("0", "a", 100, 50)}, {lagAt("0", "b", 200, 50)}, {lagAt("0", "b", 300, 50)},
		}, "no replica's drain can be attributed"},
		{"idle", [][]azure.CosmosDBInspectedLease{
			{lagAt("0", "a", 100, 0)}, {lagAt("0", "a", 100, 0)}, {lagAt("0", "a", 100, 0)},
		}, "no checkpoint moved in the 20s measured and no change was pending: the processor was idle"},
	} {
		a := analyzeTune(handSamples(c.polls...), handInput)
		if a.Recommendation != nil || !strings.Contains(strings.Join(a.Reasons, "\n"), c.want) {
			t.Errorf("%s: reasons %q, recommendation %v; want %q", c.name, a.Reasons, a.Recommendation, c.want)
		}
	}
}

// A rate too low for the useful budget still recommends 1, and says so.
func TestTuneAnalysisThresholdAtLeastOne(t *testing.T) {
	a := analyzeTune(handSamples(
		[]azure.CosmosDBInspectedLease{lagAt("0", "a", 100, 50)}, []azure.CosmosDBInspectedLease{lagAt("0", "a", 100, 50)}, []azure.CosmosDBInspectedLease{lagAt("0", "a", 101, 50)},
	), tuneInput{budget: 2 * time.Second, startup: time.Second, Current: -1, hpa: handInput.hpa})
	if r := a.Recommendation; r == nil || r.Threshold != 1 || !strings.HasSuffix(r.Arithmetic, "= floor(0.05 × 1) = 0, raised to 1, the least threshold") {
		t.Errorf("recommendation %+v, reasons %q", r, a.Reasons)
	}
}

// When the replicas the HPA would choose drain less than the writes add,
// a note says how many keep up: two replicas holding two leases each, every
// partition written 8/s, a replica draining 10/s.
func TestTuneAnalysisKeepUpNote(t *testing.T) {
	var polls [][]azure.CosmosDBInspectedLease
	for i := range int64(3) {
		polls = append(polls, []azure.CosmosDBInspectedLease{
			lagAt("0", "a", 50*i, 60+30*i), lagAt("1", "a", 50*i, 60+30*i), lagAt("2", "b", 50*i, 60+30*i), lagAt("3", "b", 50*i, 60+30*i),
		})
	}
	a := analyzeTune(handSamples(polls...), handInput)
	r := a.Recommendation
	if r == nil || r.Threshold != 200 || r.LowerBound || r.KeepUpReplicas == nil || *r.KeepUpReplicas != 4 || r.PartitionsWithWrites != 4 || rate(a.Total.WriteRate) != 32 {
		t.Fatalf("recommendation %+v, total %+v, reasons %q", r, a.Total, a.Reasons)
	}
	want := fmt.Sprintf("the writes (32.00/s over 4 partition(s)) need 4 replica(s) at 10.00/s each to keep up with 10 %% headroom; with the %d the HPA would choose for the last sample's lag, the lag grows",
		r.HPA.Replicas.Desired)
	if r.HPA.Replicas.Desired >= 4 || !strings.Contains(strings.Join(a.Notes, "\n"), want) {
		t.Errorf("HPA %+v, notes %q; want %q", r.HPA.Replicas, a.Notes, want)
	}
}

func rate(r *float64) float64 {
	if r == nil {
		return math.NaN()
	}
	return *r
}

func drainText(d tuneDrainTime) string {
	switch {
	case d.TimeToDrainSeconds != nil:
		return strconv.FormatFloat(*d.TimeToDrainSeconds, 'f', -1, 64)
	case d.NeverDrains != "":
		return "never: " + d.NeverDrains
	}
	return "unknown: " + d.TimeToDrainUnknown
}

// Item 1: a processor that keeps up, its lag only what arrived since the
// last checkpoint, is not busy: its rate is a lower bound, marked in the
// owners, the recommendation, the text and the JSON document. Replicas
// draining a backlog are busy.
func TestTuneAnalysisKeepingUpIsALowerBound(t *testing.T) {
	samples := scenarioKeepingUp()
	a := analyzeTune(samples, handInput)
	r := a.Recommendation
	if r == nil || !r.LowerBound || !strings.Contains(r.LowerBoundReason, "no replica had more work than it did") || r.PerReplicaRate != 10 {
		t.Fatalf("recommendation %+v, reasons %q; want a lower bound of 10/s", r, a.Reasons)
	}
	for _, name := range []string{"a", "b"} {
		o := ownerByName(t, a, name)
		if o.State != ownerCaughtUp || !o.LowerBound || !o.Counted || !strings.Contains(o.Note, "its lag, ") {
			t.Errorf("owner %s: %s (lower bound %v, counted %v): %s; want caughtUp, a lower bound", name, o.State, o.LowerBound, o.Counted, o.Note)
		}
		// Its lag is what arrived since its last checkpoint: it drains in
		// about a second, not never.
		if got := drainText(o.tuneDrainTime); got != "1" {
			t.Errorf("owner %s drains in %s; want 1 s", name, got)
		}
	}
	text := tuneText(t, samples, a)
	for _, re := range []string{
		`(?m)^a\s+0\s+≥10\.00\s+10\.00\s+8\s+1s\s+caughtUp: did all it was given \(at \+0s its lag, 8, was less than it drained by the next sample, 100\)`,
		`(?m)^Per replica\s+≥10\.00 LSN/s, a lower bound: the mean of 2 replica\(s\) that did all they were given: a, b$`,
		`(?m)^Recommended\s+changeFeedLagThreshold: "200" \(now 100\), a lower bound: no replica had more work than it did`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("text does not match %s:\n%s", re, text)
		}
	}
	if strings.Contains(text, "busy") || strings.Contains(text, "keep up") {
		t.Errorf("a replica called busy, or a keep-up count from a lower bound:\n%s", text)
	}
	doc := reportJSON(t, samples, a)
	if !strings.Contains(doc, `"lowerBound":true,"lowerBoundReason":"no replica had more work`) || !strings.Contains(doc, `"state":"caughtUp","counted":true,"lowerBound":true`) {
		t.Errorf("JSON without the lower-bound marks:\n%s", doc)
	}

	// Draining a backlog, each lag above what the replica drains by the next
	// sample: busy, the rate a replica's capacity.
	a = analyzeTune(scenarioUnequalOwners(), handInput)
	if r := a.Recommendation; r == nil || r.LowerBound || r.LowerBoundReason != "" || ownerByName(t, a, "a").State != ownerBusy || ownerByName(t, a, "b").LowerBound {
		t.Errorf("backlog: recommendation %+v, owners %+v; want busy owners, no lower bound", r, a.PerOwner)
	}
}

// reportJSON is tune's JSON document for an analysis of samples.
func reportJSON(t *testing.T, samples []tuneSample, a tuneAnalysis) string {
	t.Helper()
	r := &tuneReport{}
	r.fill(samples, a)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Item 2: a checkpoint that moves back between any two samples refuses the
// run, naming the lease, even when its last sample is ahead of its first.
func TestTuneAnalysisBackwardStepRefuses(t *testing.T) {
	samples := scenarioReset()
	a := analyzeTune(samples, handInput)
	want := "lease 0's checkpoint moved back between +10s and +20s (1330 → 100): the processor reset it"
	if a.Recommendation != nil || len(a.Reasons) != 1 || !strings.HasPrefix(a.Reasons[0], want) {
		t.Fatalf("recommendation %+v, reasons %q; want only %q", a.Recommendation, a.Reasons, want)
	}
	l := a.Leases[0]
	if l.DrainRate != nil || l.WriteRate != nil || l.Drained != 0 || !strings.Contains(l.Unmeasured, "moved back") {
		t.Errorf("lease 0: %+v; want no rates, unmeasured", l)
	}
	if o := ownerByName(t, a, "a"); o.State != ownerUnmeasured || o.DrainRate != nil {
		t.Errorf("owner a: %+v; want unmeasured, no rate", o)
	}
	text := tuneText(t, samples, a)
	if !strings.Contains(text, "No recommendation:\n  - "+want) || !regexp.MustCompile(`(?m)^0\s+a\s+136 → 1321\s+-\s+-\s+-\s+2100\s+-$`).MatchString(text) {
		t.Errorf("text:\n%s", text)
	}
}

// Item 3: the time to drain is per lease and per owner, the total the
// slowest owner's; never, with the reason, when something does not drain.
func TestTuneAnalysisTimeToDrainIsTheSlowest(t *testing.T) {
	three := func(token, owner string, checkpoints, lags [3]int64) [3]polled {
		var rows [3]polled
		for i := range rows {
			rows[i] = lagAt(token, owner, checkpoints[i], lags[i])
		}
		return rows
	}
	for _, c := range []struct {
		name    string
		samples []tuneSample
		total   string
		note    string
	}{
		// a: 1000 at 20/s drained, 10/s written: 100 s; b: 3360: 336 s.
		// The pooled rates would say 4360 / (40 − 20) = 218 s.
		{"two backlogs", scenarioUnequalOwners(), "336", "(4360) takes 5m36s to drain"},
		{"drain equals writes", scenarioUnequalOwners(three("2", "c", [3]int64{0, 100, 200}, [3]int64{1000, 1000, 1000})),
			"never: writes arrive as fast as or faster than the replicas drain them (lease 2, owner c: 10.00/s written, 10.00/s drained)",
			"(5360) does not drain: writes arrive as fast as or faster than the replicas drain them (lease 2, owner c"},
		{"stuck lease", scenarioUnequalOwners(three("2", "c", [3]int64{0, 0, 0}, [3]int64{500, 600, 700})),
			"never: a replica drains nothing while changes are pending (lease 2, owner c: 700 pending, stuck)",
			"(5060) does not drain: a replica drains nothing while changes are pending"},
		{"unowned lease", scenarioUnequalOwners(three("2", "", [3]int64{0, 0, 0}, [3]int64{500, 600, 700})),
			"never: nobody drains a lease without an owner (lease 2: 700 pending)", "does not drain: nobody drains a lease without an owner"},
	} {
		a := analyzeTune(c.samples, handInput)
		if a.Recommendation == nil {
			t.Fatalf("%s: reasons %q", c.name, a.Reasons)
		}
		if got := drainText(a.Total.tuneDrainTime); got != c.total {
			t.Errorf("%s: total %s; want %s", c.name, got, c.total)
		}
		for _, want := range []struct{ owner, lease, seconds string }{{"a", "0", "100"}, {"b", "1", "336"}} {
			if got := drainText(ownerByName(t, a, want.owner).tuneDrainTime); got != want.seconds {
				t.Errorf("%s: owner %s drains in %s; want %s", c.name, want.owner, got, want.seconds)
			}
			for _, l := range a.Leases {
				if l.Token == want.lease && drainText(l.tuneDrainTime) != want.seconds {
					t.Errorf("%s: lease %s drains in %s; want %s", c.name, l.Token, drainText(l.tuneDrainTime), want.seconds)
				}
			}
		}
		if notes := strings.Join(a.Notes, "\n"); !strings.Contains(notes, c.note) || strings.Contains(notes, "keep up with the drain") {
			t.Errorf("%s: notes %q; want %q", c.name, a.Notes, c.note)
		}
	}
}

// Item 4: the keep-up count is never more than the partitions with writes,
// and when a partition takes more writes than a replica drains, tune says
// no count keeps up instead of naming one.
func TestTuneAnalysisKeepUpCount(t *testing.T) {
	a := analyzeTune(scenarioHotPartitions(), handInput)
	r := a.Recommendation
	if r == nil || r.KeepUpReplicas != nil || r.PartitionsWithWrites != 4 ||
		r.CannotKeepUp != "no replica count keeps up: lease 0's partition takes 30.00 writes/s, more than a replica drains (25.00/s), and one replica drains a partition at a time" {
		t.Fatalf("recommendation %+v, reasons %q", r, a.Reasons)
	}
	notes := strings.Join(a.Notes, "\n")
	if !strings.Contains(notes, r.CannotKeepUp+"; the lag grows whatever the replica count") || strings.Contains(notes, "minReplicaCount") || strings.Contains(notes, "need 5") {
		t.Errorf("notes %q", a.Notes)
	}
	doc := reportJSON(t, scenarioHotPartitions(), a)
	if !strings.Contains(doc, `"keepUpReplicas":null,"cannotKeepUp":"no replica count keeps up`) {
		t.Errorf("JSON: %s", doc)
	}

	// One written partition (30/s), three replicas that did all they were
	// given (≥30, ≥1, ≥1): 30 / 10.67 rounds up to 3, capped at 1.
	a = analyzeTune(scenarioOneWrittenPartition(), handInput)
	if r := a.Recommendation; r == nil || !r.LowerBound || r.KeepUpReplicas == nil || *r.KeepUpReplicas != 1 || r.PartitionsWithWrites != 1 || r.CannotKeepUp != "" {
		t.Errorf("one written partition: recommendation %+v, reasons %q; want 1 replica keeps up", r, a.Reasons)
	}
}

// Item 5: a refused run prints no negative rate, and no time to drain.
func TestTuneAnalysisRefusedRunPrintsNoNonsense(t *testing.T) {
	samples := scenarioStaleParent()
	a := analyzeTune(samples, handInput)
	if a.Recommendation != nil || len(a.Reasons) == 0 {
		t.Fatalf("a recommendation across a split: %+v", a.Recommendation)
	}
	if l := a.Leases[0]; !l.StaleParent || l.WriteRate != nil || !strings.HasPrefix(l.Unmeasured, "stale parent") {
		t.Errorf("stale parent lease: %+v; want its writes not measured", l)
	}
	if a.Total.WriteRate != nil {
		t.Errorf("total write rate %v over a lease whose writes are not measured", *a.Total.WriteRate)
	}
	for _, d := range append([]tuneDrainTime{a.Total.tuneDrainTime}, a.PerOwner[0].tuneDrainTime, a.PerOwner[1].tuneDrainTime, a.Leases[1].tuneDrainTime) {
		if d.TimeToDrainSeconds != nil || d.NeverDrains != "" || !strings.HasPrefix(d.TimeToDrainUnknown, "no recommendation") {
			t.Errorf("time to drain %s in a refused run", drainText(d))
		}
	}
	text := tuneText(t, samples, a)
	tables, _, _ := strings.Cut(text, "No recommendation:")
	if m := regexp.MustCompile(`\s-\d`).FindString(tables); m != "" {
		t.Errorf("a negative number %q:\n%s", m, text)
	}
	for _, re := range []string{`(?m)^0\s+a\s+100 → 300\s+200\s+10\.00\s+-\s+stale parent\s+-$`, `(?m)^b\s+1\s+30\.00\s+20\.00\s+800\s+-\s+busy`, `(?m)^Total .*\s+40\.00\s+-\s+800\s+-$`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("text does not match %s:\n%s", re, text)
		}
	}
	doc := reportJSON(t, samples, a)
	if strings.Contains(doc, `"writeRate":-`) || strings.Contains(doc, `"timeToDrainSeconds":1`) {
		t.Errorf("JSON: %s", doc)
	}
}

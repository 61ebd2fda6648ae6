package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// The analysis of samples made by hand, 10 s apart, threshold 100.

func lagAt(token, owner string, checkpoint, lag int64) azure.CosmosDBLeaseLag {
	return azure.CosmosDBLeaseLag{CosmosDBLease: azure.CosmosDBLease{Token: token, Owner: owner, Continuation: strconv.Quote(strconv.FormatInt(checkpoint, 10))}, Lag: lag}
}

func handSamples(polls ...[]azure.CosmosDBLeaseLag) []tuneSample {
	start := time.Unix(1_700_000_000, 0)
	var out []tuneSample
	for i, leases := range polls {
		e := scalers.AzureCosmosDBEstimate{CosmosDBLagEstimate: azure.CosmosDBLagEstimate{Leases: leases}, Threshold: 100}
		e.CosmosDBLagSummary = e.Summarize(e.Threshold, e.Activation)
		out = append(out, tuneSample{at: start.Add(time.Duration(i) * 10 * time.Second), estimate: e})
	}
	return out
}

var handInput = tuneInput{budget: 30 * time.Second, startup: 10 * time.Second, current: -1,
	hpa: autoscaler{Min: 1, Max: 10, MetricType: v2.AverageValueMetricType, Cooldown: defaultCooldown, ScaleDownWindow: defaultScaleDownWindow}}

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
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 100, 500), lagAt("1", "b", 100, 500), lagAt("2", "c", 0, 500)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 250, 400), lagAt("1", "b", 200, 400), lagAt("2", "a", 100, 400)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 400, 300), lagAt("1", "b", 300, 300), lagAt("2", "a", 200, 300)},
	), handInput)
	if len(a.Reasons) > 0 || a.Recommendation == nil {
		t.Fatalf("reasons %q", a.Reasons)
	}
	if o := ownerByName(t, a, "a"); o.State != ownerMoved || o.Counted {
		t.Errorf("owner a: %s, counted %v; want moved, not counted", o.State, o.Counted)
	}
	if o := ownerByName(t, a, "b"); o.State != ownerBusy || !o.Counted || o.DrainRate != 10 {
		t.Errorf("owner b: %s, counted %v, %.2f/s; want busy, counted, 10/s", o.State, o.Counted, o.DrainRate)
	}
	if a.Total.Drained != 300+200+200 || a.Total.DrainRate != 35 {
		t.Errorf("total drained %d at %.2f/s; want 700 at 35/s", a.Total.Drained, a.Total.DrainRate)
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
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 100, 50), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 70)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 150, 0), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 90)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 160, 10), lagAt("1", "b", 100, 0), lagAt("2", "c", 100, 120)},
	), tuneInput{budget: 30 * time.Second, current: 5, hpa: handInput.hpa})
	if len(a.Reasons) > 0 || a.Recommendation == nil {
		t.Fatalf("reasons %q", a.Reasons)
	}
	for name, want := range map[string]string{"a": ownerCaughtUp, "b": ownerIdle, "c": ownerStuck} {
		if o := ownerByName(t, a, name); o.State != want || o.Counted != (name == "a") {
			t.Errorf("owner %s: %s (counted %v), want %s", name, o.State, o.Counted, want)
		}
	}
	r := a.Recommendation
	if !r.LowerBound || r.PerReplicaRate != 3 || r.Threshold != 90 || r.KeepUpReplicas != 2 || r.CurrentReplicas != 5 || r.CurrentReplicasFrom != "flag" {
		t.Errorf("recommendation %+v; want a lower bound of 3/s, 90, from 5 replicas (the flag)", r)
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "threshold is a lower bound") {
		t.Errorf("notes %q", a.Notes)
	}
}

func TestTuneAnalysisRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		polls [][]azure.CosmosDBLeaseLag
		want  string
	}{
		{"two samples", [][]azure.CosmosDBLeaseLag{
			{lagAt("0", "a", 100, 50)}, {lagAt("0", "a", 200, 50)},
		}, "too few samples: 2, at least 3 are needed"},
		{"checkpoint moved back", [][]azure.CosmosDBLeaseLag{
			{lagAt("0", "a", 100, 50), lagAt("1", "b", 100, 50)}, {lagAt("0", "a", 200, 50), lagAt("1", "b", 200, 50)}, {lagAt("0", "a", 300, 50), lagAt("1", "b", 0, 50)},
		}, "lease 1's checkpoint moved back (100 → 0)"},
		{"only moved leases drained", [][]azure.CosmosDBLeaseLag{
			{lagAt("0", "a", 100, 50)}, {lagAt("0", "b", 200, 50)}, {lagAt("0", "b", 300, 50)},
		}, "no replica's drain can be attributed"},
		{"idle", [][]azure.CosmosDBLeaseLag{
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
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 100, 50)}, []azure.CosmosDBLeaseLag{lagAt("0", "a", 100, 50)}, []azure.CosmosDBLeaseLag{lagAt("0", "a", 101, 50)},
	), tuneInput{budget: 2 * time.Second, startup: time.Second, current: -1, hpa: handInput.hpa})
	if r := a.Recommendation; r == nil || r.Threshold != 1 || !strings.HasSuffix(r.Arithmetic, "= floor(0.05 × 1) = 0, raised to 1, the least threshold") {
		t.Errorf("recommendation %+v, reasons %q", r, a.Reasons)
	}
}

// When the replicas the HPA would choose drain less than the writes add,
// a note says how many keep up.
func TestTuneAnalysisKeepUpNote(t *testing.T) {
	a := analyzeTune(handSamples(
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 0, 1000), lagAt("1", "b", 0, 1000)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 100, 1300), lagAt("1", "b", 100, 1300)},
		[]azure.CosmosDBLeaseLag{lagAt("0", "a", 200, 1600), lagAt("1", "b", 200, 1600)},
	), handInput)
	r := a.Recommendation
	if r == nil || r.Threshold != 200 || r.KeepUpReplicas != 8 || r.HPA.Replicas.Desired != 2 || a.Total.WriteRate != 80 {
		t.Fatalf("recommendation %+v, total %+v, reasons %q", r, a.Total, a.Reasons)
	}
	for _, want := range []string{
		"the writes (80.00/s) need 8 replica(s) at 10.00/s each to keep up; with the 2 the HPA would choose for the last sample's lag, the lag grows",
		"at the current replica count the last sample's lag (3200) does not drain (the writes keep up with the drain), beyond the 30s budget; " +
			"the scaler asks for no more replicas than partitions with lag (2)",
	} {
		if !strings.Contains(strings.Join(a.Notes, "\n"), want) {
			t.Errorf("notes %q; want %q", a.Notes, want)
		}
	}
}

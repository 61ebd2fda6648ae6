package tune

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// scenarioWritesAtTheDrain: replica a holds leases 0 and 1 and drains
// 300 LSNs of each in 20 s (30/s in all), busy (1000 pending or more);
// lease 0 takes 300 writes, lease 1 writes1: the writes are 30/s, or
// 0.05/s either side of it.
func scenarioWritesAtTheDrain(writes1 int64) []tuneSample {
	latest0, latest1 := []int64{1000, 1150, 1300}, []int64{1000, 1000 + writes1/2, 1000 + writes1}
	var polls [][]azure.CosmosDBInspectedLease
	for i, checkpoint := range []int64{0, 150, 300} {
		polls = append(polls, []azure.CosmosDBInspectedLease{
			lagAt("0", "a", checkpoint, latest0[i]-checkpoint), lagAt("1", "a", checkpoint, latest1[i]-checkpoint),
		})
	}
	return handSamples(polls...)
}

// Replicas that drain exactly as fast as the writes add never drain a
// backlog (tune's own rule), so the keep-up count leaves headroom: writes
// at one replica's drain, or a rounding step either side of it, need 2
// replicas, not 1 or 2 depending on the last digit.
func TestTuneKeepUpCountLeavesHeadroomAtTheDrain(t *testing.T) {
	for _, c := range []struct {
		writes1 int64
		writes  float64
	}{{299, 29.95}, {300, 30}, {301, 30.05}} {
		a := analyzeTune(scenarioWritesAtTheDrain(c.writes1), handInput)
		r := a.Recommendation
		if r == nil || r.LowerBound || r.PerReplicaRate != 30 || rate(a.Total.WriteRate) != c.writes {
			t.Fatalf("writes %.2f/s: recommendation %+v, total %+v, reasons %q; want a busy replica at 30/s", c.writes, r, a.Total, a.Reasons)
		}
		if r.KeepUpReplicas == nil || *r.KeepUpReplicas != 2 || r.KeepUpReplicasUpperBound || r.CannotKeepUp != "" {
			t.Errorf("writes %.2f/s at a drain of 30/s: keepUpReplicas %v (upper bound %v, cannot %q); want 2", c.writes, r.KeepUpReplicas, r.KeepUpReplicasUpperBound, r.CannotKeepUp)
		}
	}
}

// One partition taking as many writes as a replica drains: its backlog
// never drains at any replica count, and tune says so.
func TestTuneKeepUpPartitionWritesEqualTheDrain(t *testing.T) {
	var polls [][]azure.CosmosDBInspectedLease
	for i := range int64(3) {
		polls = append(polls, []azure.CosmosDBInspectedLease{lagAt("0", "a", 300*i, 1000), lagAt("1", "b", 300*i, 1000)})
	}
	a := analyzeTune(handSamples(polls...), handInput)
	r := a.Recommendation
	want := "no replica count keeps up: lease 0's partition takes 30.00 writes/s, as many as a replica drains (30.00/s), and one replica drains a partition at a time"
	if r == nil || r.KeepUpReplicas != nil || r.CannotKeepUp != want {
		t.Fatalf("recommendation %+v, reasons %q; want cannotKeepUp %q", r, a.Reasons, want)
	}
}

// Busy replicas of different speeds (30, 25 and 35 LSN/s): the threshold
// is from their mean, and tune says that the slowest takes 24 s to drain
// a threshold's worth within the 20 s the budget leaves, and which
// threshold fits the slowest.
func TestTuneSaysWhenTheSlowestReplicaMissesTheBudget(t *testing.T) {
	var polls [][]azure.CosmosDBInspectedLease
	for i := range int64(3) {
		polls = append(polls, []azure.CosmosDBInspectedLease{
			lagAt("0", "a", 300*i, 2000), lagAt("1", "b", 250*i, 2000), lagAt("2", "c", 350*i, 2000),
		})
	}
	samples := handSamples(polls...)
	a := analyzeTune(samples, handInput) // budget 30 s, startup 10 s
	r := a.Recommendation
	if r == nil || r.LowerBound || r.PerReplicaRate != 30 || r.Threshold != 600 {
		t.Fatalf("recommendation %+v, reasons %q; want the mean 30/s and 600", r, a.Reasons)
	}
	if s := r.Slowest; s == nil || s.Owner != "b" || s.Rate != 25 || s.Seconds != 24 || s.Threshold != 500 || !s.Beyond {
		t.Fatalf("slowest %+v; want b at 25/s, 24 s for 600, 500 fits", s)
	}
	want := `the counted replicas drain at different rates: the threshold is from their mean, 30.00/s; the slowest, b at 25.00/s, takes 24s to drain a threshold's worth (600), ` +
		`beyond the 20s the budget leaves after the startup; changeFeedLagThreshold "500" (floor(25.00 × 20)) meets the budget on the slowest too`
	if !strings.Contains(strings.Join(a.Notes, "\n"), want) || !strings.Contains(tuneText(t, samples, a), "  - "+want) {
		t.Errorf("notes %q; want %q", a.Notes, want)
	}
	if doc := reportJSON(t, samples, a); !strings.Contains(doc, `"slowestReplica":{"owner":"b","drainRate":25,"secondsForThreshold":24,"changeFeedLagThreshold":500,"beyondBudget":true}`) {
		t.Errorf("JSON: %s", doc)
	}

	// Replicas of equal rates: no slowest is named.
	var equal [][]azure.CosmosDBInspectedLease
	for i := range int64(3) {
		equal = append(equal, []azure.CosmosDBInspectedLease{lagAt("0", "a", 300*i, 2000), lagAt("1", "b", 300*i, 2000)})
	}
	a = analyzeTune(handSamples(equal...), handInput)
	if r := a.Recommendation; r == nil || r.Slowest != nil || strings.Contains(strings.Join(a.Notes, "\n"), "different rates") {
		t.Errorf("equal rates: slowest %+v, notes %q; want none", r.Slowest, a.Notes)
	}
}

// From a lower bound (replicas that did all they were given) the keep-up
// count is the most that are needed, and the JSON document says so.
func TestTuneKeepUpFromALowerBoundIsAnUpperBound(t *testing.T) {
	samples := scenarioOneWrittenPartition()
	a := analyzeTune(samples, handInput)
	r := a.Recommendation
	if r == nil || !r.LowerBound || r.KeepUpReplicas == nil || !r.KeepUpReplicasUpperBound {
		t.Fatalf("recommendation %+v; want a lower bound and keepUpReplicas marked an upper bound", r)
	}
	if doc := reportJSON(t, samples, a); !strings.Contains(doc, `"keepUpReplicas":1,"keepUpReplicasUpperBound":true`) {
		t.Errorf("JSON: %s", doc)
	}
	a = analyzeTune(scenarioWritesAtTheDrain(300), handInput)
	if r := a.Recommendation; r == nil || r.LowerBound || r.KeepUpReplicasUpperBound {
		t.Errorf("busy replicas: recommendation %+v; want keepUpReplicas not marked an upper bound", r)
	}
}

package emulator

import (
	"net/http"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// A 410/1002 that the lease refresh resolves: one complete lease refresh,
// one retry, and the metric is what it would have been without the split.
func TestSplitRecoveredAfterLeaseRefresh(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	env.writeToRange(t, "0", 30)
	env.writeToRange(t, "1", 20)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	poll(t, s) // warm caches

	env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "1", Status: http.StatusGone, SubStatus: 1002, Times: 1})
	env.server.Handler.ResetRequests()
	if metric, active := poll(t, s); metric != 50 || !active {
		t.Fatalf("metric %d active %v, want 50 true", metric, active)
	}
	if q := env.server.Handler.Count(cosmostest.KindQuery); q != 2 {
		t.Fatalf("%d lease queries, want 2 (the poll and one refresh)", q)
	}
}

// A real split the processor has not handled, with no other lag: the
// scaler wakes exactly one replica with activation + 1.
func TestStaleParentAloneWakesOneReplica(t *testing.T) {
	for _, format := range []leaseFormat{dotNetV0, dotNetV1, javaV1} {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnv(t, 2, format)
			if _, _, err := env.monitored.Split(env.monitored.Ranges()[0].ID); err != nil {
				t.Fatal(err)
			}
			s := newScaler(t, scalerConfig(env.metadata("activationChangeFeedLagThreshold", "7"), keyAuth(env.server)))
			env.server.Handler.ResetRequests()
			metric, active := poll(t, s)
			if metric != 8 || !active {
				t.Fatalf("metric %d active %v, want activation+1 = 8 and active", metric, active)
			}
			if q := env.server.Handler.Count(cosmostest.KindQuery); q != 2 {
				t.Fatalf("%d lease queries, want 2 (one refresh only)", q)
			}
		})
	}
}

// A stale parent next to real lag does not add an active partition.
func TestStaleParentWithOtherLagAddsNoPartition(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	env.writeToRange(t, "1", 500)
	if _, _, err := env.monitored.Split("0"); err != nil {
		t.Fatal(err)
	}
	s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "100"), keyAuth(env.server)))
	if metric, active := poll(t, s); metric != 100 || !active {
		t.Fatalf("metric %d active %v, want 100 (one active partition) true", metric, active)
	}
}

// Other lag at or below activation is raised just above it.
func TestStaleParentRaisesSmallLagAboveActivation(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	env.writeToRange(t, "1", 3)
	if _, _, err := env.monitored.Split("0"); err != nil {
		t.Fatal(err)
	}
	s := newScaler(t, scalerConfig(env.metadata("activationChangeFeedLagThreshold", "10"), keyAuth(env.server)))
	if metric, active := poll(t, s); metric != 11 || !active {
		t.Fatalf("metric %d active %v, want 11 true", metric, active)
	}
}

// Once the processor replaced the parent with child leases, lag is read
// from the children again: each child continues the parent's LSNs.
func TestChildLeasesAfterSplit(t *testing.T) {
	for _, format := range leaseFormats {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnv(t, 1, format)
			env.writeToRange(t, "0", 10)
			if err := env.processor.CatchUp(env.tokens[0]); err != nil {
				t.Fatal(err)
			}
			if _, _, err := env.monitored.Split("0"); err != nil {
				t.Fatal(err)
			}
			if _, err := env.processor.ReplaceAfterSplit(env.tokens[0]); err != nil {
				t.Fatal(err)
			}
			for _, r := range env.monitored.Ranges() {
				env.writeToRange(t, r.ID, 5)
			}
			s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000"), keyAuth(env.server)))
			if metric, _ := poll(t, s); metric != 10 {
				t.Fatalf("metric %d, want 10 (5 new items in each child)", metric)
			}
		})
	}
}

// EPK leases narrower than their physical range (after a merge) are read
// with the EPK sub-range headers, so a caught-up lease stays at zero even
// though its merged range holds newer LSNs from the other side.
func TestEPKLeasesInsideMergedRange(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV1)
	ranges := env.monitored.Ranges()
	env.writeToRange(t, ranges[0].ID, 4) // LSNs 1..4
	env.writeToRange(t, ranges[1].ID, 9) // LSNs 1..9
	if err := env.processor.CatchUp(env.tokens[0]); err != nil {
		t.Fatal(err)
	}
	if err := env.processor.Checkpoint(env.tokens[1], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := env.monitored.Merge(ranges[0].ID, ranges[1].ID); err != nil {
		t.Fatal(err)
	}
	s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000"), keyAuth(env.server)))
	// Lease 0 is caught up within its sub-range; lease 1 is 9 - 1 + 1 behind.
	if metric, _ := poll(t, s); metric != 9 {
		t.Fatalf("metric %d, want 9", metric)
	}
	for _, r := range env.server.Handler.Requests() {
		if r.Kind == cosmostest.KindChangeFeed && (r.Header.Get("x-ms-read-key-type") != "EffectivePartitionKeyRange" || r.Header.Get("x-ms-end-epk") == "") {
			t.Fatalf("change feed read without EPK headers for a sub-range lease: %v", r.Header)
		}
	}
}

// Only 410 with substatus 1002 is a split; other 410s fail the poll.
func TestOther410IsAnError(t *testing.T) {
	for _, sub := range []int{1007, 1008, 0} {
		env := newCosmosEnv(t, 1, dotNetV0)
		env.writeToRange(t, "0", 3)
		env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, Status: http.StatusGone, SubStatus: sub})
		s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
		err := pollError(t, s)
		assertMentions(t, err, "410", "lease 0")
		if env.server.Handler.Count(cosmostest.KindQuery) != 1 {
			t.Fatalf("substatus %d triggered a lease refresh", sub)
		}
	}
}

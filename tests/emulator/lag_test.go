package emulator

import (
	"fmt"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// Each writer's lease format yields the same estimate for the same backlog.
func TestLagForEachLeaseFormat(t *testing.T) {
	for _, format := range leaseFormats {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnv(t, 3, format)
			env.writeToRange(t, "0", 40)
			env.writeToRange(t, "2", 250)
			s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))

			metric, active := poll(t, s)
			// total 290, two active partitions, threshold 100: min(290, 200).
			if metric != 200 || !active {
				t.Fatalf("metric %d active %v, want 200 true", metric, active)
			}
		})
	}
}

// No pending items (304 from every lease's checkpoint) is zero and inactive.
func TestNoLagIsZeroAndInactive(t *testing.T) {
	env := newCosmosEnv(t, 4, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	metric, active := poll(t, s)
	if metric != 0 || active {
		t.Fatalf("metric %d active %v, want 0 false", metric, active)
	}
}

// Lag is sessionLSN - firstItemLSN + 1: after a checkpoint part-way, only
// what follows it counts, whatever the session token's form.
func TestLagFromCheckpointForEachSessionTokenForm(t *testing.T) {
	forms := map[string]cosmostest.SessionTokenForm{
		"simple": cosmostest.SessionTokenSimple, "versioned": cosmostest.SessionTokenVersioned, "vector": cosmostest.SessionTokenVector,
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			env := newCosmosEnv(t, 1, dotNetV0)
			env.server.Account.SetSessionTokenForm(form)
			start := env.monitored.LSN("0")
			env.writeToRange(t, "0", 30)
			if err := env.processor.Checkpoint("0", start+12); err != nil {
				t.Fatal(err)
			}
			s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000"), keyAuth(env.server)))
			if metric, _ := poll(t, s); metric != 18 {
				t.Fatalf("metric %d, want 18 (30 written, 12 checkpointed)", metric)
			}
		})
	}
}

// A lease that caught up reads 304 and contributes nothing.
func TestCaughtUpLeaseIsZero(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	env.writeToRange(t, "0", 50)
	env.writeToRange(t, "1", 50)
	if err := env.processor.CatchUp("1"); err != nil {
		t.Fatal(err)
	}
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	if metric, active := poll(t, s); metric != 50 || !active {
		t.Fatalf("metric %d active %v, want 50 true", metric, active)
	}
}

// The metric is min(totalLag, activePartitions * threshold): a single hot
// partition never asks for more than one replica's worth.
func TestSingleHotPartitionIsCappedAtOneThreshold(t *testing.T) {
	env := newCosmosEnv(t, 4, dotNetV0)
	env.writeToRange(t, "3", 5000)
	s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "100"), keyAuth(env.server)))
	if metric, active := poll(t, s); metric != 100 || !active {
		t.Fatalf("metric %d active %v, want 100 true", metric, active)
	}
}

// Activation compares the (uncapped) total with activationChangeFeedLagThreshold.
func TestActivationThreshold(t *testing.T) {
	for _, tc := range []struct {
		written    int
		activation string
		active     bool
	}{{5, "5", false}, {6, "5", true}, {1, "0", true}} {
		t.Run(fmt.Sprintf("%d-over-%s", tc.written, tc.activation), func(t *testing.T) {
			env := newCosmosEnv(t, 1, dotNetV0)
			env.writeToRange(t, "0", tc.written)
			s := newScaler(t, scalerConfig(env.metadata("activationChangeFeedLagThreshold", tc.activation), keyAuth(env.server)))
			metric, active := poll(t, s)
			if metric != int64(tc.written) || active != tc.active {
				t.Fatalf("metric %d active %v, want %d %v", metric, active, tc.written, tc.active)
			}
		})
	}
}

// More leases than one query page: every page is read and counted.
func TestReadsEveryLeasePage(t *testing.T) {
	env := newCosmosEnv(t, 120, dotNetV0)
	for i := 0; i < 1100; i++ { // other documents sharing the prefix push leases past the first page
		if _, err := env.leases.Upsert(map[string]any{"id": fmt.Sprintf("orders-processor-archive-%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range env.monitored.Ranges() {
		env.writeToRange(t, r.ID, 1)
	}
	env.server.Handler.ResetRequests()
	s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1"), keyAuth(env.server)))
	if metric, _ := poll(t, s); metric != 120 {
		t.Fatalf("metric %d, want 120 (one item in each of 120 ranges)", metric)
	}
	if pages := env.server.Handler.Count(cosmostest.KindQuery); pages < 2 {
		t.Fatalf("lease query used %d page(s), want at least 2", pages)
	}
	if reads := env.server.Handler.Count(cosmostest.KindChangeFeed); reads != 120 {
		t.Fatalf("%d change feed reads, want exactly one per lease (120)", reads)
	}
}

// Another processor whose name starts with ours, the same processor name on
// another monitored container and on another account, and bookkeeping
// documents are never counted.
func TestCountsOnlyThisProcessorsLeases(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	env.writeToRange(t, "0", 7)

	db := env.monitored.Database()
	other := db.CreateContainer("payments", "/id", 1)
	if err := other.WriteItemsToRange("0", 500); err != nil {
		t.Fatal(err)
	}
	strangers := []*leasetest.Writer{
		leasetest.NewWriter("orders-processor-v2", env.monitored, env.leases, dotNetV0),
		leasetest.NewWriter("orders-processor", other, env.leases, dotNetV0),
		leasetest.NewWriter("orders-processor", other, env.leases, javaV0),
	}
	otherAccount := leasetest.NewWriter("orders-processor", env.monitored, env.leases, dotNetV1)
	otherAccount.AccountHost = "someoneelse.documents.azure.com"
	strangers = append(strangers, otherAccount)
	for _, p := range strangers {
		tokens, err := p.CreateLeases(true)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range tokens {
			if err := p.Checkpoint(tok, 0); err != nil { // everything pending for them
				t.Fatal(err)
			}
		}
	}
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	if metric, _ := poll(t, s); metric != 7 {
		t.Fatalf("metric %d, want 7 (only this processor's lease on orders)", metric)
	}
}

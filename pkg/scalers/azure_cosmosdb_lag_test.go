package scalers

import (
	"fmt"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
)

var cosmosDBLeaseFormats = []lease.Format{
	lease.DotNetV0, lease.DotNetV1, lease.JavaV0, lease.JavaV1, lease.DotNetV2Library,
}

// Each writer's lease format yields the same estimate for the same backlog.
func TestCosmosDBLagForEachLeaseFormat(t *testing.T) {
	for _, format := range cosmosDBLeaseFormats {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnv(t, 3, format)
			env.writeToRange(t, "0", 40)
			env.writeToRange(t, "2", 250)
			s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))

			metric, active := pollCosmosDB(t, s)
			// total 290, two active partitions, threshold 100: min(290, 200).
			if metric != 200 || !active {
				t.Fatalf("metric %d active %v, want 200 true", metric, active)
			}
		})
	}
}

// No pending items (304 from every lease's checkpoint) is zero and inactive.
func TestCosmosDBNoLagIsZeroAndInactive(t *testing.T) {
	env := newCosmosEnv(t, 4, lease.DotNetV0)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))
	metric, active := pollCosmosDB(t, s)
	if metric != 0 || active {
		t.Fatalf("metric %d active %v, want 0 false", metric, active)
	}
}

// Lag is sessionLSN - firstItemLSN + 1: after a checkpoint part-way, only
// what follows it counts, whatever the session token's form.
func TestCosmosDBLagFromCheckpointForEachSessionTokenForm(t *testing.T) {
	forms := map[string]cosmostest.SessionTokenForm{
		"simple": cosmostest.SessionTokenSimple, "versioned": cosmostest.SessionTokenVersioned, "vector": cosmostest.SessionTokenVector,
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			env := newCosmosEnv(t, 1, lease.DotNetV0)
			env.server.SetSessionTokenForm(form)
			start := env.monitored.LSN("0")
			env.writeToRange(t, "0", 30)
			if err := env.processor.Checkpoint("0", start+12); err != nil {
				t.Fatal(err)
			}
			s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata("changeFeedLagThreshold", "1000"), cosmosDBKeyAuth(env.server)))
			if metric, _ := pollCosmosDB(t, s); metric != 18 {
				t.Fatalf("metric %d, want 18 (30 written, 12 checkpointed)", metric)
			}
		})
	}
}

// A lease that caught up reads 304 and contributes nothing.
func TestCosmosDBCaughtUpLeaseIsZero(t *testing.T) {
	env := newCosmosEnv(t, 2, lease.DotNetV0)
	env.writeToRange(t, "0", 50)
	env.writeToRange(t, "1", 50)
	if err := env.processor.CatchUp("1"); err != nil {
		t.Fatal(err)
	}
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))
	if metric, active := pollCosmosDB(t, s); metric != 50 || !active {
		t.Fatalf("metric %d active %v, want 50 true", metric, active)
	}
}

// The metric is min(totalLag, activePartitions * threshold): a single hot
// partition never asks for more than one replica's worth.
func TestCosmosDBSingleHotPartitionIsCappedAtOneThreshold(t *testing.T) {
	env := newCosmosEnv(t, 4, lease.DotNetV0)
	env.writeToRange(t, "3", 5000)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata("changeFeedLagThreshold", "100"), cosmosDBKeyAuth(env.server)))
	if metric, active := pollCosmosDB(t, s); metric != 100 || !active {
		t.Fatalf("metric %d active %v, want 100 true", metric, active)
	}
}

// Activation compares the (uncapped) total with activationChangeFeedLagThreshold.
func TestCosmosDBActivationThreshold(t *testing.T) {
	for _, tc := range []struct {
		written    int
		activation string
		active     bool
	}{{5, "5", false}, {6, "5", true}, {1, "0", true}} {
		t.Run(fmt.Sprintf("%d-over-%s", tc.written, tc.activation), func(t *testing.T) {
			env := newCosmosEnv(t, 1, lease.DotNetV0)
			env.writeToRange(t, "0", tc.written)
			s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata("activationChangeFeedLagThreshold", tc.activation), cosmosDBKeyAuth(env.server)))
			metric, active := pollCosmosDB(t, s)
			if metric != int64(tc.written) || active != tc.active {
				t.Fatalf("metric %d active %v, want %d %v", metric, active, tc.written, tc.active)
			}
		})
	}
}

// More leases than one query page: every page is read and counted.
func TestCosmosDBReadsEveryLeasePage(t *testing.T) {
	env := newCosmosEnv(t, 120, lease.DotNetV0)
	for i := 0; i < 1100; i++ { // other documents sharing the prefix push leases past the first page
		if _, err := env.leases.Upsert(map[string]any{"id": fmt.Sprintf("orders-processor-archive-%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range env.monitored.Ranges() {
		env.writeToRange(t, r.ID, 1)
	}
	env.server.ResetRequests()
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata("changeFeedLagThreshold", "1"), cosmosDBKeyAuth(env.server)))
	if metric, _ := pollCosmosDB(t, s); metric != 120 {
		t.Fatalf("metric %d, want 120 (one item in each of 120 ranges)", metric)
	}
	if pages := env.server.Count(cosmostest.KindQuery); pages < 2 {
		t.Fatalf("lease query used %d page(s), want at least 2", pages)
	}
	if reads := env.server.Count(cosmostest.KindChangeFeed); reads != 120 {
		t.Fatalf("%d change feed reads, want exactly one per lease (120)", reads)
	}
}

// Another processor whose name starts with ours, the same processor name on
// another monitored container and on another account, and bookkeeping
// documents are never counted.
func TestCosmosDBCountsOnlyThisProcessorsLeases(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
	env.writeToRange(t, "0", 7)

	db := env.monitored.Database()
	other := db.CreateContainer("payments", "/id", 1)
	if err := other.WriteItemsToRange("0", 500); err != nil {
		t.Fatal(err)
	}
	strangers := []*cosmostest.LeaseWriter{
		cosmostest.NewLeaseWriter("orders-processor-v2", env.monitored, env.leases, cosmostest.DotNetV0),
		cosmostest.NewLeaseWriter("orders-processor", other, env.leases, cosmostest.DotNetV0),
		cosmostest.NewLeaseWriter("orders-processor", other, env.leases, cosmostest.JavaV0),
	}
	otherAccount := cosmostest.NewLeaseWriter("orders-processor", env.monitored, env.leases, cosmostest.DotNetV1)
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
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))
	if metric, _ := pollCosmosDB(t, s); metric != 7 {
		t.Fatalf("metric %d, want 7 (only this processor's lease on orders)", metric)
	}
}

package emulator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// The scaler across partition merges, on an account with partition merge
// enabled (cosmostest.WithPartitionMerge): the server refuses every request
// that does not declare the PartitionMerge capability, so each successful
// poll below also shows the scaler declares it on every request it sent.

// newMergeEnv is newCosmosEnv on a merge-enabled account.
func newMergeEnv(t *testing.T, ranges int, format leaseFormat) *cosmosEnv {
	t.Helper()
	srv := cosmostest.NewServer(cosmostest.WithPartitionMerge())
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("appdb")
	env := &cosmosEnv{
		server:    srv,
		monitored: db.CreateContainer("orders", "/customerId", ranges),
		leases:    db.CreateContainer("leases", "/id", 1),
	}
	env.processor = leasetest.NewWriter("orders-processor", env.monitored, env.leases, format)
	tokens, err := env.processor.CreateLeases(true)
	if err != nil {
		t.Fatalf("create leases: %v", err)
	}
	env.tokens = tokens
	return env
}

// assertAllDeclareMerge fails unless every request the server saw declared
// PartitionMerge and none was refused with 400.
func assertAllDeclareMerge(t *testing.T, srv *cosmostest.Server) {
	t.Helper()
	for _, r := range srv.Handler.Requests() {
		if r.Header.Get("x-ms-cosmos-sdk-supportedcapabilities") != "1" || r.Status == 400 {
			t.Fatalf("request %s %s (%s) answered %d with capabilities %q", r.Method, r.Path, r.Kind, r.Status, r.Header.Get("x-ms-cosmos-sdk-supportedcapabilities"))
		}
	}
}

// leaseLags is "token=lag" of every lease of the last estimate, in order.
func leaseLags(e scalers.AzureCosmosDBEstimate) string {
	parts := make([]string, len(e.Leases))
	for i, l := range e.Leases {
		parts[i] = fmt.Sprintf("%s=%d", l.Token, l.Lag)
		if l.StaleParent {
			parts[i] += "(stale)"
		}
	}
	return strings.Join(parts, " ")
}

func lastEstimate(t *testing.T, seen func() []observedEstimate) scalers.AzureCosmosDBEstimate {
	t.Helper()
	all := seen()
	if len(all) == 0 {
		t.Fatal("no estimate observed")
	}
	e := all[len(all)-1]
	if e.Err != nil {
		t.Fatalf("estimate error: %v", e.Err)
	}
	return e.AzureCosmosDBEstimate
}

// replaceMergedV0Lease does what the .NET v3 processor does when a
// range-id (v0) lease's range was merged away: it writes an EPK (v1) lease
// over the old range's bounds (FeedRange EPK, LeaseToken "min-max") with
// the old continuation, and deletes the v0 lease. It returns the new token.
func replaceMergedV0Lease(t *testing.T, env *cosmosEnv, token string) string {
	t.Helper()
	old, ok := env.processor.Lease(token)
	if !ok {
		t.Fatalf("no lease %q", token)
	}
	rng := old["FeedRange"].(map[string]any)["Range"].(map[string]any)
	min, max := rng["min"].(string), rng["max"].(string)
	newToken := min + "-" + max
	doc := map[string]any{}
	for k, v := range old {
		if !strings.HasPrefix(k, "_") {
			doc[k] = v
		}
	}
	doc["id"] = env.processor.Prefix() + ".." + newToken
	doc["version"] = 1
	doc["LeaseToken"] = newToken
	if _, err := env.leases.Upsert(doc); err != nil {
		t.Fatal(err)
	}
	if !env.leases.Delete(old["id"].(string)) {
		t.Fatalf("delete lease %v", old["id"])
	}
	return newToken
}

// EPK (v1) leases over the two halves of a merged range read their own
// sub-ranges (EPK headers, the merged range's id) and count as two active
// partitions: the metric is capped at 2 × threshold.
func TestMergeEPKLeasesOverHalvesAreTwoActivePartitions(t *testing.T) {
	env := newMergeEnv(t, 2, dotNetV1)
	ranges := env.monitored.Ranges()
	env.writeToRange(t, ranges[0].ID, 4) // LSNs 1..4
	env.writeToRange(t, ranges[1].ID, 6) // LSNs 1..6
	merged, err := env.monitored.Merge(ranges[0].ID, ranges[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	s, seen := newObservedScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "3"), keyAuth(env.server)))
	env.server.Handler.ResetRequests()
	metric, active := poll(t, s)
	e := lastEstimate(t, seen)
	// Each lease is checkpointed at LSN 0; its first pending item is LSN 1
	// and the merged range's session LSN is max(4, 6) = 6, so each lease's
	// distance is 6 (it spans the sibling's share, as the SDKs' estimators do).
	if got := leaseLags(e); got != env.tokens[0]+"=6 "+env.tokens[1]+"=6" {
		t.Fatalf("lease lags %s", got)
	}
	if e.ActivePartitions != 2 || e.TotalLag != 12 || metric != 6 || !active {
		t.Fatalf("active partitions %d, total %d, metric %d, active %v; want 2, 12, 6 (2 × 3), true", e.ActivePartitions, e.TotalLag, metric, active)
	}
	if e.StaleParents != 0 || e.SplitRetried {
		t.Fatalf("stale parents %d, split retried %v after a merge the EPK leases already fit", e.StaleParents, e.SplitRetried)
	}
	feeds := 0
	for _, r := range env.server.Handler.Requests() {
		if r.Kind != cosmostest.KindChangeFeed {
			continue
		}
		feeds++
		if r.RangeID != merged.ID || r.Header.Get("x-ms-read-key-type") != "EffectivePartitionKeyRange" || r.Header.Get("x-ms-end-epk") == "" {
			t.Fatalf("change feed read of range %q with headers %v, want range %s restricted to the lease's EPK range", r.RangeID, r.Header, merged.ID)
		}
	}
	if feeds != 2 {
		t.Fatalf("%d change feed reads, want 2", feeds)
	}
	if q := env.server.Handler.Count(cosmostest.KindQuery); q != 1 {
		t.Fatalf("%d lease queries, want 1", q)
	}
	assertAllDeclareMerge(t, env.server)
}

// Range-id (v0) leases still naming merged-away ranges follow the split
// rule: one lease refresh, one retry, then the stale-parent signal
// (activation + 1, one active partition) — alone, or without an added
// partition next to other lag.
func TestMergeStaleV0LeasesFollowTheSplitRule(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		env := newMergeEnv(t, 2, dotNetV0)
		env.writeToRange(t, "0", 5)
		if _, err := env.monitored.Merge("0", "1"); err != nil {
			t.Fatal(err)
		}
		s, seen := newObservedScaler(t, scalerConfig(env.metadata("activationChangeFeedLagThreshold", "7"), keyAuth(env.server)))
		env.server.Handler.ResetRequests()
		metric, active := poll(t, s)
		e := lastEstimate(t, seen)
		if metric != 8 || !active || e.ActivePartitions != 1 || e.StaleParents != 2 || !e.SplitRetried {
			t.Fatalf("metric %d active %v, partitions %d, stale %d, retried %v; want 8 (activation+1), true, 1, 2, true (%s)",
				metric, active, e.ActivePartitions, e.StaleParents, e.SplitRetried, leaseLags(e))
		}
		if q := env.server.Handler.Count(cosmostest.KindQuery); q != 2 {
			t.Fatalf("%d lease queries, want 2 (the poll and one refresh)", q)
		}
		assertAllDeclareMerge(t, env.server)
	})
	t.Run("with other lag", func(t *testing.T) {
		env := newMergeEnv(t, 3, dotNetV0)
		env.writeToRange(t, "2", 500)
		if _, err := env.monitored.Merge("0", "1"); err != nil {
			t.Fatal(err)
		}
		s, seen := newObservedScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "100"), keyAuth(env.server)))
		metric, active := poll(t, s)
		e := lastEstimate(t, seen)
		if metric != 100 || !active || e.ActivePartitions != 1 || e.TotalLag != 500 || e.StaleParents != 2 {
			t.Fatalf("metric %d active %v, partitions %d, total %d, stale %d; want 100, true, 1, 500, 2 (%s)",
				metric, active, e.ActivePartitions, e.TotalLag, e.StaleParents, leaseLags(e))
		}
		if q := env.server.Handler.Count(cosmostest.KindQuery); q != 2 {
			t.Fatalf("%d lease queries, want 2", q)
		}
	})
}

// Leases written by .NET after a merge — v1, FeedRange EPK over the old
// range, the old continuation — decode as EPK leases and read their part
// of the merged range from their checkpoint.
func TestMergeLeasesWrittenAfterTheMerge(t *testing.T) {
	env := newMergeEnv(t, 2, dotNetV0)
	env.writeToRange(t, "0", 5) // LSNs 1..5
	env.writeToRange(t, "1", 8) // LSNs 1..8
	if err := env.processor.CatchUp("0"); err != nil {
		t.Fatal(err)
	}
	if err := env.processor.Checkpoint("1", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := env.monitored.Merge("0", "1"); err != nil {
		t.Fatal(err)
	}
	left, right := replaceMergedV0Lease(t, env, "0"), replaceMergedV0Lease(t, env, "1")
	s, seen := newObservedScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000"), keyAuth(env.server)))
	env.server.Handler.ResetRequests()
	metric, active := poll(t, s)
	e := lastEstimate(t, seen)
	// Left: caught up at 5 within its half. Right: from LSN 3, merged LSN 8: 6.
	if got := leaseLags(e); got != left+"=0 "+right+"=6" {
		t.Fatalf("lease lags %s, want %s=0 %s=6", got, left, right)
	}
	if metric != 6 || !active || e.StaleParents != 0 || e.SplitRetried {
		t.Fatalf("metric %d active %v stale %d retried %v; want 6 true 0 false", metric, active, e.StaleParents, e.SplitRetried)
	}
	for _, l := range e.Leases {
		if !l.EPK || l.Min+"-"+l.Max != l.Token {
			t.Fatalf("lease %+v, want a dotnet-v1 EPK lease over its token's range", l.CosmosDBLease)
		}
	}
	if q := env.server.Handler.Count(cosmostest.KindQuery); q != 1 {
		t.Fatalf("%d lease queries, want 1", q)
	}
	assertAllDeclareMerge(t, env.server)
}

// A merge between the lease query and the change feed reads (a hook on the
// first read merges the ranges, and for "processor reacted" also replaces
// the leases as .NET does) is recovered by the one lease refresh and retry.
func TestMergeBetweenLeaseQueryAndReads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  leaseFormat
		replace bool // the processor replaces its v0 leases during the poll
		metric  int64
		active  bool // activation is 7
		stale   int
	}{
		// Lease 0 caught up at 5 in its half; lease 1 from LSN 3 to the merged LSN 8.
		{"v0 leases replaced by the processor", dotNetV0, true, 6, false, 0},
		// Both leases stale: activation + 1.
		{"v0 leases not yet replaced", dotNetV0, false, 8, true, 2},
		// Both EPK leases from LSN 1 to the merged LSN 8.
		{"v1 EPK leases", dotNetV1, false, 16, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newMergeEnv(t, 2, tc.format)
			env.writeToRange(t, env.monitored.Ranges()[0].ID, 5)
			env.writeToRange(t, env.monitored.Ranges()[1].ID, 8)
			if tc.format == dotNetV0 {
				if err := env.processor.CatchUp("0"); err != nil {
					t.Fatal(err)
				}
				if err := env.processor.Checkpoint("1", 2); err != nil {
					t.Fatal(err)
				}
			}
			s, seen := newObservedScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000", "activationChangeFeedLagThreshold", "7"), keyAuth(env.server)))
			poll(t, s) // warm the RID and range caches before the merge
			var hookErr error
			env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, Times: 1, Hook: func() {
				// The replacement is written before the merge takes effect,
				// so that no concurrent read sees the merge (and refreshes
				// the leases) while only one lease has been replaced.
				if tc.replace {
					replaceMergedV0Lease(t, env, "0")
					replaceMergedV0Lease(t, env, "1")
				}
				_, hookErr = env.monitored.Merge("0", "1")
			}})
			env.server.Handler.ResetRequests()
			metric, active := poll(t, s)
			if hookErr != nil {
				t.Fatal(hookErr)
			}
			e := lastEstimate(t, seen)
			if metric != tc.metric || active != tc.active || e.StaleParents != tc.stale || !e.SplitRetried {
				t.Fatalf("metric %d active %v stale %d retried %v (%s); want %d %v %d true",
					metric, active, e.StaleParents, e.SplitRetried, leaseLags(e), tc.metric, tc.active, tc.stale)
			}
			if q := env.server.Handler.Count(cosmostest.KindQuery); q != 2 {
				t.Fatalf("%d lease queries, want 2 (the poll and one refresh)", q)
			}
			assertAllDeclareMerge(t, env.server)
		})
	}
}

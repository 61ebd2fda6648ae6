package emulator

import (
	"fmt"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// setLeaseMode rewrites the "Mode" a .NET lease records.
func (e *cosmosEnv) setLeaseMode(t *testing.T, token, mode string) {
	t.Helper()
	doc, ok := e.processor.Lease(token)
	if !ok {
		t.Fatalf("lease %s not found", token)
	}
	doc["Mode"] = mode
	if _, err := e.leases.Upsert(doc); err != nil {
		t.Fatalf("rewrite lease %s: %v", token, err)
	}
}

// A lease recording a mode no known writer writes is read as latest
// version.
func TestUnknownLeaseModeIsReadAsLatestVersion(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	env.setLeaseMode(t, env.tokens[0], "Quantum Feed")
	env.writeToRange(t, env.tokens[0], 3)
	s, estimates := newObservedScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))

	metric, active := poll(t, s)
	if metric != 3 || !active {
		t.Fatalf("metric %d active %v; want 3, true (read as latest version)", metric, active)
	}
	if l := estimates()[0].Leases; len(l) != 1 || l[0].AllVersionsAndDeletes {
		t.Fatalf("leases %+v, want one latest-version lease", l)
	}
}

// writeItem upserts one item of the monitored container.
func (e *cosmosEnv) writeItem(t *testing.T, id, customer string, version int) {
	t.Helper()
	if _, err := e.monitored.Upsert(map[string]any{"id": id, "customerId": customer, "version": version}); err != nil {
		t.Fatalf("write %s: %v", id, err)
	}
}

// catchUp checkpoints every lease of env's processor at its range's LSN.
func (e *cosmosEnv) catchUp(t *testing.T) {
	t.Helper()
	for _, token := range e.tokens {
		if err := e.processor.CatchUp(token); err != nil {
			t.Fatalf("catch up %s: %v", token, err)
		}
	}
}

// An all-versions-and-deletes processor whose only pending changes are
// deletes and TTL expiries has work: it is active, with one unit of lag per
// delete. Read in latest-version mode the partition would look idle.
func TestAllVersionsProcessorWithOnlyDeletesPendingIsActive(t *testing.T) {
	for _, format := range []leaseFormat{dotNetV0, dotNetV1, javaV1} {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnvInMode(t, 1, format, allVersionsAndDeletes)
			for i := range 3 {
				env.writeItem(t, fmt.Sprintf("order-%d", i), fmt.Sprintf("c%d", i), 1)
			}
			env.catchUp(t)
			if !env.monitored.Delete("order-0") || !env.monitored.Delete("order-1") || !env.monitored.ExpireItem("order-2") {
				t.Fatal("delete found no item")
			}
			s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
			metric, active := poll(t, s)
			if metric != 3 || !active {
				t.Fatalf("metric %d active %v; want 3 pending deletes, active", metric, active)
			}
			env.catchUp(t)
			if metric, active := poll(t, s); metric != 0 || active {
				t.Fatalf("after the processor caught up: metric %d active %v; want 0, inactive", metric, active)
			}
		})
	}
}

// Intermediate versions count in all-versions-and-deletes mode: an item
// replaced three times since the checkpoint is three pending changes for
// an AVAD processor, and one (its latest version) for a latest-version one.
func TestAllVersionsCountsIntermediateVersions(t *testing.T) {
	for _, tc := range []struct {
		mode changeFeedMode
		want int64
	}{{allVersionsAndDeletes, 3}, {latestVersion, 1}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			env := newCosmosEnvInMode(t, 1, dotNetV0, tc.mode)
			env.writeItem(t, "order-1", "c1", 0)
			env.catchUp(t)
			for v := 1; v <= 3; v++ {
				env.writeItem(t, "order-1", "c1", v)
			}
			s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
			if metric, active := poll(t, s); metric != tc.want || !active {
				t.Fatalf("metric %d active %v; want %d, active", metric, active, tc.want)
			}
		})
	}
}

// Processors of both modes can share one lease container (and one monitored
// container); each processor's leases are read in its own mode.
func TestMixedModeProcessorsOnOneLeaseContainer(t *testing.T) {
	env := newCosmosEnvInMode(t, 2, dotNetV0, latestVersion)
	avad := leasetest.NewWriter("audit-processor", env.monitored, env.leases, javaV1)
	avad.Mode = allVersionsAndDeletes
	avadTokens, err := avad.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := env.monitored.PartitionKeyForRange(env.tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	env.writeItem(t, "order-1", pk, 1)
	env.catchUp(t)
	for _, token := range avadTokens {
		if err := avad.CatchUp(token); err != nil {
			t.Fatal(err)
		}
	}
	// Pending for both: a replace, then a delete of another item, then a create.
	env.writeItem(t, "order-2", pk, 1)
	env.writeItem(t, "order-1", pk, 2)
	env.monitored.Delete("order-2")
	env.writeItem(t, "order-3", pk, 1)

	latest := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	audit := newScaler(t, scalerConfig(env.metadata("processorName", "audit-processor"), keyAuth(env.server)))
	// Latest version: order-2 is gone, so the first pending item is order-1's
	// latest version (the second of the four changes): lag 3.
	if metric, active := poll(t, latest); metric != 3 || !active {
		t.Fatalf("latest-version processor: metric %d active %v; want 3, active", metric, active)
	}
	// All versions and deletes: every one of the four changes counts.
	if metric, active := poll(t, audit); metric != 4 || !active {
		t.Fatalf("all-versions-and-deletes processor: metric %d active %v; want 4, active", metric, active)
	}
}

// The AVAD lease read is exactly what the SDKs send in that mode.
func TestAllVersionsLeaseReadHeaders(t *testing.T) {
	env := newCosmosEnvInMode(t, 1, dotNetV1, allVersionsAndDeletes)
	env.writeToRange(t, env.monitored.Ranges()[0].ID, 1)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	env.server.Handler.ResetRequests()
	poll(t, s)
	reads := 0
	for _, r := range env.server.Handler.Requests() {
		if r.Kind != cosmostest.KindChangeFeed {
			continue
		}
		reads++
		if r.Header.Get("A-IM") != "Full-Fidelity Feed" || r.Header.Get("x-ms-cosmos-changefeed-wire-format-version") != "2021-09-15" || r.Header.Get("If-None-Match") == "" {
			t.Errorf("AVAD lease read with headers %v", r.Header)
		}
	}
	if reads != 1 {
		t.Fatalf("%d change feed reads, want 1", reads)
	}
}

// Splits behave in all-versions-and-deletes mode as in latest-version mode:
// a stale parent wakes one replica; once the processor has replaced it with
// child leases (EPK sub-ranges for EPK formats), each child is read in the
// parent's mode, and only the child with pending deletes lags.
func TestAllVersionsAfterSplit(t *testing.T) {
	for _, format := range []leaseFormat{dotNetV0, dotNetV1, javaV1} {
		t.Run(string(format), func(t *testing.T) {
			env := newCosmosEnvInMode(t, 1, format, allVersionsAndDeletes)
			left, _, err := env.monitored.Split(env.monitored.Ranges()[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
			if metric, active := poll(t, s); metric != 1 || !active {
				t.Fatalf("stale parent: metric %d active %v; want activation+1 = 1, active", metric, active)
			}
			children, err := env.processor.ReplaceAfterSplit(env.tokens[0])
			if err != nil {
				t.Fatal(err)
			}
			env.tokens = children
			pk, err := env.monitored.PartitionKeyForRange(left.ID)
			if err != nil {
				t.Fatal(err)
			}
			env.writeItem(t, "order-1", pk, 1)
			env.catchUp(t)
			env.monitored.Delete("order-1")
			if metric, active := poll(t, s); metric != 1 || !active {
				t.Fatalf("one delete pending in one child: metric %d active %v; want 1, active", metric, active)
			}
		})
	}
}

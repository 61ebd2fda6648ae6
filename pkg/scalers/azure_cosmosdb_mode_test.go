package scalers

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
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

// A lease recording a mode no known writer writes is read as latest version,
// and the scaler says so at V(1), naming the value.
func TestCosmosDBUnknownLeaseModeIsReadAsLatestVersionAndLogged(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
	env.setLeaseMode(t, env.tokens[0], "Quantum Feed")
	env.writeToRange(t, env.tokens[0], 3)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))

	metric, active := pollCosmosDB(t, s)
	if metric != 3 || !active {
		t.Fatalf("metric %d active %v; want 3, true (read as latest version)", metric, active)
	}
	logs := cosmosDBLogs.String()
	if !strings.Contains(logs, "unknown change feed mode") || !strings.Contains(logs, "Quantum Feed") {
		t.Fatalf("no V(1) line about the unknown mode in the logs:\n%s", logs)
	}
}

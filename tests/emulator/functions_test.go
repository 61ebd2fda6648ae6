package emulator

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// Azure Functions apps whose Cosmos DB trigger leaves LeaseContainerPrefix
// unset write leases without a prefix: "{accountHost}_{dbRid}_{collRid}..{token}".
// processorName: "" (the key present, its value empty) selects them.

// functionsEnv is a lease container shared by a Functions app without a
// prefix on appdb/orders, a prefixed processor on appdb/orders, and another
// Functions app without a prefix on appdb/payments; every lease is
// checkpointed at LSN 0 before items arrive, so every one of them lags.
type functionsEnv struct {
	server                 *cosmostest.Server
	orders, payments       *cosmostest.Container
	app, prefixed, another *leasetest.Writer
	appTokens              []string
}

func newFunctionsEnv(t *testing.T, format leaseFormat) *functionsEnv {
	t.Helper()
	srv := cosmostest.NewServer()
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("appdb")
	e := &functionsEnv{server: srv, orders: db.CreateContainer("orders", "/customerId", 2), payments: db.CreateContainer("payments", "/customerId", 1)}
	leases := db.CreateContainer("leases", "/id", 1)
	e.app = leasetest.NewWriter("", e.orders, leases, format)
	e.prefixed = leasetest.NewWriter("orders-processor", e.orders, leases, format)
	e.another = leasetest.NewWriter("", e.payments, leases, format)
	for _, w := range []*leasetest.Writer{e.app, e.prefixed, e.another} {
		tokens, err := w.CreateLeases(true)
		if err != nil {
			t.Fatal(err)
		}
		if w == e.app {
			e.appTokens = tokens
		}
	}
	return e
}

// functionsMetadata is the trigger of the Functions app on appdb/orders:
// processorName present and empty.
func functionsMetadata(extra ...string) map[string]string {
	m := baseMetadata(extra...)
	m["processorName"] = ""
	return m
}

// For every format a Functions app writes (v4: the .NET v3 SDK's v0 and
// EPK leases; v3: the .NET v2 library), processorName "" counts exactly the
// app's own leases: not the prefixed processor's, not the other container's
// unprefixed app's, not the .info/.lock documents.
func TestFunctionsAppWithoutPrefix(t *testing.T) {
	for _, format := range []leaseFormat{dotNetV0, dotNetV1, dotNetV2Library} {
		t.Run(string(format), func(t *testing.T) {
			e := newFunctionsEnv(t, format)
			ranges := e.orders.Ranges()
			if err := e.orders.WriteItemsToRange(ranges[0].ID, 10); err != nil {
				t.Fatal(err)
			}
			if err := e.orders.WriteItemsToRange(ranges[1].ID, 20); err != nil {
				t.Fatal(err)
			}
			if err := e.payments.WriteItemsToRange(e.payments.Ranges()[0].ID, 50); err != nil {
				t.Fatal(err)
			}
			if err := e.app.CatchUp(e.appTokens[1]); err != nil { // the app is behind on range 0 only
				t.Fatal(err)
			}
			if !strings.HasPrefix(e.app.LeaseID(e.appTokens[0]), e.server.Account.Host()+"_") {
				t.Fatalf("lease id %q does not start with the account host", e.app.LeaseID(e.appTokens[0]))
			}

			s, seen := newObservedScaler(t, scalerConfig(functionsMetadata("changeFeedLagThreshold", "4"), keyAuth(e.server)))
			metric, active := poll(t, s)
			est := lastEstimate(t, seen)
			var ids []string
			for _, l := range est.Leases {
				ids = append(ids, l.ID)
			}
			want := []string{e.app.LeaseID(e.appTokens[0]), e.app.LeaseID(e.appTokens[1])}
			sort.Strings(ids)
			sort.Strings(want)
			if strings.Join(ids, " ") != strings.Join(want, " ") {
				t.Fatalf("counted leases %v, want only the app's %v", ids, want)
			}
			// 10 pending on one partition, capped at 1 × 4.
			if est.TotalLag != 10 || est.ActivePartitions != 1 || metric != 4 || !active {
				t.Fatalf("total %d, partitions %d, metric %d, active %v; want 10, 1, 4, true (%s)", est.TotalLag, est.ActivePartitions, metric, active, leaseLags(est))
			}

			// The prefixed processor beside it is still its own trigger.
			prefixed := newScaler(t, scalerConfig(baseMetadata("changeFeedLagThreshold", "1000"), keyAuth(e.server)))
			if metric, _ := poll(t, prefixed); metric != 30 {
				t.Fatalf("prefixed processor's metric %d, want 30", metric)
			}
			// And the other container's unprefixed app.
			other := functionsMetadata("containerId", "payments", "changeFeedLagThreshold", "1000")
			if metric, _ := poll(t, newScaler(t, scalerConfig(other, keyAuth(e.server)))); metric != 50 {
				t.Fatalf("payments app's metric %d, want 50", metric)
			}
		})
	}
}

// The metric spec of a processor without a prefix is still a valid,
// distinct name.
func TestFunctionsAppMetricName(t *testing.T) {
	e := newFunctionsEnv(t, dotNetV0)
	s := newScaler(t, scalerConfig(functionsMetadata(), keyAuth(e.server)))
	specs := s.GetMetricSpecForScaling(context.Background())
	if len(specs) != 1 || specs[0].External == nil {
		t.Fatalf("metric specs %+v", specs)
	}
	name := specs[0].External.Metric.Name
	if !strings.Contains(name, "azure-cosmosdb-leases") || strings.Contains(name, "orders-processor") {
		t.Fatalf("metric name %q", name)
	}
	t.Logf("metric name for processorName \"\": %q", name)
}

// An absent processorName stays a configuration error naming the key.
func TestFunctionsAbsentProcessorNameIsAnError(t *testing.T) {
	e := newFunctionsEnv(t, dotNetV0)
	s, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata("processorName", ""), keyAuth(e.server)))
	if err == nil {
		_ = s.Close(context.Background())
		t.Fatal("a trigger without processorName was accepted")
	}
	assertMentions(t, err, "processorName")
	if n := len(e.server.Handler.Requests()); n != 0 {
		t.Fatalf("the refused trigger sent %d requests", n)
	}
}

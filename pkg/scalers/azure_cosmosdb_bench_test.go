package scalers

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// benchLatency is the latency added to every request: 2 ms, or
// COSMOSDB_BENCH_LATENCY (a Go duration) to model a farther account.
func benchLatency(b *testing.B) time.Duration {
	if v := os.Getenv("COSMOSDB_BENCH_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("COSMOSDB_BENCH_LATENCY: %v", err)
		}
		return d
	}
	return 2 * time.Millisecond
}

// BenchmarkCosmosDBPoll measures one steady-state poll of the scaler against
// the embedded server with 2 ms added to every request, for growing lease
// counts. Every lease has pending work, so every read returns an item.
// Reported: time per poll, requests per poll, allocations per poll.
func BenchmarkCosmosDBPoll(b *testing.B) {
	for _, leases := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("leases=%d", leases), func(b *testing.B) {
			srv := cosmostest.NewServer()
			defer srv.Close()
			if _, err := srv.LaggingProcessor("orders-processor", leases, 3); err != nil {
				b.Fatal(err)
			}
			config := cosmosDBScalerConfig(map[string]string{
				"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
				"leaseContainerId": "leases", "processorName": "orders-processor", "changeFeedLagThreshold": "1",
			}, map[string]string{"connection": srv.ConnectionString()})
			config.GlobalHTTPTimeout = 30 * time.Second
			s, err := NewAzureCosmosDBScaler(config)
			if err != nil {
				b.Fatal(err)
			}
			srv.SetLatency(benchLatency(b))
			want := int64(leases)
			pollOnce := func() {
				metrics, _, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
				if err != nil {
					b.Fatal(err)
				}
				if got := metrics[0].Value.Value(); got != want {
					b.Fatalf("metric %d, want %d", got, want)
				}
			}
			pollOnce() // resolve RIDs, open connections
			srv.ResetRequests()
			b.ReportAllocs()
			b.ResetTimer()
			polls := 0
			for b.Loop() {
				pollOnce()
				polls++
			}
			b.StopTimer()
			b.ReportMetric(float64(len(srv.Requests()))/float64(polls), "requests/poll")
		})
	}
}

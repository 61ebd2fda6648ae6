// Package kedacompare measures this project's azure-cosmosdb scaler and KEDA
// v2.21.0's own implementation of the trigger side by side, in one run,
// against the same embedded Cosmos DB server with the same injected latency.
//
// It lives in its own module because importing KEDA's pkg/scalers compiles
// every KEDA scaler (tens of minutes cold); the main module never does.
package kedacompare

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/metrics/pkg/apis/external_metrics"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	ours "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	keda "github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard()) // both scalers log through controller-runtime
	// As KEDA's operator does at start-up; both scalers share this transport.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func config(srv *cosmostest.Server) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		TriggerType: "azure-cosmosdb",
		TriggerMetadata: map[string]string{
			"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
			"leaseContainerId": "leases", "processorName": "orders-processor", "changeFeedLagThreshold": "1",
		},
		AuthParams:              map[string]string{"connection": srv.ConnectionString()},
		ResolvedEnv:             map[string]string{},
		GlobalHTTPTimeout:       60 * time.Second,
		ScalableObjectName:      "bench",
		ScalableObjectNamespace: "default",
		ScalableObjectType:      "ScaledObject",
	}
}

// BenchmarkPoll runs, for each lease count, one sub-benchmark per
// implementation on the same server state: every lease has 3 pending items
// and every request waits 2 ms. Reported per poll: time, requests, the metric
// value each implementation computed, allocations and bytes.
func BenchmarkPoll(b *testing.B) {
	for _, leases := range []int{1, 100, 1000, 10000} {
		srv := cosmostest.NewServer()
		if _, err := leasetest.LaggingLeases(srv.Account, "orders-processor", leases, 3); err != nil {
			b.Fatal(err)
		}
		srv.Handler.SetLatency(2 * time.Millisecond)
		for _, impl := range []struct {
			name string
			new  func(*scalersconfig.ScalerConfig) (scaler, error)
		}{
			{"impl=ours", newOurs},
			{"impl=keda-v2.21.0", newKEDA},
		} {
			b.Run(fmt.Sprintf("leases=%d/%s", leases, impl.name), func(b *testing.B) {
				s, err := impl.new(config(srv))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close(context.Background())
				if _, err := pollOnce(context.Background(), s); err != nil { // warm caches and connections
					b.Fatal(err)
				}
				srv.Handler.ResetRequests()
				b.ReportAllocs()
				b.ResetTimer()
				var polls, metric int64
				for b.Loop() {
					if metric, err = pollOnce(context.Background(), s); err != nil {
						b.Fatal(err)
					}
					polls++
				}
				b.StopTimer()
				b.ReportMetric(float64(len(srv.Handler.Requests()))/float64(polls), "requests/poll")
				b.ReportMetric(float64(metric), "metric")
			})
		}
		srv.Close()
	}
}

// scaler is the method set both implementations share (KEDA's scalers.Scaler).
type scaler interface {
	GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error)
	Close(ctx context.Context) error
}

func newOurs(c *scalersconfig.ScalerConfig) (scaler, error) { return ours.NewAzureCosmosDBScaler(c) }
func newKEDA(c *scalersconfig.ScalerConfig) (scaler, error) { return keda.NewAzureCosmosDBScaler(c) }

// pollOnce returns the metric value of one poll.
func pollOnce(ctx context.Context, s scaler) (int64, error) {
	m, _, err := s.GetMetricsAndActivity(ctx, "s0-metric")
	if err != nil {
		return 0, err
	}
	return m[0].Value.Value(), nil
}

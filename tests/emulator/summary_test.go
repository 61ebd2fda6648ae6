package emulator

import (
	"math"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

func lags(values ...int64) azure.CosmosDBLagEstimate {
	var e azure.CosmosDBLagEstimate
	for _, v := range values {
		e.Leases = append(e.Leases, azure.CosmosDBLeaseLag{Lag: v})
	}
	return e
}

// The trigger's arithmetic: metric = min(totalLag, activePartitions *
// threshold), active when the total exceeds activation; a stale parent
// wakes one replica; sums and products saturate.
func TestSummarize(t *testing.T) {
	type summary = azure.CosmosDBLagSummary
	stale := func(e azure.CosmosDBLagEstimate, n int) azure.CosmosDBLagEstimate { e.StaleParents = n; return e }
	cases := []struct {
		name                  string
		estimate              azure.CosmosDBLagEstimate
		threshold, activation int64
		want                  summary
	}{
		{"no leases", lags(), 100, 0, summary{}},
		{"no lag", lags(0, 0), 100, 0, summary{}},
		{"below cap", lags(30, 20), 100, 0, summary{TotalLag: 50, ActivePartitions: 2, Metric: 50, Active: true}},
		{"capped by active partitions", lags(500, 20, 0), 100, 0, summary{TotalLag: 520, ActivePartitions: 2, Metric: 200, Active: true}},
		{"single hot partition", lags(100000), 100, 0, summary{TotalLag: 100000, ActivePartitions: 1, Metric: 100, Active: true}},
		{"at activation is inactive", lags(5), 100, 5, summary{TotalLag: 5, ActivePartitions: 1, Metric: 5, Active: false}},
		{"negative lag ignored", lags(-4, 3), 100, 0, summary{TotalLag: 3, ActivePartitions: 1, Metric: 3, Active: true}},
		{"stale parent alone", stale(lags(0), 1), 100, 7, summary{TotalLag: 8, ActivePartitions: 1, Metric: 8, Active: true}},
		{"two stale parents still one partition", stale(lags(), 2), 100, 0, summary{TotalLag: 1, ActivePartitions: 1, Metric: 1, Active: true}},
		{"stale parent with lag above activation", stale(lags(500), 1), 100, 10, summary{TotalLag: 500, ActivePartitions: 1, Metric: 100, Active: true}},
		{"stale parent raises small lag", stale(lags(3), 1), 100, 10, summary{TotalLag: 11, ActivePartitions: 1, Metric: 11, Active: true}},
		{"sum saturates", lags(math.MaxInt64, math.MaxInt64), math.MaxInt64, 0, summary{TotalLag: math.MaxInt64, ActivePartitions: 2, Metric: math.MaxInt64, Active: true}},
		{"cap product saturates", lags(math.MaxInt64, 1, 1), math.MaxInt64 / 2, 0, summary{TotalLag: math.MaxInt64, ActivePartitions: 3, Metric: math.MaxInt64, Active: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.estimate.Summarize(tc.threshold, tc.activation); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

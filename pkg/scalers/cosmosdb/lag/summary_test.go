package lag

import (
	"math"
	"testing"
)

func lags(values ...int64) Result {
	var r Result
	for _, v := range values {
		r.Leases = append(r.Leases, LeaseLag{Lag: v})
	}
	return r
}

func TestSummarize(t *testing.T) {
	stale := func(r Result, n int) Result { r.StaleParents = n; return r }
	cases := []struct {
		name                  string
		result                Result
		threshold, activation int64
		want                  Summary
	}{
		{"no leases", lags(), 100, 0, Summary{}},
		{"no lag", lags(0, 0), 100, 0, Summary{}},
		{"below cap", lags(30, 20), 100, 0, Summary{TotalLag: 50, ActivePartitions: 2, Metric: 50, Active: true}},
		{"capped by active partitions", lags(500, 20, 0), 100, 0, Summary{TotalLag: 520, ActivePartitions: 2, Metric: 200, Active: true}},
		{"single hot partition", lags(100000), 100, 0, Summary{TotalLag: 100000, ActivePartitions: 1, Metric: 100, Active: true}},
		{"at activation is inactive", lags(5), 100, 5, Summary{TotalLag: 5, ActivePartitions: 1, Metric: 5, Active: false}},
		{"negative lag ignored", lags(-4, 3), 100, 0, Summary{TotalLag: 3, ActivePartitions: 1, Metric: 3, Active: true}},
		{"stale parent alone", stale(lags(0), 1), 100, 7, Summary{TotalLag: 8, ActivePartitions: 1, Metric: 8, Active: true}},
		{"two stale parents still one partition", stale(lags(), 2), 100, 0, Summary{TotalLag: 1, ActivePartitions: 1, Metric: 1, Active: true}},
		{"stale parent with lag above activation", stale(lags(500), 1), 100, 10, Summary{TotalLag: 500, ActivePartitions: 1, Metric: 100, Active: true}},
		{"stale parent raises small lag", stale(lags(3), 1), 100, 10, Summary{TotalLag: 11, ActivePartitions: 1, Metric: 11, Active: true}},
		{"sum saturates", lags(math.MaxInt64, math.MaxInt64), math.MaxInt64, 0, Summary{TotalLag: math.MaxInt64, ActivePartitions: 2, Metric: math.MaxInt64, Active: true}},
		{"cap product saturates", lags(math.MaxInt64, 1, 1), math.MaxInt64 / 2, 0, Summary{TotalLag: math.MaxInt64, ActivePartitions: 3, Metric: math.MaxInt64, Active: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.result, tc.threshold, tc.activation); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

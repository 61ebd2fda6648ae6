package main

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// triggerSeries returns the per-trigger gauges of the server's registry,
// by metric name and then by "namespace/scaledObject/trigger".
func triggerSeries(t *testing.T, f *fixture) map[string]map[string]float64 {
	t.Helper()
	families, err := f.srv.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, fam := range families {
		if fam.GetType() != dto.MetricType_GAUGE || len(fam.GetMetric()) == 0 || len(fam.GetMetric()[0].GetLabel()) != 3 {
			continue
		}
		series := map[string]float64{}
		for _, m := range fam.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			series[l["namespace"]+"/"+l["scaledObject"]+"/"+l["trigger"]] = m.GetGauge().GetValue()
		}
		out[fam.GetName()] = series
	}
	return out
}

// Per trigger, through the gRPC API: the last estimate's lag, metric,
// active partitions, leases, stale parents, success and duration, one
// series per ScaledObject trigger (labels namespace, scaledObject,
// trigger); a failed estimate sets success to 0 and keeps the last good
// figures; an edited ScaledObject's new scaler takes the series over; the
// series go when the trigger's scaler is closed.
func TestPerTriggerMetrics(t *testing.T) {
	f := newFixture(t, func(o *serverOptions) { o.idleTimeout = 300 * time.Millisecond })
	ctx := testContext(t)
	spec, err := f.client.GetMetricSpec(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	metricName := spec.MetricSpecs[0].MetricName
	key := testNamespace + "/" + testName + "/" + metricName
	getMetrics := func(md map[string]string) error {
		_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: metricName})
		return err
	}
	if err := getMetrics(metadata()); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"cosmosdb_external_scaler_trigger_lag":                   120, // 4 ranges × 30 pending
		"cosmosdb_external_scaler_trigger_metric_value":          80,  // capped at 4 × 20
		"cosmosdb_external_scaler_trigger_active_partitions":     4,
		"cosmosdb_external_scaler_trigger_leases":                4,
		"cosmosdb_external_scaler_trigger_stale_parent_leases":   0,
		"cosmosdb_external_scaler_trigger_last_estimate_success": 1,
	}
	got := triggerSeries(t, f)
	for name, v := range want {
		if series := got[name]; len(series) != 1 || series[key] != v {
			t.Errorf("%s = %v, want exactly {%s: %v}", name, series, key, v)
		}
	}
	// The items were written just before the poll: the oldest pending one is
	// seconds old at most (the server's _ts has one-second resolution).
	if age, ok := got["cosmosdb_external_scaler_trigger_oldest_pending_age_seconds"][key]; !ok || age < 0 || age > 60 {
		t.Errorf("oldest pending age %v s (present %v)", age, ok)
	}
	if d := got["cosmosdb_external_scaler_trigger_last_estimate_duration_seconds"][key]; d <= 0 || d > 30 {
		t.Errorf("last estimate duration %v s", d)
	}
	if ts := got["cosmosdb_external_scaler_trigger_last_estimate_timestamp_seconds"][key]; time.Since(time.Unix(int64(ts), 0)) > time.Minute {
		t.Errorf("last estimate timestamp %v", ts)
	}

	// A failed estimate: success 0, the last good figures kept.
	remove := f.cosmos.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindQuery, Status: http.StatusBadRequest})
	if err := getMetrics(metadata()); err == nil {
		t.Fatal("GetMetrics succeeded with a failing lease query")
	}
	remove()
	got = triggerSeries(t, f)
	if got["cosmosdb_external_scaler_trigger_last_estimate_success"][key] != 0 || got["cosmosdb_external_scaler_trigger_lag"][key] != 120 {
		t.Errorf("after a failed estimate: success %v, lag %v", got["cosmosdb_external_scaler_trigger_last_estimate_success"], got["cosmosdb_external_scaler_trigger_lag"])
	}

	// The ScaledObject is edited (another threshold, the same metric): the
	// old scaler is closed, the new one owns the one series.
	edited := metadata("changeFeedLagThreshold", "10")
	if err := getMetrics(edited); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the old scaler closed", func() bool { return f.closed.Load() >= 1 })
	got = triggerSeries(t, f)
	if series := got["cosmosdb_external_scaler_trigger_metric_value"]; len(series) != 1 || series[key] != 40 {
		t.Errorf("after the edit: metric %v, want {%s: 40}", series, key)
	}

	// Unused for the idle timeout: the scaler is closed, its series go.
	eventually(t, 10*time.Second, "the idle scaler closed and its series removed", func() bool {
		return len(triggerSeries(t, f)) == 0
	})
}

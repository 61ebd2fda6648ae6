package hpamodel

import (
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
)

// The HPA scales down no further than its highest recommendation within the
// scale-down stabilization window; scale-ups are not held.
func TestAutoscalerScaleDownStabilization(t *testing.T) {
	a := &Autoscaler{Min: 0, Max: 10, Target: 100, MetricType: v2.AverageValueMetricType, Cooldown: time.Hour, ScaleDownWindow: 5 * time.Second}
	t0 := time.Unix(0, 0)
	for _, s := range []struct {
		at              time.Duration
		Current         int32
		metric          int64
		want            int32
		heldInTheReason bool
	}{
		{0, 1, 500, 5, false},              // scale up at once
		{time.Second, 5, 100, 5, true},     // recommends 1, holds 5
		{4 * time.Second, 5, 300, 5, true}, // recommends 3, 5 still in the window
		{5 * time.Second, 5, 100, 3, true}, // 5 left the window; 3 (at 4s) holds
		{9 * time.Second, 3, 100, 1, false},
	} {
		d := a.Step(t0.Add(s.at), s.Current, s.metric, true)
		if d.Replicas != s.want || strings.Contains(d.Reason, "stabilization window") != s.heldInTheReason {
			t.Errorf("at %s from %d, metric %d: %+v; want %d", s.at, s.Current, s.metric, d, s.want)
		}
	}
}

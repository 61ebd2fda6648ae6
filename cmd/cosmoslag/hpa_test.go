package main

import (
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
)

func TestAutoscalerSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		min, max  int32
		valueType bool
		current   int32
		metric    int64
		active    bool
		want      int32
	}{
		{"idle stays at 0", 0, 10, false, 0, 0, false, 0},
		{"activation then HPA", 0, 10, false, 0, 350, true, 4},
		{"activation to minReplicaCount", 3, 10, false, 0, 50, true, 3},
		{"bounded by max", 0, 3, false, 2, 1000, true, 3},
		{"within tolerance keeps current", 0, 10, false, 4, 420, true, 4},
		{"outside tolerance", 0, 10, false, 4, 450, true, 5},
		{"scale down", 0, 10, false, 5, 120, true, 2},
		{"inactive goes to 0 after cooldown", 0, 10, false, 5, 0, false, 0},
		{"inactive with minReplicaCount keeps min", 2, 10, false, 5, 0, false, 2},
		{"Value metric type", 0, 10, true, 2, 300, true, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &autoscaler{Min: tc.min, Max: tc.max, Target: 100, MetricType: v2.AverageValueMetricType, Cooldown: time.Minute}
			if tc.valueType {
				a.MetricType = v2.ValueMetricType
			}
			plan := a.settle(tc.current, tc.metric, tc.active)
			if plan.Desired != tc.want {
				t.Errorf("desired %d, want %d (%v)", plan.Desired, tc.want, plan.Steps)
			}
		})
	}
}

func TestAutoscalerCooldown(t *testing.T) {
	a := &autoscaler{Min: 0, Max: 10, Target: 100, Cooldown: 3 * time.Second}
	t0 := time.Unix(0, 0)
	if d := a.step(t0, 0, 50, true); d.Replicas != 1 {
		t.Fatalf("activation: %+v", d)
	}
	if d := a.step(t0.Add(time.Second), 1, 0, false); d.Replicas != 1 {
		t.Errorf("1s inactive: %+v, want 1 (cooling down)", d)
	}
	if d := a.step(t0.Add(3*time.Second), 1, 0, false); d.Replicas != 0 {
		t.Errorf("3s inactive: %+v, want 0", d)
	}
}

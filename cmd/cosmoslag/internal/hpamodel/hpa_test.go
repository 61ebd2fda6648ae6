package hpamodel

import (
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
)

func TestAutoscalerSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		min, max  int32
		valueType bool
		Current   int32
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
			a := &Autoscaler{Min: tc.min, Max: tc.max, Target: 100, MetricType: v2.AverageValueMetricType, Cooldown: time.Minute}
			if tc.valueType {
				a.MetricType = v2.ValueMetricType
			}
			plan := a.Settle(tc.Current, tc.metric, tc.active)
			if plan.Desired != tc.want {
				t.Errorf("desired %d, want %d (%v)", plan.Desired, tc.want, plan.Steps)
			}
		})
	}
}

func TestAutoscalerCooldown(t *testing.T) {
	a := &Autoscaler{Min: 0, Max: 10, Target: 100, Cooldown: 3 * time.Second}
	t0 := time.Unix(0, 0)
	if d := a.Step(t0, 0, 50, true); d.Replicas != 1 {
		t.Fatalf("activation: %+v", d)
	}
	if d := a.Step(t0.Add(time.Second), 1, 0, false); d.Replicas != 1 {
		t.Errorf("1s inactive: %+v, want 1 (cooling down)", d)
	}
	if d := a.Step(t0.Add(3*time.Second), 1, 0, false); d.Replicas != 0 {
		t.Errorf("3s inactive: %+v, want 0", d)
	}
}

// KEDA never runs fewer replicas than minReplicaCount: a current count
// below it (check's default --current-replicas is 0) is taken as the
// minimum, and the plan says so, instead of starting from 0.
func TestAutoscalerSettleFloorsCurrentAtMinReplicaCount(t *testing.T) {
	for _, tc := range []struct {
		name            string
		min, Current    int32
		metric          int64
		active          bool
		wantCurrent     int32
		wantDesired     int32
		wantFloorStated bool
	}{
		{"active, min 1, from 0", 1, 0, 350, true, 1, 4, true},
		{"inactive, min 1, from 0", 1, 0, 0, false, 1, 1, true},
		{"min 3, from 2", 3, 2, 100, true, 3, 3, true},
		{"min 1, from 2", 1, 2, 350, true, 2, 4, false},
		{"min 0, from 0", 0, 0, 350, true, 0, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Autoscaler{Min: tc.min, Max: 10, Target: 100, MetricType: v2.AverageValueMetricType, Cooldown: time.Minute, ScaleDownWindow: 5 * time.Minute}
			plan := a.Settle(tc.Current, tc.metric, tc.active)
			if plan.Current != tc.wantCurrent || plan.Desired != tc.wantDesired {
				t.Errorf("%d → %d, want %d → %d (%q)", plan.Current, plan.Desired, tc.wantCurrent, tc.wantDesired, plan.Steps)
			}
			stated := len(plan.Steps) > 0 && strings.Contains(plan.Steps[0], "KEDA never runs fewer than minReplicaCount")
			if stated != tc.wantFloorStated {
				t.Errorf("steps %q: floor stated %v, want %v", plan.Steps, stated, tc.wantFloorStated)
			}
			for i := 1; i < len(plan.Steps); i++ {
				if plan.Steps[i] == plan.Steps[i-1] {
					t.Errorf("step repeated: %q", plan.Steps)
				}
			}
		})
	}
}

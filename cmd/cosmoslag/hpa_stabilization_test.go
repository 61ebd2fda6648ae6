package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
)

// The HPA scales down no further than its highest recommendation within the
// scale-down stabilization window; scale-ups are not held.
func TestAutoscalerScaleDownStabilization(t *testing.T) {
	a := &autoscaler{Min: 0, Max: 10, Target: 100, MetricType: v2.AverageValueMetricType, Cooldown: time.Hour, ScaleDownWindow: 5 * time.Second}
	t0 := time.Unix(0, 0)
	for _, s := range []struct {
		at              time.Duration
		current         int32
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
		d := a.step(t0.Add(s.at), s.current, s.metric, true)
		if d.Replicas != s.want || strings.Contains(d.Reason, "stabilization window") != s.heldInTheReason {
			t.Errorf("at %s from %d, metric %d: %+v; want %d", s.at, s.current, s.metric, d, s.want)
		}
	}
}

// check holds a scale down for the ScaledObject's stabilization window
// (300 s unless advanced.horizontalPodAutoscalerConfig.behavior says
// otherwise) and says where the replicas go after it.
func TestCheckScaleDownStabilizationWindow(t *testing.T) {
	for _, tc := range []struct {
		name          string
		advanced      string
		desired       int32
		windowSeconds int64
	}{
		{"HPA default", "", 5, 300},
		{"from the ScaledObject", "  advanced:\n    horizontalPodAutoscalerConfig:\n      behavior:\n        scaleDown:\n          stabilizationWindowSeconds: 60\n", 5, 60},
		{"window 0", "  advanced:\n    horizontalPodAutoscalerConfig:\n      behavior:\n        scaleDown:\n          stabilizationWindowSeconds: 0\n", 2, 0},
	} {
		so := writeFile(t, t.TempDir(), "so.yaml", strings.Replace(scaledObjectYAML, "spec:\n", "spec:\n"+tc.advanced, 1))
		code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator", "--current-replicas", "5", "-o", "json")
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", tc.name, code, stdout, stderr)
		}
		var r checkReport
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Replicas == nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stdout)
		}
		p := r.Replicas
		if p.Desired != tc.desired || p.ScaleDownWindowSeconds != tc.windowSeconds || (tc.desired != 2) != (p.AfterWindow != nil) ||
			(p.AfterWindow != nil && *p.AfterWindow != 2) {
			t.Errorf("%s: replicas %+v; want desired %d, window %ds, 2 after it", tc.name, *p, tc.desired, tc.windowSeconds)
		}
	}
	so := writeFile(t, t.TempDir(), "so.yaml", scaledObjectYAML)
	_, stdout, _ := runCmd(t, "check", "-f", so, "--emulator", "--current-replicas", "5")
	if !strings.Contains(stdout, "→ 2 once the scale-down stabilization window (300s) has passed") {
		t.Errorf("the table does not say where the replicas go after the window:\n%s", stdout)
	}
}

// The demo's header says its scale-down stabilization window and that it is
// shorter than the HPA's default.
func TestDemoHeaderSaysTheStabilizationWindow(t *testing.T) {
	code, stdout, stderr := runCmd(t, "demo", "--duration", "400ms", "--interval", "200ms", "--scale-down-stabilization", "2s")
	header, _, _ := strings.Cut(stdout, "\n")
	if code != exitOK || !strings.Contains(header, "scale-down stabilization 2s (the HPA's default is 300s)") {
		t.Errorf("exit %d, header %q, stderr %q", code, header, stderr)
	}
	code, _, stderr = runCmd(t, "demo", "--scale-down-stabilization", "-1s")
	if code != exitBadArgs || !strings.Contains(stderr, "--scale-down-stabilization") {
		t.Errorf("negative window: exit %d, stderr %q", code, stderr)
	}
}

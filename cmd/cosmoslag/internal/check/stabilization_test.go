package check

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

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
		so := clitest.WriteFile(t, t.TempDir(), "so.yaml", strings.Replace(clitest.ScaledObjectYAML, "spec:\n", "spec:\n"+tc.advanced, 1))
		code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator", "--current-replicas", "5", "-o", "json")
		if code != cli.ExitOK {
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
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ScaledObjectYAML)
	_, stdout, _ := runCmd(t, "check", "-f", so, "--emulator", "--current-replicas", "5")
	if !strings.Contains(stdout, "→ 2 once the scale-down stabilization window (300s) has passed") {
		t.Errorf("the table does not say where the replicas go after the window:\n%s", stdout)
	}
}

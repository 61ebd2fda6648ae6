package check

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// With minReplicaCount 1, check starts the replica plan from 1, not from
// --current-replicas' default 0: KEDA never runs fewer than the minimum.
func TestCheckFloorsCurrentReplicasAtMinReplicaCount(t *testing.T) {
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", strings.Replace(clitest.ScaledObjectYAML, "minReplicaCount: 0", "minReplicaCount: 1", 1)+"---\n"+clitest.TriggerAuthYAML)
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The sample's lag is 155 over 2 active partitions: metric 100, target 50.
	re := `(?m)^Replicas\s+1 → 2: current replicas taken as 1, not 0: KEDA never runs fewer than minReplicaCount; HPA: ceil\(100 / 50\) = 2 \[min 1, max 8\]$`
	if !regexp.MustCompile(re).MatchString(stdout) {
		t.Errorf("output does not match %s:\n%s", re, stdout)
	}
	if strings.Contains(stdout, "Replicas           0 →") || strings.Contains(stdout, "KEDA activates") {
		t.Errorf("the plan starts from 0 replicas:\n%s", stdout)
	}
}

package demo

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
)

// The demo's header says its scale-down stabilization window and that it is
// shorter than the HPA's default.
func TestDemoHeaderSaysTheStabilizationWindow(t *testing.T) {
	code, stdout, stderr := runCmd(t, "demo", "--duration", "400ms", "--interval", "200ms", "--scale-down-stabilization", "2s")
	header, _, _ := strings.Cut(stdout, "\n")
	if code != cli.ExitOK || !strings.Contains(header, "scale-down stabilization 2s (the HPA's default is 300s)") {
		t.Errorf("exit %d, header %q, stderr %q", code, header, stderr)
	}
	code, _, stderr = runCmd(t, "demo", "--scale-down-stabilization", "-1s")
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "--scale-down-stabilization") {
		t.Errorf("negative window: exit %d, stderr %q", code, stderr)
	}
}

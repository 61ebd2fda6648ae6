package serve

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// The commands these tests run: serve.
var commands = map[string]clitest.Command{"serve": Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

// startServe runs cosmoslag serve in-process (clitest.StartServe).
func startServe(t *testing.T, extra ...string) *clitest.Served {
	t.Helper()
	return clitest.StartServe(t, Run, EmulatorKey, extra...)
}

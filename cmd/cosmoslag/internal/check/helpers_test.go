package check

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/serve"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/tune"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/validate"
)

// The commands these tests run: check itself; validate, tune and serve where a test compares or combines them.
var commands = map[string]clitest.Command{"check": Run, "validate": validate.Run, "tune": tune.Run, "serve": serve.Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

// clitest.StartServe runs cosmoslag serve in-process (see clitest.StartServe).
func startServe(t *testing.T, extra ...string) *clitest.Served {
	t.Helper()
	return clitest.StartServe(t, serve.Run, serve.EmulatorKey, extra...)
}

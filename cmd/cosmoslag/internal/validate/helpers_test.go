package validate

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/check"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// The commands these tests run: validate; check where a test compares them.
var commands = map[string]clitest.Command{"validate": Run, "check": check.Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

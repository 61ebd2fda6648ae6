package demo

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// The commands these tests run: demo.
var commands = map[string]clitest.Command{"demo": Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

package tune

import (
	"os"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// TestMain trusts the tests' certificate authority (clitest.Main), which
// clitest.OverTLS serves accounts with.
func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }

// The commands these tests run: tune.
var commands = map[string]clitest.Command{"tune": Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// The README's validate example is the command's output, exit status 2,
// for the files of examples/ it names: every problem of the misspelt
// trigger, the missing secret value among them.
func TestReadmeValidateExampleIsTheCommandsOutput(t *testing.T) {
	block := testhelp.DocsBlock(t, "README.md", "problem of a trigger, each naming its parameter:")
	command, ok := strings.CutPrefix(block[0], "$ go run ./cmd/cosmoslag ")
	if !ok {
		t.Fatalf("README.md's validate example does not start with the command: %q", block[0])
	}
	root := testhelp.RepoRoot(t)
	args := strings.Fields(command)
	for i, a := range args {
		if strings.HasPrefix(a, "examples/") {
			args[i] = filepath.Join(root, a)
		}
	}
	// No value of the Secret: the example has no --env-file.
	t.Setenv("connectionString", "") // restored after the test
	os.Unsetenv("connectionString")
	code, stdout, stderr := runCmd(t, args...)
	if want := strings.Join(block[1:], "\n") + "\n"; code != cli.ExitBadArgs || stdout != want {
		t.Errorf("README.md's validate example differs from the output (exit %d, want %d):\n%s\nwant:\n%s\nstderr:\n%s", code, cli.ExitBadArgs, stdout, want, stderr)
	}
}

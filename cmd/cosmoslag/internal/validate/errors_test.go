package validate

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// A lease account given by leaseEndpoint with no key of its own (and no
// identity): validate names that account and its parameter.
func TestValidateNamesTheKeylessAccount(t *testing.T) {
	endpoint := noConnections(t)
	key := base64.StdEncoding.EncodeToString([]byte("a valid-looking account key!"))
	file := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ErrorsManifest(
		"        endpoint: "+endpoint+"\n        leaseEndpoint: "+endpoint+"\n",
		"    - {parameter: cosmosDBKey, name: cosmos-secrets, key: key}\n", "", key))

	code, stdout, stderr := runCmd(t, "validate", "-f", file)
	if code != cli.ExitBadArgs {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, cli.ExitBadArgs, stdout, stderr)
	}
	if want := "the lease account (leaseEndpoint) has no account key"; !strings.Contains(stdout, want) {
		t.Errorf("stdout does not say %q:\n%s", want, stdout)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)
}

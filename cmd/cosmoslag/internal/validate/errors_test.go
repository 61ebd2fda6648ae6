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
	// The endpoints in the TriggerAuthentication, beside its key (from the
	// Secret): given in trigger metadata, a loopback endpoint may not
	// receive the TriggerAuthentication's key.
	manifest := clitest.ErrorsManifest("", "    - {parameter: cosmosDBKey, name: cosmos-secrets, key: key}\n"+
		"    - {parameter: endpoint, name: cosmos-secrets, key: endpoint}\n    - {parameter: leaseEndpoint, name: cosmos-secrets, key: endpoint}\n", "", key)
	manifest = strings.Replace(manifest, "  key: \""+key+"\"\n", "  key: \""+key+"\"\n  endpoint: \""+endpoint+"\"\n", 1)
	file := clitest.WriteFile(t, t.TempDir(), "so.yaml", manifest)

	code, stdout, stderr := runCmd(t, "validate", "-f", file)
	if code != cli.ExitBadArgs {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, cli.ExitBadArgs, stdout, stderr)
	}
	if want := "the lease account (leaseEndpoint) has no account key"; !strings.Contains(stdout, want) {
		t.Errorf("stdout does not say %q:\n%s", want, stdout)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)
}

package validate

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/serve"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// The README's validate example is the command's output for manifests
// like the ones it names: a ScaledObject default/orders-processor whose
// trigger 0 takes its connection from a TriggerAuthentication's Secret.
func TestReadmeValidateExampleIsTheCommandsOutput(t *testing.T) {
	block := testhelp.DocsBlock(t, "README.md", "files offline, with the scaler's own constructor")
	command, ok := strings.CutPrefix(block[0], "$ go run ./cmd/cosmoslag ")
	if !ok {
		t.Fatalf("README.md's validate example does not start with the command: %q", block[0])
	}
	dir := t.TempDir()
	files := map[string]string{
		"so.yaml": `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders-processor}
spec:
  scaleTargetRef: {name: orders-processor}
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: orders-processor}
      authenticationRef: {name: cosmos-auth}
`,
		"auth.yaml":   "apiVersion: keda.sh/v1alpha1\nkind: TriggerAuthentication\nmetadata: {name: cosmos-auth}\nspec:\n  secretTargetRef:\n    - {parameter: connection, name: cosmos-secrets, key: connectionString}\n",
		"secrets.env": "connectionString=AccountEndpoint=https://shop.documents.azure.com:443/;AccountKey=" + serve.EmulatorKey + ";\n",
	}
	args := strings.Fields(command)
	for i, a := range args {
		if content, ok := files[a]; ok {
			args[i] = clitest.WriteFile(t, dir, a, content)
		}
	}
	code, stdout, stderr := runCmd(t, args...)
	if want := strings.Join(block[1:], "\n") + "\n"; code != cli.ExitOK || stdout != want {
		t.Errorf("README.md's validate example differs from the output (exit %d):\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
}

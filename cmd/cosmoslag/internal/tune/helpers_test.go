package tune

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// The commands these tests run: tune.
var commands = map[string]clitest.Command{"tune": Run}

// runCmd runs the command args[0] names in-process and returns its exit
// code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, commands, args...)
}

// The helpers the commands' tests share (package clitest).
var (
	writeFile                = clitest.WriteFile
	newShopAccount           = clitest.NewShopAccount
	assertNoSecret           = clitest.AssertNoSecret
	writeMinimalScaledObject = clitest.WriteMinimalScaledObject
	oneJSONDocument          = clitest.OneJSONDocument
	docsBlock                = clitest.DocsBlock
	errorsManifest           = clitest.ErrorsManifest
	newTestAccount           = clitest.NewTestAccount
)

const (
	scaledObjectYAML = clitest.ScaledObjectYAML
	triggerAuthYAML  = clitest.TriggerAuthYAML
)

package validate

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/serve"
)

// validManifests are clitest's ScaledObject and TriggerAuthentication with
// the Secret's value in an env file, which validate finds valid (exit 0).
func validManifests(t *testing.T, dir string) (so, ta, env string) {
	t.Helper()
	so = clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta = clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	env = clitest.WriteFile(t, dir, "secrets.env", "connectionString=AccountEndpoint=https://127.0.0.1:8081/;AccountKey="+serve.EmulatorKey+";\n")
	return so, ta, env
}

// A misspelt metadata key or TriggerAuthentication parameter is an error
// (KEDA would ignore it and keep the default) naming the nearest known
// parameter; a key that is near none says where the parameters are.
func TestValidateRefusesUnknownKeysWithTheNearestName(t *testing.T) {
	dir := t.TempDir()
	so, ta, env := validManifests(t, dir)
	code, stdout, stderr := runCmd(t, "validate", "-f", so, "-f", ta, "--env-file", env)
	if code != cli.ExitOK || !strings.Contains(stdout, "trigger 1 (orders): valid\n") {
		t.Fatalf("the valid manifests: exit %d\n%s\n%s", code, stdout, stderr)
	}

	typo := clitest.WriteFile(t, dir, "typo.yaml", strings.Replace(clitest.ScaledObjectYAML, "changeFeedLagThreshold:", "changeFeedLagTreshold:", 1))
	code, stdout, _ = runCmd(t, "validate", "-f", typo, "-f", ta, "--env-file", env)
	want := "ScaledObject shop/order-projector trigger 1 (orders): invalid: metadata key changeFeedLagTreshold is not an azure-cosmosdb parameter, so KEDA ignores it; did you mean changeFeedLagThreshold?\n"
	if code != cli.ExitBadArgs || !strings.Contains(stdout, want) {
		t.Errorf("misspelt threshold: exit %d, want %d and\n%s\ngot:\n%s", code, cli.ExitBadArgs, want, stdout)
	}
	if strings.Contains(stdout, "Unmatched input property") {
		t.Errorf("the unknown key is reported twice, as an error and as a warning:\n%s", stdout)
	}

	authTypo := clitest.WriteFile(t, dir, "ta-typo.yaml", strings.Replace(clitest.TriggerAuthYAML, "parameter: connection", "parameter: conection", 1))
	code, stdout, _ = runCmd(t, "validate", "-f", so, "-f", authTypo, "--env-file", env)
	if want := "TriggerAuthentication cosmos-auth: parameter conection is not an azure-cosmosdb parameter, so the scaler never reads it; did you mean connection?"; code != cli.ExitBadArgs || !strings.Contains(stdout, want) {
		t.Errorf("misspelt auth parameter: exit %d, stdout does not say %q:\n%s", code, want, stdout)
	}

	far := clitest.WriteFile(t, dir, "far.yaml", strings.Replace(clitest.ScaledObjectYAML, "changeFeedLagThreshold:", "queueLength:", 1))
	code, stdout, _ = runCmd(t, "validate", "-f", far, "-f", ta, "--env-file", env)
	if want := "metadata key queueLength is not an azure-cosmosdb parameter, so KEDA ignores it (the parameters are listed in docs/configuration.md)"; code != cli.ExitBadArgs || !strings.Contains(stdout, want) {
		t.Errorf("unrelated key: exit %d, stdout does not say %q:\n%s", code, want, stdout)
	}
}

// Every problem of a trigger is reported, a Secret value that has no
// local value among them, in the table and in JSON's problems; the
// constructor's complaint about the credential that is only missing
// because of it is not repeated.
func TestValidateReportsEveryProblemOfATrigger(t *testing.T) {
	t.Setenv("connectionString", "")
	os.Unsetenv("connectionString")
	dir := t.TempDir()
	bad := strings.NewReplacer(
		"        processorName: order-projector\n", "",
		`changeFeedLagThreshold: "50"`, "changeFeedLagTreshold: \"50\"\n        activationChangeFeedLagThreshold: \"-1\"",
	).Replace(clitest.ScaledObjectYAML)
	so := clitest.WriteFile(t, dir, "so.yaml", bad)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	code, stdout, stderr := runCmd(t, "validate", "-f", so, "-f", ta)
	if code != cli.ExitBadArgs {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cli.ExitBadArgs, stdout, stderr)
	}
	wants := []string{
		"ScaledObject shop/order-projector trigger 1 (orders): invalid, 4 problems:\n",
		"  - metadata key changeFeedLagTreshold is not an azure-cosmosdb parameter, so KEDA ignores it; did you mean changeFeedLagThreshold?\n",
		`  - TriggerAuthentication cosmos-auth: parameter connection comes from secret "cosmos-secrets" key "connectionString", which has no local value`,
		"  - missing required parameter \"processorName\" in [triggerMetadata]\n",
		"  - activationChangeFeedLagThreshold must be greater than or equal to 0, got -1\n",
		"1 trigger(s) checked, 1 invalid\n",
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "  - "); n != 4 {
		t.Errorf("%d problems listed, want 4:\n%s", n, stdout)
	}

	code, stdout, _ = runCmd(t, "validate", "-f", so, "-f", ta, "-o", "json")
	var report struct {
		Triggers []struct {
			Valid    bool
			Problems []string
			Error    string
		}
		Invalid  int
		ExitCode int
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || code != cli.ExitBadArgs || report.ExitCode != cli.ExitBadArgs {
		t.Fatalf("json: exit %d, %v\n%s", code, err, stdout)
	}
	if len(report.Triggers) != 1 || report.Triggers[0].Valid || len(report.Triggers[0].Problems) != 4 || report.Invalid != 1 ||
		report.Triggers[0].Error != strings.Join(report.Triggers[0].Problems, "; ") {
		t.Errorf("json: %+v", report)
	}
}

// failingWriter refuses every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// The exit codes the help and the README give: 0 every trigger valid, 2 a
// trigger invalid or bad input, 1 the JSON output could not be written.
func TestValidateExitCodes(t *testing.T) {
	t.Setenv("connectionString", "")
	os.Unsetenv("connectionString")
	so, ta, env := validManifests(t, t.TempDir())
	if code, _, _ := runCmd(t, "validate", "-f", so, "-f", ta, "--env-file", env); code != cli.ExitOK {
		t.Errorf("valid: exit %d, want %d", code, cli.ExitOK)
	}
	if code, _, _ := runCmd(t, "validate", "-f", so, "-f", ta); code != cli.ExitBadArgs {
		t.Errorf("invalid (no value of the Secret): exit %d, want %d", code, cli.ExitBadArgs)
	}
	if code, _, _ := runCmd(t, "validate", "--bogus"); code != cli.ExitBadArgs {
		t.Errorf("bad flag: exit %d, want %d", code, cli.ExitBadArgs)
	}
	var stderr strings.Builder
	if code := Run(t.Context(), []string{"-f", so, "-f", ta, "--env-file", env, "-o", "json"}, failingWriter{}, &stderr); code != cli.ExitFailed {
		t.Errorf("output not written: exit %d, want %d (stderr %q)", code, cli.ExitFailed, stderr.String())
	}
}

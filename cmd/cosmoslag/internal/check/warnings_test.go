package check

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// check prints the scaler's own warnings on the trigger's metadata, a
// misspelt key and a credential in plain metadata, in the table and as the
// JSON warnings array, naming keys only.
func TestCheckPrintsScalerWarnings(t *testing.T) {
	const secret = "c2VjcmV0c2VjcmV0"
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", strings.Replace(clitest.ScaledObjectYAML, `changeFeedLagThreshold: "50"`,
		`changeFeedLagThreshold: "50"
        changeFeedLagTreshold: "40"
        connection: "AccountEndpoint=https://x.documents.azure.com/;AccountKey=`+secret+`;"`, 1))
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"WARNING  secret parameter(s) connection of scaler azure-cosmosdb given in plain trigger metadata",
		"WARNING  Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb: KEDA ignores it; did you mean changeFeedLagThreshold?",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table does not say %q:\n%s", want, stdout)
		}
	}
	clitest.AssertNoSecret(t, secret, stdout, stderr)

	code, stdout, stderr = runCmd(t, "check", "-f", so, "--emulator", "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "connection") || !strings.Contains(r.Warnings[1], "changeFeedLagTreshold") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	clitest.AssertNoSecret(t, secret, stdout, stderr)

	// Without a warning the array is there, empty.
	clean := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML)
	_, stdout, _ = runCmd(t, "check", "-f", clean, "--emulator", "-o", "json")
	if !strings.Contains(stdout, `"warnings": []`) {
		t.Errorf("no empty warnings array:\n%s", stdout)
	}
}

// A processor whose leases were never checkpointed (no continuation) has
// no counted lease: at minReplicaCount 0 it would never be woken from
// zero, and check says so, in the table and the JSON; at minReplicaCount 1
// it does not.
func TestCheckWarnsWhenTheProcessorCannotWakeFromZero(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(false); err != nil { // never checkpointed
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("0", 30); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	atZero := clitest.WriteFile(t, dir, "zero.yaml", clitest.ScaledObjectYAML)
	absent := clitest.WriteFile(t, dir, "absent.yaml", strings.Replace(clitest.ScaledObjectYAML, "  minReplicaCount: 0\n", "", 1))
	atOne := clitest.WriteFile(t, dir, "one.yaml", strings.Replace(clitest.ScaledObjectYAML, "minReplicaCount: 0", "minReplicaCount: 1", 1))

	for _, so := range []string{atZero, absent} {
		code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
		if code != cli.ExitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !regexp.MustCompile(`(?m)^WARNING  no lease of processor order-projector is counted \(leases never checkpointed.*minReplicaCount is 0: the processor will not be woken from zero`).MatchString(stdout) {
			t.Errorf("%s: no wake-from-zero warning:\n%s", so, stdout)
		}
		code, stdout, _ = runCmd(t, "check", "-f", so, "--auth", ta, "-o", "json")
		var r checkReport
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK {
			t.Fatalf("exit %d, %v", code, err)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "minReplicaCount") || !strings.Contains(r.Warnings[0], "will not be woken from zero") {
			t.Errorf("json warnings: %q", r.Warnings)
		}
	}
	code, stdout, _ := runCmd(t, "check", "-f", atOne, "--auth", ta, "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK || len(r.Warnings) != 0 {
		t.Errorf("minReplicaCount 1: exit %d, %v, warnings %q", code, err, r.Warnings)
	}
}

// --emulator applies the real scaler's checks to the trigger as resolved
// without it, then replaces the account, and its banner lists exactly the
// settings it replaced, those a TriggerAuthentication supplies included.
func TestCheckEmulatorChecksBeforeReplacing(t *testing.T) {
	const key = "c2VjcmV0c2VjcmV0"
	conn := "AccountEndpoint=https://shop.documents.azure.com:443/;AccountKey=" + key + ";"
	good := clitest.ScaledObjectYAML + "---\n" + clitest.TriggerAuthYAML + "---\n" + secretYAML("shop", "cosmos-secrets", "stringData", "connectionString", conn)
	code, stdout, stderr := runCmd(t, "check", "-f", clitest.WriteFile(t, t.TempDir(), "good.yaml", good), "--emulator")
	if code != cli.ExitOK || !strings.Contains(stderr, "replaced: connection; not checked: whether the accounts exist") {
		t.Errorf("valid: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)

	for _, tc := range []struct{ name, from, to, want string }{
		{"lease key without leaseEndpoint", "processorName: order-projector", "processorName: order-projector\n        leaseCosmosDBKey: " + key, "leaseCosmosDBKey is set but neither leaseEndpoint"},
		{"connection without AccountEndpoint", "AccountEndpoint=https://shop.documents.azure.com:443/;", "", "AccountEndpoint"},
	} {
		in := strings.Replace(good, tc.from, tc.to, 1)
		code, stdout, stderr := runCmd(t, "check", "-f", clitest.WriteFile(t, t.TempDir(), "bad.yaml", in), "--emulator")
		if code != cli.ExitBadArgs || !strings.Contains(stderr, "checked before --emulator replaces the account") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q", tc.name, code, stderr)
		}
		clitest.AssertNoSecret(t, key, stdout, stderr)
	}
}

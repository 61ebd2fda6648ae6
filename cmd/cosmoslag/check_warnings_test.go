package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// check prints the scaler's own warnings on the trigger's metadata, a
// misspelt key and a credential in plain metadata, in the table and as the
// JSON warnings array, naming keys only.
func TestCheckPrintsScalerWarnings(t *testing.T) {
	const secret = "c2VjcmV0c2VjcmV0"
	so := writeFile(t, t.TempDir(), "so.yaml", strings.Replace(scaledObjectYAML, `changeFeedLagThreshold: "50"`,
		`changeFeedLagThreshold: "50"
        changeFeedLagTreshold: "40"
        connection: "AccountEndpoint=https://x.documents.azure.com/;AccountKey=`+secret+`;"`, 1))
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"WARNING  Warning: secret parameter(s) connection of scaler azure-cosmosdb given in plain trigger metadata",
		"WARNING  Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table does not say %q:\n%s", want, stdout)
		}
	}
	assertNoSecret(t, secret, stdout, stderr)

	code, stdout, stderr = runCmd(t, "check", "-f", so, "--emulator", "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "connection") || !strings.Contains(r.Warnings[1], "changeFeedLagTreshold") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	assertNoSecret(t, secret, stdout, stderr)

	// Without a warning the array is there, empty.
	clean := writeFile(t, t.TempDir(), "so.yaml", scaledObjectYAML+"---\n"+triggerAuthYAML)
	_, stdout, _ = runCmd(t, "check", "-f", clean, "--emulator", "-o", "json")
	if !strings.Contains(stdout, `"warnings": []`) {
		t.Errorf("no empty warnings array:\n%s", stdout)
	}
}

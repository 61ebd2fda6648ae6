package validate

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// noConnections listens on a local port and fails the test if anything
// connects to it during the test.
func noConnections(t *testing.T) string {
	t.Helper()
	endpoint, accepted := watchConnections(t)
	t.Cleanup(func() {
		// A poll started in the background would come within this grace.
		time.Sleep(100 * time.Millisecond)
		if accepted() {
			t.Error("validate opened a connection to the account")
		}
	})
	return endpoint
}

// The watcher does see a connection.
func TestWatchConnectionsSeesAConnection(t *testing.T) {
	endpoint, accepted := watchConnections(t)
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(endpoint, "https://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !accepted() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !accepted() {
		t.Error("a connection was not seen")
	}
}

// watchConnections listens on a local port; accepted reports whether
// anything has connected.
func watchConnections(t *testing.T) (endpoint string, accepted func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			seen.Store(true)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	accepted = seen.Load
	return "https://" + ln.Addr().String() + "/", accepted
}

const validateScaledJobYAML = `apiVersion: keda.sh/v1alpha1
kind: ScaledJob
metadata:
  name: order-batch
  namespace: shop
spec:
  jobTargetRef:
    template:
      spec:
        containers: [{name: batch, image: busybox}]
  triggers:
    - type: azure-cosmosdb
      metadata:
        databaseId: shop
        containerId: orders
        leaseDatabaseId: shop
        leaseContainerId: leases
        processorName: order-batch
      authenticationRef:
        name: cosmos-keys
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmos-keys
  namespace: shop
spec:
  secretTargetRef:
    - {parameter: endpoint, name: cosmos-secrets, key: endpoint}
    - {parameter: leaseEndpoint, name: cosmos-secrets, key: endpoint}
    - {parameter: cosmosDBKey, name: cosmos-secrets, key: key}
    - {parameter: leaseCosmosDBKey, name: cosmos-secrets, key: leaseKey}
`

// offlineAccount is an account at a listener that fails the test if it is
// ever connected to, a key for it and the Secret document holding both
// (connectionString, key, leaseKey, endpoint) for the test manifests.
func offlineAccount(t *testing.T) (endpoint, key, secrets string) {
	t.Helper()
	endpoint = noConnections(t)
	key = base64.StdEncoding.EncodeToString([]byte("a valid-looking account key!"))
	conn := "AccountEndpoint=" + endpoint + ";AccountKey=" + key + ";"
	secrets = "apiVersion: v1\nkind: Secret\nmetadata: {name: cosmos-secrets, namespace: shop}\nstringData:\n  connectionString: \"" + conn +
		"\"\n  key: \"" + key + "\"\n  leaseKey: \"" + key + "\"\n  endpoint: \"" + endpoint + "\"\n"
	return endpoint, key, secrets
}

// validate checks every azure-cosmosdb trigger of ScaledObjects and
// ScaledJobs with the scaler's constructor, offline: the endpoints point
// at a listener that fails the test if it is ever connected to.
func TestValidate(t *testing.T) {
	endpoint, key, secrets := offlineAccount(t)
	job := validateScaledJobYAML // its endpoints, in the TriggerAuthentication, are the Secret's
	dir := t.TempDir()
	valid := clitest.WriteFile(t, dir, "valid.yaml", clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML+"---\n"+job+"---\n"+secrets)

	code, stdout, stderr := runCmd(t, "validate", "-f", valid)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ScaledObject shop/order-projector trigger 1 (orders): valid\n",
		"ScaledJob shop/order-batch trigger 0: valid\n",
		"2 trigger(s) checked, 0 invalid\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)

	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"lease key without leaseEndpoint", "    - {parameter: leaseEndpoint, name: cosmos-secrets, key: endpoint}\n", "", "leaseEndpoint"},
		{"key not base64", `  key: "` + key + `"`, `  key: "not base64!"`, "cosmosDBKey"},
		{"threshold 0", `changeFeedLagThreshold: "50"`, `changeFeedLagThreshold: "0"`, "changeFeedLagThreshold"},
		{"misspelt key", `changeFeedLagThreshold: "50"`, `changeFeedLagTreshold: "50"`, "did you mean changeFeedLagThreshold?"},
	} {
		in := strings.Replace(clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML+"---\n"+job+"---\n"+secrets, tc.from, tc.to, 1)
		if in == clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML+"---\n"+job+"---\n"+secrets {
			t.Fatalf("%s: the replacement did not apply", tc.name)
		}
		code, stdout, stderr := runCmd(t, "validate", "-f", clitest.WriteFile(t, t.TempDir(), "in.yaml", in))
		wantCode := cli.ExitBadArgs
		if strings.HasPrefix(tc.want, "warning:") {
			wantCode = cli.ExitOK
		}
		t.Logf("%s: %s", tc.name, stdout)
		if code != wantCode || !strings.Contains(stdout, tc.want) {
			t.Errorf("%s: exit %d (want %d), stdout does not name %q:\n%s\nstderr:\n%s", tc.name, code, wantCode, tc.want, stdout, stderr)
		}
		if wantCode == cli.ExitBadArgs && !strings.Contains(stdout, ": invalid: ") {
			t.Errorf("%s: no invalid line:\n%s", tc.name, stdout)
		}
		clitest.AssertNoSecret(t, key, stdout, stderr)
	}

	// The control: check, given the same kind of manifests, does connect
	// to the endpoint they name.
	watched, accepted := watchConnections(t)
	watchedFile := clitest.WriteFile(t, dir, "watched.yaml", strings.ReplaceAll(clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML+"---\n"+secrets, endpoint, watched))
	if code, _, stderr := runCmd(t, "check", "-f", watchedFile, "--timeout", "1s"); code != cli.ExitFailed || !accepted() {
		t.Errorf("check against the watched endpoint: exit %d, connected %v, stderr %q", code, accepted(), stderr)
	}

	if code, _, stderr := runCmd(t, "validate", "-f", clitest.WriteFile(t, dir, "none.yaml", clitest.TriggerAuthYAML)); code != cli.ExitBadArgs || !strings.Contains(stderr, "no ScaledObject or ScaledJob") {
		t.Errorf("no trigger: exit %d, %q", code, stderr)
	}
}

// validate -o json prints exactly one JSON document on every outcome, as
// check -o json does: one entry per trigger with its verdict, the scaler's
// error naming the parameter and its warnings, the counts, and error and
// exitCode; the exit codes are the table's. Still offline.
func TestValidateJSON(t *testing.T) {
	_, key, secrets := offlineAccount(t)
	job := validateScaledJobYAML // its endpoints, in the TriggerAuthentication, are the Secret's
	all := clitest.ScaledObjectYAML + "---\n" + clitest.TriggerAuthYAML + "---\n" + job + "---\n" + secrets
	decode := func(t *testing.T, stdout string) validateReport {
		t.Helper()
		var r validateReport
		dec := json.NewDecoder(strings.NewReader(stdout))
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("not a JSON document: %v\n%s", err, stdout)
		}
		if dec.More() {
			t.Fatalf("more than one document:\n%s", stdout)
		}
		return r
	}

	code, stdout, stderr := runCmd(t, "validate", "-f", clitest.WriteFile(t, t.TempDir(), "valid.yaml", all), "-o", "json")
	r := decode(t, stdout)
	if code != cli.ExitOK || r.ExitCode != cli.ExitOK || r.Checked != 2 || r.Invalid != 0 || len(r.Triggers) != 2 || r.Error != "" {
		t.Fatalf("valid: exit %d, report %+v\nstderr:\n%s", code, r, stderr)
	}
	so, sj := r.Triggers[0], r.Triggers[1]
	if so.Kind != "ScaledObject" || so.Name != "shop/order-projector" || so.TriggerIndex != 1 || so.TriggerName != "orders" || !so.Valid ||
		sj.Kind != "ScaledJob" || sj.Name != "shop/order-batch" || !sj.Valid {
		t.Errorf("triggers: %+v", r.Triggers)
	}
	if !strings.Contains(stdout, `"warnings": []`) {
		t.Errorf("no empty warnings array:\n%s", stdout)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)

	invalid := strings.Replace(strings.Replace(all, `changeFeedLagThreshold: "50"`, `changeFeedLagThreshold: "0"
        changeFeedLagTreshold: "40"`, 1), `  key: "`+key+`"`, `  key: "not base64!"`, 1)
	code, stdout, stderr = runCmd(t, "validate", "-f", clitest.WriteFile(t, t.TempDir(), "invalid.yaml", invalid), "-o", "json")
	r = decode(t, stdout)
	if code != cli.ExitBadArgs || r.ExitCode != cli.ExitBadArgs || r.Checked != 2 || r.Invalid != 2 {
		t.Fatalf("invalid: exit %d, report %+v", code, r)
	}
	so, sj = r.Triggers[0], r.Triggers[1]
	if so.Valid || len(so.Problems) != 2 || !strings.Contains(so.Problems[0], "changeFeedLagTreshold") || !strings.Contains(so.Problems[1], "changeFeedLagThreshold must be greater than 0") || len(so.Warnings) != 0 {
		t.Errorf("ScaledObject: %+v", so)
	}
	if sj.Valid || !strings.Contains(sj.Error, "cosmosDBKey") {
		t.Errorf("ScaledJob: %+v", sj)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)

	// No trigger, a bad -o value with json requested, an unknown flag: one
	// document each, with the error and exit code 2.
	none := clitest.WriteFile(t, t.TempDir(), "none.yaml", clitest.TriggerAuthYAML)
	for _, args := range [][]string{
		{"validate", "-f", none, "-o", "json"},
		{"validate", "-o", "json"},
		{"validate", "-f", none, "-o", "json", "--bogus"},
	} {
		code, stdout, _ := runCmd(t, args...)
		r := decode(t, stdout)
		if code != cli.ExitBadArgs || r.ExitCode != cli.ExitBadArgs || r.Error == "" || strings.Contains(r.Error, "\n") {
			t.Errorf("%q: exit %d, report %+v", args, code, r)
		}
	}
}

// A misspelt parameter given with --set draws a warning naming the nearest
// parameter (in the YAML it is an error); keys the manifests reference (a
// Secret key, a ...FromEnv variable) and known parameters draw none.
func TestValidateWarnsOfUnknownSetKeys(t *testing.T) {
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", strings.Replace(clitest.ScaledObjectYAML, "processorName: order-projector",
		"processorName: order-projector\n        leaseConnectionFromEnv: LEASE_CONN", 1)+"---\n"+clitest.TriggerAuthYAML)
	const conn = "AccountEndpoint=https://shop.documents.azure.com:443/;AccountKey=c2VjcmV0c2VjcmV0;"
	yamlTyped := clitest.WriteFile(t, t.TempDir(), "typo.yaml", strings.Replace(clitest.ScaledObjectYAML, `changeFeedLagThreshold: "50"`, `changeFeedLagTreshold: "5"`, 1)+"---\n"+clitest.TriggerAuthYAML)
	code, fromYAML, _ := runCmd(t, "validate", "-f", yamlTyped, "--set", "connectionString="+conn)
	if want := "invalid: metadata key changeFeedLagTreshold is not an azure-cosmosdb parameter, so KEDA ignores it; did you mean changeFeedLagThreshold?\n"; code != cli.ExitBadArgs || !strings.Contains(fromYAML, want) {
		t.Fatalf("the YAML path: exit %d, does not say %q:\n%s", code, want, fromYAML)
	}
	const want = "ScaledObject shop/order-projector trigger 1 (orders): warning: Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb: KEDA ignores it; did you mean changeFeedLagThreshold?\n"

	code, stdout, stderr := runCmd(t, "validate", "-f", so, "--set", "connectionString="+conn, "--set", "LEASE_CONN="+conn, "--set", "changeFeedLagTreshold=5")
	if code != cli.ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("--set: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	if n := strings.Count(stdout, "warning:"); n != 1 {
		t.Errorf("%d warnings, want 1 (connectionString and LEASE_CONN are referenced):\n%s", n, stdout)
	}
	code, stdout, _ = runCmd(t, "validate", "-f", so, "--set", "connectionString="+conn, "--set", "LEASE_CONN="+conn, "--set", "changeFeedLagThreshold=5", "-o", "json")
	var r validateReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK || len(r.Triggers) != 1 || len(r.Triggers[0].Warnings) != 0 {
		t.Errorf("a known parameter: exit %d, %v, %+v", code, err, r.Triggers)
	}
	clitest.AssertNoSecret(t, "c2VjcmV0c2VjcmV0", stdout, stderr)
}

package check

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// A --set argument without key= may be a secret pasted alone: the error
// names the flag but never echoes the argument.
func TestCheckSetWithoutEqualsNeverEchoesTheValue(t *testing.T) {
	const secret = "AccountKeyLooking-SECRET-0123456789abcdef"
	code, stdout, stderr := runCmd(t, "check", "-f", "so.yaml", "--set", secret)
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "--set") || !strings.Contains(stderr, "key=value") {
		t.Errorf("code %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, "SECRET") {
		t.Fatalf("the --set argument was echoed: %q %q", stdout, stderr)
	}
}

// check bounds each request as KEDA's operator does, by
// KEDA_HTTP_DEFAULT_TIMEOUT (milliseconds, 3000 by default), says so, and
// names the variable when it is not a positive number.
func TestCheckUsesKEDAsHTTPTimeoutVariable(t *testing.T) {
	_, help, _ := runCmd(t, "check", "--help")
	if !strings.Contains(help, "KEDA_HTTP_DEFAULT_TIMEOUT") || !strings.Contains(help, "3000") {
		t.Errorf("check --help does not describe the per-request timeout:\n%s", help)
	}
	so := clitest.WriteMinimalScaledObject(t, "")
	for _, value := range []string{"abc", "0", "-5"} {
		t.Setenv("KEDA_HTTP_DEFAULT_TIMEOUT", value)
		code, _, stderr := runCmd(t, "check", "-f", so, "--emulator")
		if code != cli.ExitBadArgs || !strings.Contains(stderr, "KEDA_HTTP_DEFAULT_TIMEOUT") {
			t.Errorf("KEDA_HTTP_DEFAULT_TIMEOUT=%s: code %d, stderr %q", value, code, stderr)
		}
	}
}

// --emulator says which checks it skips and which account settings of the
// trigger it ignored.
func TestCheckEmulatorSaysWhatItSkips(t *testing.T) {
	so := clitest.WriteMinimalScaledObject(t, `, endpoint: "https://shop.documents.azure.com:443/", connectionFromEnv: COSMOS`)
	code, _, stderr := runCmd(t, "check", "-f", so, "--emulator")
	if code != cli.ExitOK {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"not checked", "credentials", "replaced: connectionFromEnv, endpoint;", "COSMOS, which has no local value"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// A ScaledJob is recognised and named, not reported as "0 ScaledObjects".
func TestCheckRecognisesAScaledJob(t *testing.T) {
	dir := t.TempDir()
	sj := clitest.WriteFile(t, dir, "sj.yaml", `apiVersion: keda.sh/v1alpha1
kind: ScaledJob
metadata: {name: orders-job}
spec:
  jobTargetRef: {template: {spec: {containers: [{name: c, image: x}]}}}
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: p}
`)
	code, _, stderr := runCmd(t, "check", "-f", sj, "--emulator")
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "ScaledJob orders-job") || strings.Contains(stderr, "found 0") {
		t.Errorf("code %d, stderr %q", code, stderr)
	}
}

// check without its trigger names both forms; the cluster form without a
// kubeconfig says where it looked and what else to do, not client-go's
// KUBERNETES_MASTER.
func TestCheckSaysHowToGiveTheTrigger(t *testing.T) {
	code, stdout, stderr := runCmd(t, "check")
	if want := "cosmoslag check: give the trigger: -f scaledobject.yaml (a file), or -n NAMESPACE SCALEDOBJECT (from the cluster); see --help\n"; code != cli.ExitBadArgs || stdout != "" || stderr != want {
		t.Errorf("bare check: exit %d, stdout %q, stderr %q, want %q", code, stdout, stderr, want)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	_, _, err := defaultConnectCluster("", "")
	if err == nil || err.Error() != errNoKubeconfig.Error() || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no kubeconfig: %v, want %q", err, errNoKubeconfig)
	}
}

package check

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

func TestCheckEmulatorTable(t *testing.T) {
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta, "--emulator")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	for _, re := range []string{
		`(?m)^ScaledObject\s+shop/order-projector, trigger 1 \(orders\) \[embedded server\]$`,
		`(?m)^LEASE\s+FORMAT\s+MODE\s+OWNER\s+CONTINUATION\s+LAG\s+OLDEST PENDING$`,
		`(?m)^0\s+v0\s+LatestVersion\s+order-projector-1\s+"10"\s+120\s+\d+s$`,
		`(?m)^1\s+v0\s+LatestVersion\s+order-projector-2\s+"10"\s+0\s+-$`,
		`(?m)^2\s+v0\s+LatestVersion\s+-\s+"10"\s+35\s+\d+s$`,
		`(?m)^Total lag\s+155 over 3 lease\(s\)$`,
		`(?m)^Active partitions\s+2$`,
		`(?m)^Metric\s+100 = min\(total lag 155, 2 active partition\(s\) × 50\)$`,
		`(?m)^Active\s+yes`,
		`(?m)^Replicas\s+0 → 2: KEDA activates 0 → 1; HPA: ceil\(100 / 50\) = 2 \[min 0, max 8\]$`,
		`(?m)^Metric\s+s1-azure-cosmosdb-leases-order-projector \(AverageValue, target 50`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s", re)
		}
	}
}

func TestCheckEmulatorJSON(t *testing.T) {
	dir := t.TempDir()
	// One file holding both objects; the trigger chosen by name.
	so := clitest.WriteFile(t, dir, "all.yaml", clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML)
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--emulator", "-o", "json", "--current-replicas", "3", "--trigger", "orders")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	if r.TotalLag != 155 || r.ActivePartitions != 2 || r.Metric != 100 || !r.Active || r.Threshold != 50 || r.Activation != 0 {
		t.Errorf("totals: %+v", r)
	}
	if len(r.Leases) != 3 || r.Leases[0].Lag != 120 || r.Leases[1].Lag != 0 || r.Leases[2].Lag != 35 || r.Leases[0].Owner != "order-projector-1" || r.Leases[0].Mode != "LatestVersion" {
		t.Errorf("leases: %+v", r.Leases)
	}
	// The HPA recommends 2, but its scale-down stabilization window
	// (300 s by default) holds 3 until it has passed.
	if r.Replicas == nil || r.Replicas.Current != 3 || r.Replicas.Desired != 3 || r.Replicas.AfterWindow == nil || *r.Replicas.AfterWindow != 2 ||
		r.Replicas.ScaleDownWindowSeconds != 300 || r.Replicas.Max != 8 {
		t.Errorf("replicas: %+v", r.Replicas)
	}
	if r.TriggerIndex != 1 || r.MetricName != "s1-azure-cosmosdb-leases-order-projector" || r.Requests == 0 {
		t.Errorf("trigger %d, metric %q, requests %d", r.TriggerIndex, r.MetricName, r.Requests)
	}
}

func TestCheckAccountWithSecretsAndStaleParent(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	env := clitest.WriteFile(t, dir, "secrets.env", "# cosmos-secrets\nconnectionString="+srv.ConnectionString()+"\n")

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta, "--env-file", env, "--current-replicas", "1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	for _, re := range []string{
		`(?m)^0\s+v0\s+LatestVersion\s+host-a\s+"0"\s+7\s+\d+s\s+-$`,
		`(?m)^1\s+v0\s+LatestVersion\s+-\s+"0"\s+stale parent\s+-\s+split into 2, 3$`,
		`(?m)^Total lag\s+7 over 2 lease\(s\), 1 stale parent\(s\) \(1 of a split range\)`,
		`(?m)^Active partitions\s+1$`,
		`(?m)^Metric\s+7 = `,
		`(?m)^Replicas\s+1 → 1: HPA: ceil\(7 / 50\) = 1`,
		`(?m)^Cost\s+\d+ request\(s\), [0-9.]+ RU, \d+ ms; a split was seen and the estimate redone$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s", re)
		}
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

func TestCheckFromEnvAndSet(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	dir := t.TempDir()
	// No TriggerAuthentication: the connection comes from the scale target's
	// environment (connectionFromEnv), supplied here by --set; the threshold
	// is overridden by --set too.
	so := clitest.WriteFile(t, dir, "so.yaml", strings.Replace(
		strings.Replace(clitest.ScaledObjectYAML, "      authenticationRef:\n        name: cosmos-auth\n", "", 1),
		"processorName: order-projector", "processorName: order-projector\n        connectionFromEnv: ORDERS_COSMOS", 1))
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--set", "ORDERS_COSMOS="+srv.ConnectionString(),
		"--set", "changeFeedLagThreshold=5", "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	// Lag 7 on one partition: metric min(7, 1 × 5) = 5; from 0 replicas
	// KEDA activates to 1 and the HPA keeps ceil(5/5) = 1.
	if r.Threshold != 5 || r.TotalLag != 7 || r.Metric != 5 || r.StaleParents != 1 || r.Replicas.Desired != 1 {
		t.Errorf("report: %+v", r)
	}
	if len(r.Leases) != 2 || !r.Leases[1].StaleParent {
		t.Errorf("leases: %+v", r.Leases)
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

func TestCheckSetOverridesTriggerAuthentication(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	// The secret behind the TriggerAuthentication has no local value, but
	// the parameter it fills is given directly.
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta, "--set", "connection="+srv.ConnectionString())
	if code != cli.ExitOK || !strings.Contains(stdout, "Total lag          7 over 2 lease(s)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

func TestCheckWrongKey(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	dir := t.TempDir()
	wrongKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("not the account key ", 4)))
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	env := clitest.WriteFile(t, dir, "secrets.env", fmt.Sprintf("connectionString=\"AccountEndpoint=%s;AccountKey=%s;\"\n", clitest.OverTLS(t, srv), wrongKey))

	for _, format := range []string{"table", "json"} {
		code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta, "--env-file", env, "-o", format)
		if code != cli.ExitFailed {
			t.Fatalf("-o %s: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", format, code, stdout, stderr)
		}
		t.Logf("-o %s: stderr: %s", format, stderr)
		if !strings.Contains(stderr, "401") {
			t.Errorf("-o %s: stderr does not give the cause: %q", format, stderr)
		}
		if format == "json" {
			var r checkReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil || !strings.Contains(r.Error, "401") {
				t.Errorf("-o json: error field %q (%v)", r.Error, err)
			}
		}
		clitest.AssertNoSecret(t, wrongKey, stdout, stderr)
		clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
	}
}

func TestCheckBadArguments(t *testing.T) {
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	twoTriggers := clitest.WriteFile(t, dir, "two.yaml", clitest.ScaledObjectYAML+`    - type: azure-cosmosdb
      metadata:
        databaseId: shop
        containerId: payments
        leaseDatabaseId: shop
        leaseContainerId: leases
        processorName: payment-projector
`)
	badThreshold := clitest.WriteFile(t, dir, "bad.yaml", strings.Replace(clitest.ScaledObjectYAML, `changeFeedLagThreshold: "50"`, `changeFeedLagThreshold: "0"`, 1))
	notYAML := clitest.WriteFile(t, dir, "broken.yaml", "kind: ScaledObject\napiVersion: keda.sh/v1alpha1\nspec: [unclosed\n")
	badEnv := clitest.WriteFile(t, dir, "bad.env", "just a line\n")
	secretValue := "AccountEndpoint=https://x.documents.azure.com/;AccountKey=c2VjcmV0c2VjcmV0;"

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give the trigger: -f scaledobject.yaml (a file), or -n NAMESPACE SCALEDOBJECT (from the cluster); see --help"},
		{[]string{"-f", so, "-o", "xml"}, "-o must be table or json"},
		{[]string{"-f", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"-f", notYAML}, "broken.yaml"},
		{[]string{"-f", so}, `pass a file holding it with --auth`},
		{[]string{"-f", so, "--auth", ta}, `secret "cosmos-secrets" key "connectionString"`},
		{[]string{"-f", twoTriggers, "--auth", ta, "--emulator"}, "choose one with --trigger N (index in spec.triggers): 1 (orders), 2"},
		{[]string{"-f", so, "--trigger", "0", "--emulator"}, `--trigger "0"`},
		{[]string{"-f", badThreshold, "--auth", ta, "--set", "connectionString=" + secretValue}, "changeFeedLagThreshold must be greater than 0"},
		{[]string{"-f", so, "--env-file", badEnv}, "expected KEY=VALUE"},
		{[]string{"-f", so, "--set", "novalue"}, "--set expects key=value"},
		{[]string{"-f", so, "--current-replicas", "-1"}, "--current-replicas"},
		{[]string{"-f", so, "--no-such-flag"}, "flag provided but not defined"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"check"}, tc.args...)...)
		if code != cli.ExitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %v: code %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
		clitest.AssertNoSecret(t, "c2VjcmV0c2VjcmV0", stdout, stderr)
	}
}

func TestCheckJavaEPKLeases(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, "java-v1")
	tokens, err := proc.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("1", 9); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	t.Setenv("connectionString", srv.ConnectionString()) // the process environment is the last source

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	// EPK tokens are "min-max"; the decoder takes the LSN out of Java's
	// Base64 continuation state.
	for i, lag := range []string{"0", "9"} {
		re := `(?m)^` + regexp.QuoteMeta(tokens[i]) + `\s+v1\s+LatestVersion\s+-\s+"0"\s+` + lag + `\s+\S+$`
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("no row for lease %s with lag %s", tokens[i], lag)
		}
	}

	code, stdout, _ = runCmd(t, "check", "-f", so, "--auth", ta, "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	if len(r.Leases) != 2 || r.Leases[1].Token != tokens[1] || r.Leases[1].Lag != 9 || r.TotalLag != 9 {
		t.Errorf("json: %+v", r)
	}
}

// check shows the mode each lease is read in; an all-versions-and-deletes
// processor's pending deletes are its lag.
func TestCheckAllVersionsAndDeletesLeases(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 1, "dotnet-v0")
	if _, err := data.Upsert(map[string]any{"id": "o1", "pk": "p"}); err != nil {
		t.Fatal(err)
	}
	proc.Mode = cosmostest.AllVersionsAndDeletes
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	data.Delete("o1")
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	t.Setenv("connectionString", srv.ConnectionString())

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if re := `(?m)^0\s+v0\s+AllVersionsAndDeletes\s+-\s+"1"\s+1\s+\d+s$`; !regexp.MustCompile(re).MatchString(stdout) {
		t.Errorf("output does not match %s:\n%s", re, stdout)
	}
}

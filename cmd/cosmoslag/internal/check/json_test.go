package check

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// clitest.OneJSONDocument decodes stdout, which must hold exactly one JSON object.
// UnmarshalJSON decodes check's JSON document in the tests: encoding/json
// does not allocate an embedded pointer to an unexported struct, so the
// estimate's part is allocated first and dropped again when the document
// has no estimate (no "leases").
func (r *checkReport) UnmarshalJSON(b []byte) error {
	type plain checkReport
	p := plain{checkEstimate: &checkEstimate{}}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if _, ok := fields["leases"]; !ok {
		p.checkEstimate = nil
	}
	*r = checkReport(p)
	return nil
}

// With -o json every outcome prints one JSON document: flag, file and
// configuration errors (exit 2) included.
func TestCheckJSONOnConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "json", "-f", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"-o", "json", "-f", so}, "pass a file holding it with --auth"},
		{[]string{"-o=json", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"-o", "json", "-f", so, "--current-replicas", "-1"}, "--current-replicas"},
		{[]string{"-o", "json", "-f", so, "--set", "novalue"}, "--set expects key=value"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"check"}, tc.args...)...)
		if code != cli.ExitBadArgs || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %v: code %d, stderr %q", tc.args, code, stderr)
			continue
		}
		doc := clitest.OneJSONDocument(t, stdout)
		if msg, _ := doc["error"].(string); !strings.Contains(msg, tc.want) || doc["exitCode"] != float64(cli.ExitBadArgs) {
			t.Errorf("check %v: JSON %v; want error %q and exitCode 2", tc.args, doc, tc.want)
		}
		for _, k := range []string{"metric", "totalLag", "active", "activePartitions"} {
			if _, ok := doc[k]; ok {
				t.Errorf("check %v: a configuration error carries %q: %v", tc.args, k, doc)
			}
		}
	}
}

// A failed estimate's JSON has the error and no metric, totalLag or active
// a script could read as a real zero; a successful one has them, zero or not.
func TestCheckJSONFailedEstimateHasNoZeroMetric(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ScaledObjectYAML)
	wrongKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("not the account key ", 4)))
	conn := fmt.Sprintf("AccountEndpoint=%s;AccountKey=%s;", clitest.OverTLS(t, srv), wrongKey)

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--set", "connection="+conn, "-o", "json")
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	doc := clitest.OneJSONDocument(t, stdout)
	if msg, _ := doc["error"].(string); !strings.Contains(msg, "401") || doc["exitCode"] != float64(cli.ExitFailed) {
		t.Errorf("JSON %v: want the 401 error and exitCode 1", doc)
	}
	for _, k := range []string{"metric", "totalLag", "active", "activePartitions", "leases", "replicas"} {
		if _, ok := doc[k]; ok {
			t.Errorf("a failed estimate carries %q: %s", k, stdout)
		}
	}
	clitest.AssertNoSecret(t, wrongKey, stdout, stderr)

	code, stdout, stderr = runCmd(t, "check", "-f", so, "--set", "connection="+srv.ConnectionString(), "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	doc = clitest.OneJSONDocument(t, stdout)
	for _, k := range []string{"metric", "totalLag", "active", "activePartitions", "leases", "replicas"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("a successful estimate lacks %q: %s", k, stdout)
		}
	}
	if _, ok := doc["error"]; ok || doc["exitCode"] != float64(cli.ExitOK) {
		t.Errorf("a successful estimate: %s", stdout)
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

// The --help example "check -f so.yaml --set connection=… -o json" works
// when the ScaledObject has an authenticationRef and no --auth file is
// given, and says where the account parameters came from.
func TestCheckSetSatisfiesAuthenticationRef(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ScaledObjectYAML)
	code, stdout, stderr := runCmd(t, "check", "-f", so, "--set", "connection="+srv.ConnectionString(), "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.checkEstimate == nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if r.TotalLag != 7 || r.StaleParents != 1 {
		t.Errorf("totals: %+v", *r.checkEstimate)
	}
	if !strings.Contains(stderr, "cosmos-auth") || !strings.Contains(stderr, "--set: connection") {
		t.Errorf("stderr does not say the TriggerAuthentication's parameters came from --set: %q", stderr)
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

package repo

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The README's statements about files and versions match them: the
// ServiceMonitor lives in the monitoring manifest, not in the scaler's, and
// the Node.js version named for the pinned @azure/cosmos is the one its
// package-lock entry declares.
func TestReadmeFactsMatchTheRepository(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if strings.Contains(readRepoFile(t, "deploy/external-scaler.yaml"), "kind: ServiceMonitor") {
		t.Error("deploy/external-scaler.yaml holds a ServiceMonitor; the README says it lives in deploy/external-scaler-monitoring.yaml")
	}
	if !strings.Contains(readRepoFile(t, "deploy/external-scaler-monitoring.yaml"), "kind: ServiceMonitor") {
		t.Error("deploy/external-scaler-monitoring.yaml has no ServiceMonitor")
	}
	if !strings.Contains(readme, "`deploy/external-scaler-monitoring.yaml` is a Service and a `ServiceMonitor`") {
		t.Error("the README does not say where the ServiceMonitor is")
	}

	var lock struct {
		Packages map[string]struct {
			Version string
			Engines struct{ Node string }
		}
	}
	if err := json.Unmarshal([]byte(readRepoFile(t, "tests/sdk/js/package-lock.json")), &lock); err != nil {
		t.Fatal(err)
	}
	cosmos := lock.Packages["node_modules/@azure/cosmos"]
	major := regexp.MustCompile(`^>=\s*(\d+)`).FindStringSubmatch(cosmos.Engines.Node)
	if cosmos.Version == "" || major == nil {
		t.Fatalf("package-lock.json: @azure/cosmos %q, engines.node %q", cosmos.Version, cosmos.Engines.Node)
	}
	row := regexp.MustCompile("(?m)^\\| JavaScript `@azure/cosmos`.*$").FindString(readme)
	if want := "| " + cosmos.Version + " | Node.js ≥ " + major[1]; !strings.Contains(row, want) {
		t.Errorf("the README's SDK table row %q does not say %q (package-lock.json: @azure/cosmos %s needs node %s)", row, want, cosmos.Version, cosmos.Engines.Node)
	}
}

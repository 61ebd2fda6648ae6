package repo

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The docs' statements about files and versions match them (moved from the
// README into docs/external-scaler.md and docs/sdk-conformance.md): the
// ServiceMonitor lives in the monitoring manifest, not in the scaler's, and
// the Node.js version named for the pinned @azure/cosmos is the one its
// package-lock entry declares.
func TestReadmeFactsMatchTheRepository(t *testing.T) {
	externalScaler := readRepoFile(t, "docs/external-scaler.md")
	sdkConformance := readRepoFile(t, "docs/sdk-conformance.md")
	if strings.Contains(readRepoFile(t, "deploy/external-scaler.yaml"), "kind: ServiceMonitor") {
		t.Error("deploy/external-scaler.yaml holds a ServiceMonitor; docs/external-scaler.md says it lives in deploy/external-scaler-monitoring.yaml")
	}
	if !strings.Contains(readRepoFile(t, "deploy/external-scaler-monitoring.yaml"), "kind: ServiceMonitor") {
		t.Error("deploy/external-scaler-monitoring.yaml has no ServiceMonitor")
	}
	if !strings.Contains(externalScaler, "`deploy/external-scaler-monitoring.yaml` is a Service and a `ServiceMonitor`") {
		t.Error("docs/external-scaler.md does not say where the ServiceMonitor is")
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
	row := regexp.MustCompile("(?m)^\\| JavaScript `@azure/cosmos`.*$").FindString(sdkConformance)
	if want := "| " + cosmos.Version + " | Node.js ≥ " + major[1]; !strings.Contains(row, want) {
		t.Errorf("docs/sdk-conformance.md's SDK table row %q does not say %q (package-lock.json: @azure/cosmos %s needs node %s)", row, want, cosmos.Version, cosmos.Engines.Node)
	}
}

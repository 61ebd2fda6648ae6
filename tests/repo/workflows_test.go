package repo

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The GitHub workflows pass actionlint (pinned, from the Go module proxy),
// CI runs .ci/run, and a tag releases the image, the chart and the
// cosmoslag binaries.
func TestWorkflows(t *testing.T) {
	if testing.Short() {
		t.Skip("installs actionlint")
	}
	files, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("workflows: %v %v", files, err)
	}
	actionlint := tool(t, "ACTIONLINT_PKG")
	cmd := exec.Command(actionlint, "-no-color")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}

	ci := readRepoFile(t, ".github/workflows/ci.yml")
	if !strings.Contains(ci, "run: bash .ci/run") || !strings.Contains(ci, "pull_request") {
		t.Error("ci.yml does not run .ci/run on pull requests")
	}
	release := readRepoFile(t, ".github/workflows/release.yml")
	for _, want := range []string{"tags:", "make image-push", "IMAGE_TAR=", "helm push", "oci://", "make dist", "gh release create", "bin/dist/*"} {
		if !strings.Contains(release, want) {
			t.Errorf("release.yml does not contain %q", want)
		}
	}
}

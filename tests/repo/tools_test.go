package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// tool returns the path of a pinned Go module proxy tool: the Makefile's
// <VAR> := module/cmd/name@version, installed by `make tools` into
// .cache/bin, or installed there now when missing (offline outside CI, the
// test is skipped, saying so).
func tool(t *testing.T, makeVar string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + makeVar + ` := (\S+@v\S+)$`).FindStringSubmatch(readRepoFile(t, "Makefile"))
	if m == nil {
		t.Fatalf("the Makefile pins no %s := pkg@version", makeVar)
	}
	pkg := m[1]
	bin, err := filepath.Abs(filepath.Join(root, ".cache", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(regexp.MustCompile(`@.*$`).ReplaceAllString(pkg, ""))
	path := filepath.Join(bin, name)
	// go install is a no-op when the pinned version is installed already.
	cmd := exec.Command("go", "install", pkg)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	testhelp.NetworkStep(t, "go install "+pkg, "the Go module proxy", err, out)
	return path
}

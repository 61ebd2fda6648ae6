package repo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const modulePath = "github.com/kedacore/keda-cosmosdb-scaler"

// goBuild runs go build in dir with env added to the test's environment
// (GOWORK off; the module cache must already hold every dependency, as it
// does after go mod download) and returns the binary's path.
func goBuild(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off"}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out.String())
	}
}

// runVersion runs `bin --version` and returns its one line of output.
func runVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commandNames are the module's commands (cmd/*/main.go).
func commandNames(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if err != nil || len(mains) < 2 {
		t.Fatalf("commands found: %v (%v)", mains, err)
	}
	var names []string
	for _, m := range mains {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	return names
}

// --version names the version and the commit: what an image or release
// build stamps with -ldflags -X, else the VCS revision the toolchain
// records in a git checkout.
func TestVersionNamesVersionAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both commands")
	}
	head := strings.TrimSpace(run(t, "git", "rev-parse", "HEAD"))
	dir := t.TempDir()
	for _, name := range commandNames(t) {
		t.Run(name, func(t *testing.T) {
			stamped := filepath.Join(dir, name+"-stamped")
			const v, c = "v9.8.7-test", "fedcba9876543210fedcba9876543210fedcba98"
			goBuild(t, root, []string{"CGO_ENABLED=0"}, "-trimpath", "-buildvcs=false", "-o", stamped,
				"-ldflags", "-X "+modulePath+"/internal/version.version="+v+" -X "+modulePath+"/internal/version.commit="+c,
				"./cmd/"+name)
			want := name + " " + v + " commit fedcba987654 go1."
			if got := runVersion(t, stamped); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, runtime.GOOS+"/"+runtime.GOARCH) {
				t.Errorf("stamped build: --version printed %q, want %q… %s/%s", got, want, runtime.GOOS, runtime.GOARCH)
			}

			// Go stamps vcs.revision only where .git is a directory (a clone,
			// as in CI), not in a linked work tree (git worktree: a .git file).
			if info, err := os.Stat(filepath.Join(root, ".git")); err != nil || !info.IsDir() {
				t.Logf("%s/.git is not a directory (a git worktree?): Go records no vcs.revision there; not checked", root)
				return
			}
			fromGit := filepath.Join(dir, name+"-vcs")
			goBuild(t, root, []string{"CGO_ENABLED=0"}, "-trimpath", "-buildvcs=true", "-o", fromGit, "./cmd/"+name)
			got := runVersion(t, fromGit)
			if want := " commit " + head[:12]; !strings.HasPrefix(got, name+" ") || !strings.Contains(got, want) {
				t.Errorf("build from the git checkout: --version printed %q, want it to contain %q", got, want)
			}
		})
	}
}

package repo

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// inTreeFiles is what `hack/intree.sh list` prints: the files make intree and
// make intree-patch copy into KEDA, repository-relative, sorted.
func inTreeFiles(t *testing.T) []string {
	t.Helper()
	out := strings.TrimSpace(run(t, "bash", "hack/intree.sh", "list"))
	if out == "" {
		t.Fatal("hack/intree.sh list printed no file")
	}
	return strings.Split(out, "\n")
}

// The files that go in-tree, chosen by hand from the patterns KEDA's layout
// allows, agree with the script's selection: the script copies exactly the
// scaler and its test, the azure_cosmosdb_* files of package azure (not the
// benchmarks, nor the home-only azure_cosmosdb_inspect.go), the two e2e
// suites and their helper.
func TestInTreeSelectionIsKEDAsLayout(t *testing.T) {
	listed := inTreeFiles(t)

	var want []string
	for _, name := range []string{"pkg/scalers/azure_cosmosdb_scaler.go", "pkg/scalers/azure_cosmosdb_scaler_test.go", "tests/scalers/azure/helper/CosmosDBHelper.go"} {
		want = append(want, name)
	}
	azure, err := filepath.Glob(filepath.Join(root, "pkg/scalers/azure/azure_cosmosdb_*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range azure {
		if !strings.HasSuffix(f, "_bench_test.go") && filepath.Base(f) != "azure_cosmosdb_inspect.go" {
			want = append(want, filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator))))
		}
	}
	for _, suite := range []string{"tests/scalers/azure/azure_cosmosdb", "tests/scalers/azure/azure_cosmosdb_aad_wi"} {
		err := filepath.WalkDir(filepath.Join(root, suite), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, path)
				want = append(want, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Errorf("e2e suite %s: %v", suite, err)
		}
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("hack/intree.sh list:\n  %s\nwant:\n  %s", strings.Join(listed, "\n  "), strings.Join(want, "\n  "))
	}
}

// Every in-tree file exists, sits where KEDA's layout puts it (no nested
// package, no internal/), is not one of the files that stay home, and neither
// imports nor names the emulator, cosmoslag or the deeper tests.
func TestInTreeFilesStayInKEDAsLayout(t *testing.T) {
	module := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))[1]
	allowed := regexp.MustCompile(`^(pkg/scalers/azure_cosmosdb_scaler(_test)?\.go|pkg/scalers/azure/azure_cosmosdb_[a-z0-9_]+\.go|tests/scalers/azure/azure_cosmosdb(_aad_wi)?/[^/]+|tests/scalers/azure/helper/CosmosDBHelper\.go)$`)
	// What an in-tree file may import from this module: the packages that
	// exist in KEDA at the same path.
	importable := []string{module + "/pkg/scalers", module + "/pkg/scalers/azure", module + "/tests/scalers/azure/helper"}
	homeOnly := regexp.MustCompile(`(?i)cosmoslag|cosmostest|tests/emulator|tests/local|tests/sdk|BENCHMARKS\.md|keda_adapter|azure_cosmosdb_inspect`)

	tests := map[string]int{}
	for _, name := range inTreeFiles(t) {
		switch {
		case !allowed.MatchString(name):
			t.Errorf("%s: not a path of KEDA's layout for this scaler", name)
		case strings.Contains(name, "/internal/"), strings.HasSuffix(name, "keda_adapter.go"),
			strings.HasSuffix(name, "_inspect.go"), strings.HasSuffix(name, "_bench_test.go"):
			t.Errorf("%s stays in this repository; it must not be copied", name)
		}
		info, err := os.Stat(filepath.Join(root, name))
		if err != nil || !info.Mode().IsRegular() {
			t.Errorf("%s: listed but not a file (%v)", name, err)
			continue
		}
		text := readRepoFile(t, name)
		for i, line := range strings.Split(text, "\n") {
			if homeOnly.MatchString(line) {
				t.Errorf("%s:%d names what stays in this repository: %s", name, i+1, strings.TrimSpace(line))
			}
		}
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		if strings.HasPrefix(name, "pkg/") && strings.HasSuffix(name, "_test.go") {
			tests[filepath.Dir(name)]++
		}
		if strings.HasPrefix(name, "pkg/") && regexp.MustCompile(`(?m)^func TestMain\(`).MatchString(text) {
			t.Errorf("%s declares TestMain: in KEDA it would run for every scaler's tests of the package", name)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, text, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(path, module+"/") && !slices.Contains(importable, path) {
				t.Errorf("%s imports %s, which KEDA does not have (only %v are rewritten to KEDA's packages)", name, path, importable)
			}
		}
	}
	if n := tests["pkg/scalers/azure"]; n > 2 {
		t.Errorf("%d test files in pkg/scalers/azure go in-tree; at most two (azure_cosmosdb_test.go and a fake)", n)
	}
	if n := tests["pkg/scalers"] + tests["pkg/scalers/azure"]; n > 4 {
		t.Errorf("%d unit test files go in-tree; KEDA's most for one scaler is 3, keep it at four at most", n)
	}
}

// Our package azure is exactly what goes in-tree plus the one stand-in for the
// names KEDA's azure package already has (and benchmarks, which stay home):
// anything else there would be left behind by the copy and break KEDA's build.
func TestAzurePackageHoldsOnlyInTreeFiles(t *testing.T) {
	listed := inTreeFiles(t)
	entries, err := os.ReadDir(filepath.Join(root, "pkg/scalers/azure"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			t.Errorf("pkg/scalers/azure/%s: a nested package; KEDA's azure package has none", name)
		case name == "keda_adapter.go", name == "azure_cosmosdb_inspect.go", strings.HasSuffix(name, "_bench_test.go"), !strings.HasSuffix(name, ".go"):
		case !slices.Contains(listed, "pkg/scalers/azure/"+name):
			t.Errorf("pkg/scalers/azure/%s is neither copied in-tree (azure_cosmosdb_*.go) nor home-only (keda_adapter.go, azure_cosmosdb_inspect.go)", name)
		}
	}
	// KEDA's e2e layout: the two suites and the helper, nothing else; a third
	// suite or a second helper file would stay behind.
	suites, err := os.ReadDir(filepath.Join(root, "tests/scalers/azure"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range suites {
		if !slices.Contains([]string{"azure_cosmosdb", "azure_cosmosdb_aad_wi", "helper"}, e.Name()) {
			t.Errorf("tests/scalers/azure/%s: KEDA has two Cosmos DB suites, azure_cosmosdb and azure_cosmosdb_aad_wi, and their helper", e.Name())
		}
	}
	helpers, err := os.ReadDir(filepath.Join(root, "tests/scalers/azure/helper"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range helpers {
		if e.Name() != "CosmosDBHelper.go" {
			t.Errorf("tests/scalers/azure/helper/%s would not be copied beside KEDA's helpers; keep the helper in CosmosDBHelper.go", e.Name())
		}
	}
	// The same for the scaler's own files in pkg/scalers.
	scalers, err := filepath.Glob(filepath.Join(root, "pkg/scalers/azure_cosmosdb_*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range scalers {
		name := filepath.Base(f)
		if name == "azure_cosmosdb_inspect.go" || strings.HasSuffix(name, "_bench_test.go") {
			continue
		}
		if !slices.Contains(listed, "pkg/scalers/"+name) {
			t.Errorf("pkg/scalers/%s is named like the scaler's in-tree files but is not copied; KEDA's tree has only azure_cosmosdb_scaler.go and its test", name)
		}
	}
}

// hack/pr/endpoint-rule.diff is the endpoint rule, commit 2 of the pull
// request's series: make intree-patch reverses it on the copied files for
// commit 1 and applies it again for commit 2. It must still apply in reverse
// to the working tree, so it cannot rot unnoticed when the rule or the lines
// around it change, and it may only touch files that go in-tree under pkg/.
func TestEndpointRuleDiffAppliesInReverse(t *testing.T) {
	const diff = "hack/pr/endpoint-rule.diff"
	if strings.TrimSpace(readRepoFile(t, diff)) == "" {
		t.Fatalf("%s is empty", diff)
	}
	cmd := exec.Command("git", "apply", "-R", "--check", diff)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply -R --check %s: %v\n%s\nthe diff is out of date: regenerate it as the header of hack/intree.sh says", diff, err, out)
	}
	listed := inTreeFiles(t)
	for _, line := range strings.Split(strings.TrimSpace(run(t, "git", "apply", "--numstat", diff)), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("git apply --numstat %s: unexpected line %q", diff, line)
		}
		if name := fields[2]; !strings.HasPrefix(name, "pkg/") || !slices.Contains(listed, name) {
			t.Errorf("%s changes %s; it may only change files that go in-tree under pkg/", diff, name)
		}
	}
}

// The endpoint rule is a security fix, reported privately as KEDA's
// SECURITY.md asks: the pull request's public text (its description and
// commit messages) says that the rule is tightened and points to the
// private report, and does not describe how the old rule could be abused.
func TestPullRequestTextDoesNotDescribeTheEndpointIssue(t *testing.T) {
	public := []string{"hack/pr/PULL_REQUEST.md.tmpl", "hack/intree-commit-message.txt", "hack/intree-commit-message-endpoint.txt", "hack/intree-commit-message-e2e.txt"}
	words := regexp.MustCompile(`(?i)\b(attack\w*|exploit\w*|exfiltrat\w*|replay\w*|steal\w*|leak\w*|vulnerab\w*|malicious|CVE-\S*|GHSA\S*|advisory)\b`)
	for _, name := range public {
		text := readRepoFile(t, name)
		for i, line := range strings.Split(text, "\n") {
			if m := words.FindString(line); m != "" {
				t.Errorf("%s:%d says %q: the public text only says that the endpoint rule is tightened", name, i+1, m)
			}
		}
	}
	for _, name := range []string{"hack/pr/PULL_REQUEST.md.tmpl", "hack/intree-commit-message-endpoint.txt"} {
		if !strings.Contains(readRepoFile(t, name), "reported privately") {
			t.Errorf("%s does not say that the details were reported privately", name)
		}
	}
}

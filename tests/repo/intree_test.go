package repo

import (
	"fmt"
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
// benchmarks, nor the home-only cosmoslag_*.go), the two e2e
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
		if !strings.HasSuffix(f, "_bench_test.go") {
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
		case name == "keda_adapter.go", strings.HasPrefix(name, "cosmoslag_"), strings.HasSuffix(name, "_bench_test.go"), !strings.HasSuffix(name, ".go"):
		case !slices.Contains(listed, "pkg/scalers/azure/"+name):
			t.Errorf("pkg/scalers/azure/%s is neither copied in-tree (azure_cosmosdb_*.go) nor home-only (keda_adapter.go, cosmoslag_*.go)", name)
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
		if strings.HasSuffix(name, "_bench_test.go") {
			continue
		}
		if !slices.Contains(listed, "pkg/scalers/"+name) {
			t.Errorf("pkg/scalers/%s is named like the scaler's in-tree files but is not copied; KEDA's tree has only azure_cosmosdb_scaler.go and its test", name)
		}
	}
}

// stackSeries is hack/pr/stack/series: the pull requests' names, in order.
// specBehaviours is the directory under hack/pr of the specification's two
// behaviours KEDA decided otherwise, applied after the series, never sent.
const specBehaviours = "spec-behaviours"

func stackSeries(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(readRepoFile(t, "hack/pr/stack/series"), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		names = append(names, fields[0])
	}
	if len(names) == 0 {
		t.Fatal("hack/pr/stack/series names no pull request")
	}
	return names
}

// kedaModuleDir is KEDA v2.21.0's module tree in the module cache (go mod
// download puts it there: this module requires it).
func kedaModuleDir(t *testing.T) string {
	t.Helper()
	dir := strings.TrimSpace(run(t, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2"))
	if dir == "" {
		t.Fatal("go list -m gave no directory for github.com/kedacore/keda/v2")
	}
	return dir
}

// testFunctionBodies maps each top-level Test function of a Go source to its text.
func testFunctionBodies(src string) map[string]string {
	bodies := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(src, "\n") {
		if m := regexp.MustCompile(`^func (Test\w*)\(`).FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		if name != "" {
			bodies[name] += line
			if strings.HasPrefix(line, "}") {
				name = ""
			}
		}
	}
	return bodies
}

// e2eSuitesPR is the stack's pull request that edits KEDA's two e2e suites of
// the trigger (e2eSuites), and only them; the others edit only the scaler and
// its test file.
const e2eSuitesPR = "08-e2e-suites"

// e2eSuites are KEDA v2.21.0's e2e suites of the trigger, as e2eSuitesPR edits them.
var e2eSuites = []string{
	"tests/scalers/azure/azure_cosmosdb/azure_cosmosdb_test.go",
	"tests/scalers/azure/azure_cosmosdb_aad_wi/azure_cosmosdb_aad_wi_test.go",
}

// topLevelFunctions lists the names of the top-level functions of a Go source.
func topLevelFunctions(src string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^func (\w+)\(`).FindAllStringSubmatch(src, -1) {
		names = append(names, m[1])
	}
	return names
}

// The stack is edits of KEDA v2.21.0's own scaler: each pull request's
// change.patch applies with git apply on the one before it (the first on
// v2.21.0's scaler files), changes only the scaler and its test file, adds
// at most 300 production lines, keeps every test function of v2.21.0's
// azure_cosmosdb_scaler_test.go defined, and changes one only where its
// changed-tests names it (its PULL_REQUEST.md says why); each has its texts.
// The first pull request is the advisory's patch. One pull request,
// e2eSuitesPR, edits KEDA's two e2e suites of the trigger instead, and
// nothing else: it keeps every function they define, and they create
// nothing with throughput (a serverless account refuses it). (hack/pr/stack.sh
// verify builds, lints and tests each head in a copy of all of KEDA, and vets
// the e2e suites.)
func TestStackIsSmallEditsOfKEDAsScaler(t *testing.T) {
	names := stackSeries(t)
	dir := t.TempDir()
	keda := kedaModuleDir(t)
	stackDir, err := filepath.Abs(filepath.Join(root, "hack/pr/stack"))
	if err != nil {
		t.Fatal(err)
	}
	const scaler, scalerTest = "pkg/scalers/azure_cosmosdb_scaler.go", "pkg/scalers/azure_cosmosdb_scaler_test.go"
	if !slices.Contains(names, e2eSuitesPR) {
		t.Errorf("hack/pr/stack/series does not name %s, the pull request of the e2e suites", e2eSuitesPR)
	}
	for _, f := range append([]string{scaler, scalerTest}, e2eSuites...) {
		src, err := os.ReadFile(filepath.Join(keda, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q")
	baseTests := testFunctionBodies(readFile(t, filepath.Join(dir, scalerTest)))
	if len(baseTests) != 38 {
		t.Fatalf("v2.21.0's %s defines %d test functions, want 38", scalerTest, len(baseTests))
	}
	if advisory := readRepoFile(t, "hack/advisory/keda-v2.21.0-azure-cosmosdb.patch"); advisory != readRepoFile(t, "hack/pr/stack/"+names[0]+"/change.patch") {
		t.Errorf("the first pull request's change.patch is not the advisory's patch")
	}
	// After the series: the specification's diff, kept here and never sent
	// (hack/pr/spec-behaviours), checked as a pull request is; its README.md
	// stands for a PULL_REQUEST.md.
	for _, name := range append(names, specBehaviours) {
		prDir, text := "hack/pr/stack/"+name, "PULL_REQUEST.md.tmpl"
		if name == specBehaviours {
			prDir, text = "hack/pr/"+name, "README.md"
		}
		for _, f := range []string{"change.patch", "commit.txt", text} {
			if _, err := os.Stat(filepath.Join(root, prDir, f)); err != nil {
				t.Errorf("%s has no %s", prDir, f)
			}
		}
		patch := filepath.Join(stackDir, "..", strings.TrimPrefix(prDir, "hack/pr/"), "change.patch")
		allowed, what := []string{scaler, scalerTest}, "only the scaler and its test file"
		if name == e2eSuitesPR {
			allowed, what = e2eSuites, "only KEDA's two e2e suites of the trigger"
		}
		prod := 0
		for _, line := range strings.Split(strings.TrimSpace(git("apply", "--numstat", patch)), "\n") {
			fields := strings.Split(line, "\t")
			if len(fields) != 3 || !slices.Contains(allowed, fields[2]) {
				t.Errorf("%s changes %q: %s", name, line, what)
				continue
			}
			if fields[2] == scaler {
				n, _ := strconv.Atoi(fields[0])
				prod += n
			}
		}
		if prod > 300 {
			t.Errorf("%s adds %d production lines, more than 300", name, prod)
		}
		before := testFunctionBodies(readFile(t, filepath.Join(dir, scalerTest)))
		git("apply", patch)
		after := testFunctionBodies(readFile(t, filepath.Join(dir, scalerTest)))
		for _, suite := range e2eSuites {
			src := readFile(t, filepath.Join(dir, suite))
			for _, f := range topLevelFunctions(readFile(t, filepath.Join(keda, suite))) {
				if !slices.Contains(topLevelFunctions(src), f) {
					t.Errorf("%s: v2.21.0's %s defines %s, which is no longer defined", name, suite, f)
				}
			}
			if m := regexp.MustCompile(`(?i)x-ms-(?:cosmos-)?offer[\w-]*|offer-throughput|offer-autopilot`).FindString(src); m != "" {
				t.Errorf("%s: %s sends %s; a serverless account refuses throughput", name, suite, m)
			}
		}
		changed := strings.Fields(readOptionalRepoFile(prDir + "/changed-tests"))
		for test := range baseTests {
			switch {
			case after[test] == "":
				t.Errorf("%s: v2.21.0's %s is no longer defined", name, test)
			case after[test] != before[test] && !slices.Contains(changed, test):
				t.Errorf("%s changes v2.21.0's %s, which its changed-tests does not name", name, test)
			}
		}
		for _, test := range changed {
			if !strings.Contains(readRepoFile(t, prDir+"/"+text), "`"+test+"`") {
				t.Errorf("%s changes %s but its %s does not name it", name, test, text)
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readOptionalRepoFile(name string) string {
	b, _ := os.ReadFile(filepath.Join(root, name))
	return string(b)
}

// The public texts of the stack (each pull request's commit message and
// description, and the issue proposing the series) say nothing a reviewer
// cannot check at that pull request's head: no TODO, no note to the sender,
// no local path, no name of what stays in this repository; and they do not
// describe how the released scaler's credentials could be misused (that went
// to KEDA's maintainers privately). The first pull request's description says
// it is opened when KEDA publishes its advisory.
func TestPullRequestTextsArePublicAndCheckable(t *testing.T) {
	names := stackSeries(t)
	files := []string{"hack/pr/stack/ISSUE.md.tmpl"}
	for _, name := range names {
		files = append(files, "hack/pr/stack/"+name+"/commit.txt", "hack/pr/stack/"+name+"/PULL_REQUEST.md.tmpl")
	}
	words := regexp.MustCompile(`(?i)\b(attack\w*|exploit\w*|exfiltrat\w*|steal\w*|leak\w*|vulnerab\w*|malicious|victim\w*|CVE-\S*|GHSA\S*)\b`)
	for _, f := range files {
		text := readRepoFile(t, f)
		for i, line := range strings.Split(text, "\n") {
			if m := words.FindString(line); m != "" {
				t.Errorf("%s:%d says %q", f, i+1, m)
			}
		}
		for _, bad := range []string{"TODO", "@@OVERLAP@@", "/tmp/", "tests/emulator", "cosmoslag", "BENCHMARKS", "note to"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s says %q", f, bad)
			}
		}
	}
	if !strings.Contains(readRepoFile(t, "hack/pr/stack/"+names[0]+"/PULL_REQUEST.md.tmpl"), "opened when KEDA publishes its advisory") {
		t.Errorf("the first pull request's description does not say it is opened when KEDA publishes its advisory")
	}
	if lines := len(strings.Split(readRepoFile(t, "hack/pr/stack/"+names[0]+"/PULL_REQUEST.md.tmpl"), "\n")); lines > 80 {
		t.Errorf("the first pull request's description has %d lines, more than 80", lines)
	}
}

// The public tree names the rule a test checks, never an attack: no test
// name or value says "victim" or "attacker" (the private report quotes
// earlier values, as what is already public).
func TestTestsNameTheRuleTheyCheck(t *testing.T) {
	cmd := exec.Command("git", "grep", "-l", "-i", "-E", `victim|attacker|evil\.example`, "--", "*.go", "*.md", "*.sh", "*.tmpl", ":!hack/advisory", ":!CHANGELOG.md", ":!tests/repo/intree_test.go")
	cmd.Dir = root
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); err != nil && !(ok && exit.ExitCode() == 1) { // 1: no match
		t.Fatalf("git grep: %v", err)
	}
	for _, f := range strings.Fields(string(out)) {
		t.Errorf("%s names an attack; name the rule the test checks", f)
	}
}

// The pull request's series is authored and signed off by the person who
// sends it: make intree-patch AUTHOR="Name <email>" (else git's user.name and
// user.email). hack/intree.sh author runs the check make intree-patch runs
// first: a placeholder or missing identity is refused with a message saying
// how to give one, a person's identity is accepted as given.
func TestInTreePatchAuthorIsAPerson(t *testing.T) {
	author := func(identity string, extraEnv ...string) (string, error) {
		cmd := exec.Command("bash", "hack/intree.sh", "author")
		cmd.Dir = root
		// An isolated git config: the machine's identity must not decide the case.
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "INTREE_AUTHOR="+identity, "HOME="+home, "XDG_CONFIG_HOME="+home,
			"GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"), "GIT_CONFIG_NOSYSTEM=1")
		cmd.Env = append(cmd.Env, extraEnv...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, identity := range []string{
		"Your Name <you@example.com>",
		"Ann Lee <ann@example.org>",
		"Ann Lee <ann@keda.invalid>",
		"Ann Lee <ann@localhost>",
		"TODO <ann@lee.dev>",
		"Ann Lee",
		"Ann Lee <not-an-address>",
	} {
		out, err := author(identity)
		if err == nil {
			t.Errorf("AUTHOR=%q accepted (%s); want it refused", identity, out)
		} else if !strings.Contains(out, `AUTHOR="Name <email>"`) && !strings.Contains(out, "is not of the form") {
			t.Errorf("AUTHOR=%q refused without saying how to give an identity: %s", identity, out)
		}
	}
	// No AUTHOR and no git identity: refused.
	if out, err := author("", "GIT_DIR="+filepath.Join(t.TempDir(), "none")); err == nil {
		t.Errorf("no AUTHOR and no git identity accepted: %s", out)
	}
	for _, identity := range []string{"Ann Lee <ann@lee.dev>", "Ann Lee <1234+annlee@users.noreply.github.com>"} {
		out, err := author(identity)
		if err != nil || out != identity {
			t.Errorf("AUTHOR=%q: got %q, %v; want it accepted as given", identity, out, err)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+.*INTREE_AUTHOR="\$\(AUTHOR\)" hack/intree.sh patch$`).MatchString(readRepoFile(t, "Makefile")) {
		t.Error("make intree-patch does not pass AUTHOR to hack/intree.sh patch")
	}
}

// Each e2e suite bounds its worst case at 15 minutes (KEDA's runner gives a
// test 20): its steps end at a deadline (stepsTimeout), and the cleanups that
// follow have the seconds its header states, which are the helper's timeouts:
// one Cosmos DB deletion (CleanupTimeout) per resource the suite registers for
// deletion. The namespace is KEDA's: CreateKubernetesResources at the start,
// whose wait for an earlier attempt's namespace (WaitForNamespaceDeletion's
// budget in KEDA's tests/helper) the header states and the deadline exceeds,
// and DeleteNamespace, which does not wait, in the cleanup.
func TestE2ESuitesStateTheirWorstCase(t *testing.T) {
	helper := readRepoFile(t, "tests/scalers/azure/helper/CosmosDBHelper.go")
	seconds := func(text, name string) int {
		m := regexp.MustCompile(name + ` = (\d+) \* time\.Second`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no const %s = N * time.Second", name)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	deletion := seconds(helper, "CleanupTimeout")
	kedaHelper := readFile(t, filepath.Join(kedaModuleDir(t), "tests/helper/helper.go"))
	m := regexp.MustCompile(`func WaitForNamespaceDeletion\(t \*testing\.T, nsName string\) bool \{\s+return pollUntil\(t, (\d+), (\d+),`).FindStringSubmatch(kedaHelper)
	if m == nil {
		t.Fatal("KEDA's tests/helper: WaitForNamespaceDeletion is no longer pollUntil(t, ITERATIONS, SECONDS, ...); state its budget anew")
	}
	iterations, _ := strconv.Atoi(m[1])
	interval, _ := strconv.Atoi(m[2])
	namespaceWait := iterations * interval
	for suite, cosmosDeletions := range map[string]int{
		"tests/scalers/azure/azure_cosmosdb/azure_cosmosdb_test.go":               2, // the database; the two-partition container
		"tests/scalers/azure/azure_cosmosdb_aad_wi/azure_cosmosdb_aad_wi_test.go": 1, // the database
	} {
		text := readRepoFile(t, suite)
		steps := seconds(text, "stepsTimeout")
		cleanup := cosmosDeletions * deletion
		header := strings.Join(strings.Fields(strings.ReplaceAll(text, "\n//", "")), " ")
		want := fmt.Sprintf("a deadline %s minutes after the start, and the cleanups that follow have %d s", strconv.FormatFloat(float64(steps)/60, 'f', -1, 64), cleanup)
		if !strings.Contains(header, want) {
			t.Errorf("%s: the header does not say %q", suite, want)
		}
		if want := fmt.Sprintf("waits up to %d s", namespaceWait); !strings.Contains(header, want) {
			t.Errorf("%s: the header does not say that KEDA's CreateNamespace %s for an earlier attempt's namespace", suite, want)
		}
		// Before it, the setup: the database, within deadline.Context(ctx, time.Minute).
		if !strings.Contains(text, "deadline.Context(ctx, time.Minute)") || 60+namespaceWait >= steps {
			t.Errorf("%s: KEDA's wait for an earlier attempt's namespace (%d s) after at most 60 s of setup does not end before the deadline (%d s)", suite, namespaceWait, steps)
		}
		if !strings.Contains(text, "CreateKubernetesResources(t, kc, testNamespace,") || !strings.Contains(text, "t.Cleanup(func() { DeleteNamespace(t, testNamespace) })") {
			t.Errorf("%s: the namespace is not KEDA's: CreateKubernetesResources at the start, DeleteNamespace in a cleanup", suite)
		}
		if m := regexp.MustCompile(`WaitForNamespaceDeletion\(|DeleteKubernetesResources\(`).FindString(text); m != "" {
			t.Errorf("%s calls %s: the cleanup waits for the namespace, which the header's seconds do not count", suite, strings.TrimSuffix(m, "("))
		}
		if steps+cleanup > 15*60 {
			t.Errorf("%s: steps %d s + cleanups %d s, over 15 minutes", suite, steps, cleanup)
		}
		if n := strings.Count(text, "deadline.Iterations(") + strings.Count(text, "deadline.Seconds(") + strings.Count(text, "deadline.Context("); n == 0 {
			t.Errorf("%s: no wait is cut to the deadline", suite)
		}
		for _, wait := range regexp.MustCompile(`(WaitForDeploymentReplicaReadyCount|AssertReplicaCountNotChangeDuringTimePeriod)\([^\n]*`).FindAllString(text, -1) {
			if !strings.Contains(wait, "deadline.") {
				t.Errorf("%s: a wait not cut to the deadline: %s", suite, wait)
			}
		}
	}
}

// The e2e helper and suites define nothing KEDA's tests/helper has (KEDA's
// maintainers asked for its namespace functions, not copies of them): no
// function or method of the same name, in any letter case, and no call of
// Kubernetes' namespace API of their own.
func TestE2EHelperDefinesNothingKEDAsHelperHas(t *testing.T) {
	declared := regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?(\w+)`)
	keda := map[string]string{}
	files, err := filepath.Glob(filepath.Join(kedaModuleDir(t), "tests/helper/*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("KEDA's tests/helper: no Go file (%v)", err)
	}
	for _, f := range files {
		for _, m := range declared.FindAllStringSubmatch(readFile(t, f), -1) {
			keda[strings.ToLower(m[1])] = m[1]
		}
	}
	if keda["createnamespace"] == "" || keda["deletenamespace"] == "" {
		t.Fatal("KEDA's tests/helper defines no CreateNamespace or DeleteNamespace; the test reads the wrong files")
	}
	ours := []string{"tests/scalers/azure/helper/CosmosDBHelper.go"}
	for _, suite := range []string{"tests/scalers/azure/azure_cosmosdb", "tests/scalers/azure/azure_cosmosdb_aad_wi"} {
		found, err := filepath.Glob(filepath.Join(root, suite, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			ours = append(ours, filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator))))
		}
	}
	for _, f := range ours {
		text := readRepoFile(t, f)
		for _, m := range declared.FindAllStringSubmatch(text, -1) {
			if name, ok := keda[strings.ToLower(m[1])]; ok {
				t.Errorf("%s defines %s; KEDA's tests/helper has %s: use it", f, m[1], name)
			}
		}
		if strings.Contains(text, ".Namespaces()") {
			t.Errorf("%s calls the namespace API itself; KEDA's tests/helper has CreateNamespace, DeleteNamespace and WaitForNamespaceDeletion", f)
		}
	}
}

// The e2e suites run on a serverless account (kedacore/testing-infrastructure's
// cosmos-db module creates one with EnableServerless): the helper sends a
// throughput header only for a container of several partitions, which only
// CreateContainer asks for, and CreateContainer refuses to run unless the
// documented variable says the account is provisioned; the step that calls it
// skips, with the variable in its reason, otherwise.
func TestE2ESuitesNeedNoThroughput(t *testing.T) {
	helper := readRepoFile(t, "tests/scalers/azure/helper/CosmosDBHelper.go")
	if n := len(regexp.MustCompile(`offer-autopilot-settings|x-ms-offer-throughput`).FindAllString(helper, -1)); n != 1 {
		t.Fatalf("the helper names a throughput header %d times; want once, in createContainer for partitions > 0", n)
	}
	if !regexp.MustCompile(`if partitions > 0 \{\s+headers\["x-ms-cosmos-offer-autopilot-settings"\]`).MatchString(helper) {
		t.Error("createContainer sends throughput for other than a several-partition container")
	}
	if !regexp.MustCompile(`createContainer\(ctx, t, "items", 0\)`).MatchString(helper) || !regexp.MustCompile(`createContainer\(ctx, t, c\.LeaseContainerID, 0\)`).MatchString(helper) {
		t.Error("CreateDatabase creates its containers with throughput")
	}
	if !regexp.MustCompile(`func \(c \*CosmosDBHelper\) CreateContainer\([^)]*\) CosmosDBContainer \{\s+require\.Truef\(t, Provisioned\(\)`).MatchString(helper) {
		t.Error("CreateContainer does not refuse to run on an account not declared provisioned")
	}
	suite := readRepoFile(t, "tests/scalers/azure/azure_cosmosdb/azure_cosmosdb_test.go")
	if !regexp.MustCompile(`if !azurehelper\.Provisioned\(\) \{\s+t\.Skipf\([^\n]*azurehelper\.ProvisionedThroughputEnv\)`).MatchString(suite) {
		t.Error("the partition cap step does not skip, naming the variable, on an account not declared provisioned")
	}
	if !strings.Contains(helper, `ProvisionedThroughputEnv = "TF_AZURE_COSMOSDB_PROVISIONED_THROUGHPUT"`) || !strings.Contains(suite, "TF_AZURE_COSMOSDB_PROVISIONED_THROUGHPUT=true") {
		t.Error("the variable is not documented in the suite's header as the helper names it")
	}
}

// BenchmarkHTTPFloor runs as many readers as the scaler lets a poll have in
// flight, or the floor would not be the floor of the same poll.
func TestBenchmarkFloorReadsAsManyAsTheScaler(t *testing.T) {
	value := func(file, name string) string {
		m := regexp.MustCompile(`const ` + name + ` = (\d+)`).FindStringSubmatch(readRepoFile(t, file))
		if m == nil {
			t.Fatalf("%s declares no const %s", file, name)
		}
		return m[1]
	}
	scaler := value("pkg/scalers/azure/azure_cosmosdb_shared.go", "cosmosDBContainerRequests")
	if floor := value("tests/emulator/poll_bench_test.go", "floorReadConcurrency"); floor != scaler {
		t.Errorf("the floor runs %s readers, the scaler %s", floor, scaler)
	}
}

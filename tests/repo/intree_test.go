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

// stackSeries is hack/pr/stack/series: the pull requests' names and diffs, in order.
func stackSeries(t *testing.T) (names, diffs []string) {
	t.Helper()
	for _, line := range strings.Split(readRepoFile(t, "hack/pr/stack/series"), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 2 {
			t.Fatalf("hack/pr/stack/series: %q is not NAME DIFF", line)
		}
		names, diffs = append(names, fields[0]), append(diffs, fields[1])
	}
	if len(names) == 0 || diffs[0] != "-" {
		t.Fatal("hack/pr/stack/series: the first pull request's DIFF must be -")
	}
	return names, diffs
}

// The stack of pull requests (hack/pr/stack/series): each pull request's diff
// applies in reverse, from the last to the second, to what the ones after it
// leave of the in-tree files, as make intree-patch applies them; each changes
// only in-tree files; each pull request has its texts. A diff that no longer
// applies is regenerated with hack/intree.sh stack.
func TestStackDiffsApplyInReverse(t *testing.T) {
	names, diffs := stackSeries(t)
	dir := t.TempDir()
	for _, name := range inTreeFiles(t) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(readRepoFile(t, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := git("init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	inTree := regexp.MustCompile(`^(pkg/scalers/azure_cosmosdb_scaler(_test)?\.go|pkg/scalers/azure/azure_cosmosdb_[a-z0-9_]+\.go|tests/scalers/azure/azure_cosmosdb(_aad_wi)?/[^/]+|tests/scalers/azure/helper/CosmosDBHelper\.go)$`)
	for k := len(names) - 1; k >= 0; k-- {
		for _, f := range []string{"commit-1.txt", "PULL_REQUEST.md.tmpl"} {
			if _, err := os.Stat(filepath.Join(root, "hack/pr/stack", names[k], f)); err != nil {
				t.Errorf("pull request %s has no hack/pr/stack/%s/%s", names[k], names[k], f)
			}
		}
		if k == 0 {
			break
		}
		diff, err := filepath.Abs(filepath.Join(root, diffs[k]))
		if err != nil {
			t.Fatal(err)
		}
		out, err := git("apply", "--numstat", diff)
		if err != nil {
			t.Fatalf("git apply --numstat %s: %v\n%s", diffs[k], err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if fields := strings.Split(line, "\t"); len(fields) != 3 || !inTree.MatchString(fields[2]) {
				t.Errorf("%s changes %q, not an in-tree file", diffs[k], line)
			}
		}
		if out, err := git("apply", "-R", diff); err != nil {
			t.Fatalf("%s (pull request %d, %s) does not apply in reverse to what the pull requests after it leave: %v\n%s\nregenerate the stack: hack/intree.sh stack", diffs[k], k+1, names[k], err, out)
		}
	}
}

// The workload identity and endpoint rule pull requests are a security fix,
// reported privately as KEDA's SECURITY.md asks: the public texts (every pull
// request's description and commit messages, and the issue proposing the
// series) do not describe how the old rules could be abused; those two
// pull requests' commits and the issue say that details were reported
// privately, and their descriptions that they are opened after the advisory
// is published.
func TestPullRequestTextDoesNotDescribeTheEndpointIssue(t *testing.T) {
	names, _ := stackSeries(t)
	public := []string{"hack/pr/stack/ISSUE.md.tmpl"}
	for _, name := range names {
		matches, _ := filepath.Glob(filepath.Join(root, "hack/pr/stack", name, "*"))
		for _, m := range matches {
			if strings.HasSuffix(m, ".txt") || strings.HasSuffix(m, ".tmpl") {
				public = append(public, filepath.ToSlash(strings.TrimPrefix(m, root+string(filepath.Separator))))
			}
		}
	}
	words := regexp.MustCompile(`(?i)\b(attack\w*|exploit\w*|exfiltrat\w*|replay\w*|steal\w*|leak\w*|vulnerab\w*|malicious|CVE-\S*|GHSA\S*|advisory)\b`)
	security := []string{"08-workload-identity", "09-endpoint-rule"}
	for _, name := range security {
		if !slices.Contains(names, name) {
			t.Fatalf("hack/pr/stack/series has no %s", name)
		}
	}
	isSecurityDescription := func(file string) bool {
		return slices.ContainsFunc(security, func(name string) bool { return file == "hack/pr/stack/"+name+"/PULL_REQUEST.md.tmpl" })
	}
	for _, name := range public {
		for i, line := range strings.Split(readRepoFile(t, name), "\n") {
			m := words.FindString(line)
			if m == "" || (strings.EqualFold(m, "advisory") && isSecurityDescription(name)) {
				continue
			}
			t.Errorf("%s:%d says %q: the public text only says that the rules are tightened", name, i+1, m)
		}
	}
	reportedPrivately := []string{"hack/pr/stack/ISSUE.md.tmpl"}
	for _, name := range security {
		reportedPrivately = append(reportedPrivately, "hack/pr/stack/"+name+"/commit-1.txt")
		if !strings.Contains(readRepoFile(t, "hack/pr/stack/"+name+"/PULL_REQUEST.md.tmpl"), "only after the maintainers have published the advisory") {
			t.Errorf("%s's PULL_REQUEST.md does not say that it is opened after the advisory is published", name)
		}
	}
	for _, name := range reportedPrivately {
		if !strings.Contains(strings.Join(strings.Fields(readRepoFile(t, name)), " "), "reported privately") {
			t.Errorf("%s does not say that the details were reported privately", name)
		}
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

// The pull requests' texts say what a reviewer can check: the core's commit
// and body never claim "every lease", list the retried statuses exactly and
// say the poll "logs counts"; no text carries a TODO, a size verdict, a local
// file or a name of what stays in this repository; the core's texts state
// nothing of what KEDA's test processor image reads; each later pull request
// says which one it builds on; the private report, if this tree has one,
// says nothing of what its authors did not read.
func TestPullRequestTextIsCheckable(t *testing.T) {
	names, _ := stackSeries(t)
	commit1 := readRepoFile(t, "hack/pr/stack/"+names[0]+"/commit-1.txt")
	body := readRepoFile(t, "hack/pr/stack/"+names[0]+"/PULL_REQUEST.md.tmpl")
	for name, text := range map[string]string{"the core's commit-1.txt": commit1, "the core's PULL_REQUEST.md.tmpl": body} {
		if m := regexp.MustCompile(`(?i)every\s+lease`).FindString(text); m != "" {
			t.Errorf("%s says %q: undecodable documents are not counted", name, m)
		}
		if !strings.Contains(strings.Join(strings.Fields(text), " "), "408, 429, 449, 500, 502, 503 and 504") {
			t.Errorf("%s does not list the retried statuses exactly (408, 429, 449, 500, 502, 503 and 504)", name)
		}
		if !strings.Contains(text, "logs counts") {
			t.Errorf("%s: the V(1) line logs counts", name)
		}
	}
	files := []string{filepath.Join(root, "hack/pr/stack/ISSUE.md.tmpl")}
	for _, name := range names {
		matches, _ := filepath.Glob(filepath.Join(root, "hack/pr/stack", name, "*"))
		files = append(files, matches...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".diff") {
			continue
		}
		rel := filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator)))
		text := readRepoFile(t, rel)
		for _, bad := range []string{"TODO", "not run on this tree", "/tmp/", "size limit", "tests/emulator", "cosmoslag", "BENCHMARKS"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s says %q", rel, bad)
			}
		}
		if m := regexp.MustCompile(`(?i)(image|processor)[^.]*\breads? (from|only|after)`).FindString(text); m != "" && strings.Contains(rel, names[0]) {
			t.Errorf("%s states what the test processor image reads: %q", rel, m)
		}
		if strings.HasSuffix(rel, "PULL_REQUEST.md.tmpl") && !strings.Contains(rel, names[0]) && !strings.Contains(text, "@@PREVIOUS@@") {
			t.Errorf("%s does not say which pull request it builds on (@@PREVIOUS@@)", rel)
		}
	}
	if report, err := os.ReadFile(filepath.Join(root, "hack/advisory/SECURITY_REPORT.md.tmpl")); err == nil {
		if m := regexp.MustCompile(`(?i)black-box|did not read|not read by|without reading|unread`).FindString(string(report)); m != "" {
			t.Errorf("SECURITY_REPORT.md.tmpl says %q: it states what was tested, not what its authors did not read", m)
		}
	}
}

// Each e2e suite bounds its worst case at 15 minutes (KEDA's runner gives a
// test 20): its steps end at a deadline (stepsTimeout), and the cleanups that
// follow have the seconds its header states, which are the helper's timeouts:
// the namespace (NamespaceDeletionTimeout) and one Cosmos DB deletion
// (CleanupTimeout) per resource the suite registers for deletion.
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
	namespace, deletion := seconds(helper, "NamespaceDeletionTimeout"), seconds(helper, "CleanupTimeout")
	for suite, cosmosDeletions := range map[string]int{
		"tests/scalers/azure/azure_cosmosdb/azure_cosmosdb_test.go":               2, // the database; the two-partition container
		"tests/scalers/azure/azure_cosmosdb_aad_wi/azure_cosmosdb_aad_wi_test.go": 1, // the database
	} {
		text := readRepoFile(t, suite)
		steps := seconds(text, "stepsTimeout")
		cleanup := namespace + cosmosDeletions*deletion
		header := strings.Join(strings.Fields(strings.ReplaceAll(text, "\n//", "")), " ")
		want := fmt.Sprintf("a deadline %s minutes after the start, and the cleanups that follow have %d s", strconv.FormatFloat(float64(steps)/60, 'f', -1, 64), cleanup)
		if !strings.Contains(header, want) {
			t.Errorf("%s: the header does not say %q", suite, want)
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
	scaler := value("pkg/scalers/azure/azure_cosmosdb_estimator.go", "cosmosDBReadConcurrency")
	if floor := value("tests/emulator/poll_bench_test.go", "floorReadConcurrency"); floor != scaler {
		t.Errorf("the floor runs %s readers, the scaler %s", floor, scaler)
	}
}

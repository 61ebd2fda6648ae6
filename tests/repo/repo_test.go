// Package repo holds tests of the repository itself: what a new contributor
// meets before any Go code runs (make targets, ignored build outputs, the
// changelog's form).
package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeTargets are the targets the Makefile defines (variables and special
// targets such as .PHONY left out).
func makeTargets(t *testing.T) []string {
	t.Helper()
	var targets []string
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):([^=]|$)`).FindAllStringSubmatch(readRepoFile(t, "Makefile"), -1) {
		targets = append(targets, m[1])
	}
	if len(targets) < 5 {
		t.Fatalf("found only %d targets in the Makefile: %v", len(targets), targets)
	}
	return targets
}

// make help lists every target with a description.
func TestMakeHelpDescribesEveryTarget(t *testing.T) {
	help := run(t, "make", "-s", "--no-print-directory", "help")
	described := map[string]bool{}
	for line := range strings.SplitSeq(help, "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 {
			described[fields[0]] = true
		}
	}
	for _, target := range makeTargets(t) {
		if !described[target] {
			t.Errorf("make help does not describe target %q; add `## description` after its name\n%s", target, help)
		}
	}
}

// make ci runs .ci/run, so the two cannot drift apart.
func TestMakeCIRunsWhatCIRuns(t *testing.T) {
	recipe := strings.Fields(run(t, "make", "-n", "--no-print-directory", "ci"))
	if !slices.Equal(recipe, []string{".ci/run"}) {
		t.Fatalf("make ci runs %q, want exactly .ci/run", recipe)
	}
}

// Building either command, from the root or inside its directory, leaves
// nothing git would offer to commit. Checked against the index too (no
// --no-index): a path git still tracks is not ignored, whatever .gitignore
// says (TestNoBuiltFileIsTracked finds what was committed anyway).
func TestGitignoreCoversBuiltCommands(t *testing.T) {
	commands, err := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if err != nil || len(commands) < 2 {
		t.Fatalf("commands found: %v (%v)", commands, err)
	}
	for _, main := range commands {
		name := filepath.Base(filepath.Dir(main))
		for _, built := range []string{name, filepath.Join("cmd", name, name)} {
			cmd := exec.Command("git", "check-ignore", "-q", built)
			cmd.Dir = root
			if err := cmd.Run(); err != nil {
				t.Errorf("%s (go build ./cmd/%s) is not ignored by .gitignore", built, name)
			}
		}
	}
}

// CHANGELOG.md keeps the Keep a Changelog form: an Unreleased section on
// top, then versions with dates, newest first, the standard change types,
// and a link reference for every version heading.
func TestChangelogForm(t *testing.T) {
	text := readRepoFile(t, "CHANGELOG.md")
	if !strings.HasPrefix(text, "# Changelog\n") || !strings.Contains(text, "keepachangelog.com") {
		t.Error("CHANGELOG.md does not start with # Changelog and a reference to Keep a Changelog")
	}
	versionHeading := regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$`)
	var headings []string
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			if line == "## [Unreleased]" {
				if len(headings) != 0 {
					t.Errorf("## [Unreleased] is not the first section")
				}
				headings = append(headings, "Unreleased")
				continue
			}
			m := versionHeading.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("section heading %q is not ## [x.y.z] - YYYY-MM-DD", line)
				continue
			}
			headings = append(headings, m[1])
		case strings.HasPrefix(line, "### "):
			if kind := strings.TrimPrefix(line, "### "); !slices.Contains([]string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kind) {
				t.Errorf("change type %q is not one of Keep a Changelog's", kind)
			}
		}
	}
	if len(headings) < 2 || headings[0] != "Unreleased" {
		t.Fatalf("want ## [Unreleased] and at least one released version, got %v", headings)
	}
	for _, h := range headings {
		if !regexp.MustCompile(`(?m)^\[` + regexp.QuoteMeta(h) + `\]: https://\S+$`).MatchString(text) {
			t.Errorf("no link reference [%s]: https://… at the end of CHANGELOG.md", h)
		}
	}
}

// Every commit of the stack of pull requests (hack/pr/stack) has a subject
// that is a KEDA release-notes title: KEDA generates its release notes from PR
// titles of the form "Component: Description" (its pr-changelog-check
// workflow), with the scaler's name as the component; each pull request's
// description has the same title.
func TestInTreePatchCarriesAKEDAReleaseNote(t *testing.T) {
	messages, err := filepath.Glob(filepath.Join(root, "hack/pr/stack/*/commit.txt"))
	if err != nil || len(messages) == 0 {
		t.Fatalf("no hack/pr/stack/*/commit.txt (%v)", err)
	}
	for _, path := range messages {
		name := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		message := readRepoFile(t, name)
		title, body, _ := strings.Cut(message, "\n")
		m := regexp.MustCompile(`^([^:]+):\s+(.+)$`).FindStringSubmatch(title)
		if m == nil {
			t.Errorf("%s: title %q is not Component: Description", name, title)
			continue
		}
		if component := strings.TrimSpace(m[1]); component != "Azure Cosmos DB Scaler" {
			t.Errorf("%s: component %q, want KEDA's name for the scaler, Azure Cosmos DB Scaler", name, component)
		}
		if len(title) > 100 {
			t.Errorf("%s: title is %d characters; keep a release-notes line short", name, len(title))
		}
		if !strings.HasPrefix(body, "\n") {
			t.Errorf("%s: the message needs a blank line after the title", name)
		}
		description := readRepoFile(t, strings.TrimSuffix(name, "commit.txt")+"PULL_REQUEST.md.tmpl")
		if !strings.Contains(description, "\n# "+title+"\n") {
			t.Errorf("%s: PULL_REQUEST.md.tmpl's title is not the commit's, %q", name, title)
		}
	}
}

// docs/upgrading.md and the README's "Upgrading from KEDA v2.21.0" section
// name every difference a user can see, and the README links to the file.
func TestUpgradingFromKEDA2210IsDocumented(t *testing.T) {
	differences := []string{"100", "EPK", "Java v1", "never checkpointed", "throttl", "trigger metadata", "metric name",
		"merge", "x-ms-cosmos-sdk-supportedcapabilities: 1", "HTTPS"}
	for _, file := range []string{"docs/upgrading.md", "README.md"} {
		text := readRepoFile(t, file)
		start := strings.Index(text, "Upgrading from KEDA v2.21.0\n")
		if start < 0 {
			t.Errorf("%s has no Upgrading from KEDA v2.21.0 section", file)
			continue
		}
		section := text[start:]
		if file == "README.md" {
			if end := regexp.MustCompile(`\n#{2,3} `).FindStringIndex(section[1:]); end != nil {
				section = section[:end[0]+1]
			}
		}
		for _, d := range differences {
			if !strings.Contains(section, d) {
				t.Errorf("%s: the upgrade section does not mention %q", file, d)
			}
		}
	}
	if !strings.Contains(readRepoFile(t, "README.md"), "(docs/upgrading.md)") {
		t.Error("README.md does not link to docs/upgrading.md")
	}
}

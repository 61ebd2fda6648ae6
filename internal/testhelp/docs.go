package testhelp

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// DocsBlock returns the lines of the first code block of the page (a path
// from the repository's root) that follows after (a line of prose or the
// block's first line).
func DocsBlock(t *testing.T, page, after string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(RepoRoot(t), page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(doc), after)
	_, block, opened := strings.Cut(rest, "```")
	_, block, _ = strings.Cut(block, "\n") // after the language, if any
	block, _, closed := strings.Cut(block, "```")
	if !found || !opened || !closed {
		t.Fatalf("%s has no code block after %q", page, after)
	}
	return strings.Split(strings.TrimSuffix(block, "\n"), "\n")
}

// RepoRoot is the repository's root: the directory of go.mod above the
// test's working directory.
func RepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// NormalizeCheckOutput replaces what varies from run to run in the table
// cosmoslag check prints: the pending changes' ages (a lease row's last
// column, the totals' "Oldest pending" line and the time its change was
// made) and the cost's request units and milliseconds. The docs' examples
// of check are compared with its output through it.
func NormalizeCheckOutput(s string) string {
	const age = `\d+[smhd](\d\d[smh])?` // 45s, 3m05s, 2h03m, 4d02h
	s = regexp.MustCompile(`Oldest pending     `+age+` ago \(lease (\S+), made \S+\)`).ReplaceAllString(s, "Oldest pending     AGE ago (lease $2, made TIME)")
	s = regexp.MustCompile(`(?m)^(\S+\s+v\d\s+\S+\s.*\s"[^"]*"\s+\d+\s+)`+age+`$`).ReplaceAllString(s, "${1}AGE")
	s = regexp.MustCompile(`Cost               (\d+) request\(s\), [\d.]+ RU, \d+ ms`).ReplaceAllString(s, "Cost               $1 request(s), RU RU, MS ms")
	return strings.TrimRight(s, "\n")
}

package repo

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The README stays a front page: what the project is, the two commands, the
// install, one example each of check and validate, and links into docs/.
// Detail belongs in docs/ (the README's Documentation table lists each page).
func TestReadmeIsAFrontPage(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if lines := strings.Count(readme, "\n"); lines > 250 {
		t.Errorf("README.md has %d lines; keep it at most 250 and move detail into docs/", lines)
	}
	for _, want := range []string{"cosmoslag check -f", "cosmoslag validate -f", "helm install cosmosdb-external-scaler", "make image"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not show %q", want)
		}
	}
	// Every page under docs/ is in the README's table.
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs pages: %v (%v)", pages, err)
	}
	for _, page := range pages {
		name := "docs/" + filepath.Base(page)
		if !strings.Contains(readme, "| ["+name+"]("+name+") |") {
			t.Errorf("README.md's Documentation table has no row for %s", name)
		}
	}
}

// "The two commands" are the contract: the main job (make demo, which is go
// run ./cmd/cosmoslag demo on the embedded server) and the tests (make test,
// go test -race -count=1 ./...), which the Makefile and .ci/run run as the
// README says.
func TestReadmeTwoCommandsAreWhatMakeAndCIRun(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	start := strings.Index(readme, "## The two commands\n")
	if start < 0 {
		t.Fatal("README.md has no section \"The two commands\"")
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[start:])
	if block == nil {
		t.Fatal("README.md: no sh block under \"The two commands\"")
	}
	lines := strings.Split(strings.TrimSpace(block[1]), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "make demo ") || !strings.Contains(lines[0], "go run ./cmd/cosmoslag demo") ||
		!strings.HasPrefix(lines[1], "make test ") || !strings.HasSuffix(lines[1], "go test -race -count=1 ./...") {
		t.Errorf("README.md's two commands are\n%s\nwant make demo (go run ./cmd/cosmoslag demo) and make test (go test -race -count=1 ./...)", block[1])
	}

	demo := strings.Fields(run(t, "make", "-n", "--no-print-directory", "demo"))
	if !slices.Equal(demo[1:], []string{"run", "./cmd/cosmoslag", "demo"}) {
		t.Errorf("make demo runs %q, the README says go run ./cmd/cosmoslag demo", demo)
	}
	test := strings.Fields(run(t, "make", "-n", "--no-print-directory", "test"))
	if !slices.Equal(test[1:], []string{"test", "-race", "-count=1", "./..."}) {
		t.Errorf("make test runs %q, the README says go test -race -count=1 ./...", test)
	}
	if ci := readRepoFile(t, ".ci/run"); !regexp.MustCompile(`(?m)^go test -race -count=1 -v \./\.\.\. `).MatchString(ci) {
		t.Error(".ci/run does not run the README's test command (go test -race -count=1 ./..., with -v to count the tests)")
	}
}

// Every relative link of the README and of the pages under docs/ points at a
// file of the repository, and every #fragment at a heading of its target.
// The reference page's links that leave docs/ (../authentication-providers/…)
// are pages of KEDA's documentation site, where the page is published.
func TestReadmeAndDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, page := range pages {
		files = append(files, "docs/"+filepath.Base(page))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range files {
		text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(readRepoFile(t, file), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			name, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if name != "" {
				resolved = path.Clean(path.Join(path.Dir(file), name))
			}
			if file == "docs/azure-cosmosdb.md" && !strings.HasPrefix(resolved, "docs/") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, resolved)); err != nil {
				t.Errorf("%s: link %s: %s does not exist", file, target, resolved)
				continue
			}
			if fragment != "" && strings.HasSuffix(resolved, ".md") && !slices.Contains(headingAnchors(readRepoFile(t, resolved)), fragment) {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, resolved, fragment)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens (code blocks skipped).
func headingAnchors(text string) []string {
	text = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
	var anchors []string
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`).FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

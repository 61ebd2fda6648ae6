package repo

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// The README stays a front page: what the project is, the two commands, the
// install, one example each of check and validate, and links into docs/.
// Detail belongs in docs/ (the README's Documentation table lists each page).
func TestReadmeIsAFrontPage(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if lines := strings.Count(readme, "\n"); lines > 300 {
		t.Errorf("README.md has %d lines; keep it at most 300 and move detail into docs/", lines)
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

// The README's example block runs as it is written, in bash, on the files
// of examples/: serve with the seed, then check, validate and tune. Only
// what would clash with another run is changed: the ports serve listens on
// (and the endpoint in a copy of examples/secrets.env), its CA and log
// files, and the binary, which the test builds as the block's first line
// does. check's table for the examples is the README's (the cluster form's,
// without KEDA's view); validate finds the trigger valid; tune recommends.
// An example or a command that drifts fails here.
func TestReadmeExamplesRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cosmoslag and runs the README's example block (about 30 s)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	readme := readRepoFile(t, "README.md")
	_, rest, ok := strings.Cut(readme, "a test runs this block as it is written:\n")
	block := regexp.MustCompile("(?s)^\\s*```sh\n(.*?)```").FindStringSubmatch(rest)
	if !ok || block == nil {
		t.Fatal(`README.md has no sh block after "a test runs this block as it is written:"`)
	}
	const buildLine = "go build -o bin/cosmoslag ./cmd/cosmoslag\n"
	script, ok := strings.CutPrefix(block[1], buildLine)
	if !ok {
		t.Fatalf("README.md's example block does not start with %q:\n%s", buildLine, block[1])
	}
	for _, want := range []string{"bin/cosmoslag serve --seed examples/seed.yaml", "bin/cosmoslag check -f examples/", "bin/cosmoslag validate -f examples/", "bin/cosmoslag tune -f examples/"} {
		if !strings.Contains(script, want) {
			t.Errorf("README.md's example block does not run %q", want)
		}
	}

	dir := t.TempDir()
	goBuild(t, root, []string{"CGO_ENABLED=0"}, "-trimpath", "-buildvcs=false", "-o", filepath.Join(dir, "bin", "cosmoslag"), "./cmd/cosmoslag")
	addr, controlAddr := freeAddr(t), freeAddr(t)
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(dir, "examples", "secrets.env")
	secrets := readRepoFile(t, "examples/secrets.env")
	if !strings.Contains(secrets, "AccountEndpoint=https://127.0.0.1:8081/;") {
		t.Fatal("examples/secrets.env does not name serve's default endpoint, https://127.0.0.1:8081/")
	}
	if err := os.WriteFile(env, []byte(strings.ReplaceAll(secrets, "127.0.0.1:8081", addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	script = strings.NewReplacer(
		"bin/cosmoslag serve ", "bin/cosmoslag serve --addr "+addr+" --control-addr "+controlAddr+" ",
		"/tmp/cosmoslag-ca.pem", filepath.Join(dir, "ca.pem"),
		"/tmp/cosmoslag-serve.log", filepath.Join(dir, "serve.log"),
	).Replace(script)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README.md's example block: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()

	// check: the README's table, from the header to "Active".
	shown := regexp.MustCompile("(?s)\\$ cosmoslag check -n shop order-projector\n(ScaledObject .*?\nActive [^\n]*)\n").FindStringSubmatch(readme)
	printed := regexp.MustCompile("(?s)(ScaledObject  .*?\nActive [^\n]*)\n").FindStringSubmatch(out)
	if shown == nil || printed == nil {
		t.Fatalf("no check table (README.md: %v, output: %v):\n%s", shown != nil, printed != nil, out)
	}
	if got, want := testhelp.NormalizeCheckOutput(printed[1]), testhelp.NormalizeCheckOutput(shown[1]); got != want {
		t.Errorf("check on examples/ prints\n%s\nthe README shows\n%s", got, want)
	}
	for _, want := range []string{
		"ScaledObject shop/order-projector trigger 0: valid\n1 trigger(s) checked, 0 invalid\n",
		"Recommended   changeFeedLagThreshold: \"800\" (now 50)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("README.md's example block does not print %q:\n%s", want, out)
		}
	}
}

// freeAddr is a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

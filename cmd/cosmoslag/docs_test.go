package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// docsBlock returns the lines of the first code block of the page that
// follows after (a line of prose or the block's first line).
func docsBlock(t *testing.T, page, after string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", page))
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

// runDemoNow runs the demo without its real-time pacing (its simulation
// is stepped per poll, so the output is the same) and returns stdout with
// the embedded server's port, which changes from run to run, replaced by
// PORT.
func runDemoNow(t *testing.T, args ...string) string {
	t.Helper()
	demoSleepUntil = func(ctx context.Context, _ time.Time) bool { return ctx.Err() == nil }
	t.Cleanup(func() { demoSleepUntil = sleepUntil })
	code, stdout, stderr := runCmd(t, append([]string{"demo"}, args...)...)
	if code != exitOK {
		t.Fatalf("demo %q: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	return regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).ReplaceAllString(stdout, "http://127.0.0.1:PORT/")
}

// normalizeRU replaces what varies from run to run in the demo's output:
// the request units of a poll that met a split or merge (a row whose lag
// is marked *) and so the summary's total. When a lease read meets the
// split, the scaler cancels its other reads in flight, and whether one had
// already been answered (and charged) is a race. Every other figure is
// compared as printed.
func normalizeRU(line string) string {
	line = regexp.MustCompile(`^(\s+\d+\.\ds\s+\d+\*\s+\d+\s+\d+\s+\S+\s+\d+\s+\d+)\s+\d+\.\d`).ReplaceAllString(line, "${1} RU")
	line = regexp.MustCompile(`\d+\.\d RU \(\d+\.\d+ per poll\)`).ReplaceAllString(line, "RU RU (RU per poll)")
	line = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).ReplaceAllString(line, "http://127.0.0.1:PORT/")
	return strings.TrimRight(line, " ")
}

// assertExcerpt checks that an excerpt of a command's output in the docs
// is that output with rows left out: its lines are the output's lines, in
// order, and every output line that is not a table row (a line starting
// with a time such as "  3.0s") is there.
func assertExcerpt(t *testing.T, page string, excerpt []string, output string) {
	t.Helper()
	row := regexp.MustCompile(`^\s+\d+\.\ds\s`)
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	i := 0
	for _, want := range excerpt {
		for i < len(lines) && normalizeRU(lines[i]) != normalizeRU(want) {
			if !row.MatchString(lines[i]) {
				t.Errorf("%s's excerpt lacks the output's line %q", page, lines[i])
			}
			i++
		}
		if i == len(lines) {
			t.Errorf("%s's excerpt has a line the output lacks (or out of order): %q\noutput:\n%s", page, want, output)
			return
		}
		i++
	}
	for ; i < len(lines); i++ {
		if !row.MatchString(lines[i]) {
			t.Errorf("%s's excerpt lacks the output's line %q", page, lines[i])
		}
	}
}

// docs/usage.md's excerpts of the demo are its output (seed 1, the
// defaults) with rows left out: every figure, and every line but table
// rows, as the command prints them.
func TestUsageDocsDemoExcerptsAreTheDemosOutput(t *testing.T) {
	excerpt := docsBlock(t, "docs/usage.md", "An excerpt of a real run")
	assertExcerpt(t, "docs/usage.md", excerpt, runDemoNow(t))

	merge := docsBlock(t, "docs/usage.md", "`cosmoslag demo --merge` runs")
	var rows []string
	for _, line := range strings.Split(runDemoNow(t, "--merge"), "\n") {
		rows = append(rows, normalizeRU(line))
	}
	// Only rows here: each is a row of the output.
	for _, want := range merge {
		if !slices.Contains(rows, normalizeRU(want)) {
			output := strings.Join(rows, "\n")
			t.Errorf("docs/usage.md's --merge excerpt has a row the output lacks: %q\noutput:\n%s", want, output)
		}
	}
}

// The README's validate example is the command's output for manifests
// like the ones it names: a ScaledObject default/orders-processor whose
// trigger 0 takes its connection from a TriggerAuthentication's Secret.
func TestReadmeValidateExampleIsTheCommandsOutput(t *testing.T) {
	block := docsBlock(t, "README.md", "files offline, with the scaler's own constructor")
	command, ok := strings.CutPrefix(block[0], "$ go run ./cmd/cosmoslag ")
	if !ok {
		t.Fatalf("README.md's validate example does not start with the command: %q", block[0])
	}
	dir := t.TempDir()
	files := map[string]string{
		"so.yaml": `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders-processor}
spec:
  scaleTargetRef: {name: orders-processor}
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: orders-processor}
      authenticationRef: {name: cosmos-auth}
`,
		"auth.yaml":   "apiVersion: keda.sh/v1alpha1\nkind: TriggerAuthentication\nmetadata: {name: cosmos-auth}\nspec:\n  secretTargetRef:\n    - {parameter: connection, name: cosmos-secrets, key: connectionString}\n",
		"secrets.env": "connectionString=AccountEndpoint=https://shop.documents.azure.com:443/;AccountKey=" + emulatorKey + ";\n",
	}
	args := strings.Fields(command)
	for i, a := range args {
		if content, ok := files[a]; ok {
			args[i] = writeFile(t, dir, a, content)
		}
	}
	code, stdout, stderr := runCmd(t, args...)
	if want := strings.Join(block[1:], "\n") + "\n"; code != exitOK || stdout != want {
		t.Errorf("README.md's validate example differs from the output (exit %d):\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
}

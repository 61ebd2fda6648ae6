package demo

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// runDemoNow runs the demo without its real-time pacing (its simulation
// is stepped per poll, so the output is the same) and returns stdout with
// the embedded server's port, which changes from run to run, replaced by
// PORT.
func runDemoNow(t *testing.T, args ...string) string {
	t.Helper()
	demoSleepUntil = func(ctx context.Context, _ time.Time) bool { return ctx.Err() == nil }
	t.Cleanup(func() { demoSleepUntil = cli.SleepUntil })
	code, stdout, stderr := runCmd(t, append([]string{"demo"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("demo %q: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	return regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).ReplaceAllString(stdout, "http://127.0.0.1:PORT/")
}

// normalizeRU replaces what varies from run to run in the demo's output:
// the requests and request units of a poll that met a split or merge (a row
// whose lag is marked *) and so the summary's totals. When a lease read
// meets the split, the scaler cancels its other reads, and how many had
// already been sent (and charged) is a race: the reads of a page start as
// the page arrives. Every other figure is compared as printed.
func normalizeRU(line string) string {
	line = regexp.MustCompile(`^(\s+\d+\.\ds\s+\d+\*\s+\d+\s+\d+\s+\S+\s+\d+)\s+\d+\s+\d+\.\d`).ReplaceAllString(line, "${1} N RU")
	line = regexp.MustCompile(`requests\s+\d+ \(\d+\.\d per poll\)`).ReplaceAllString(line, "requests N (N per poll)")
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
	excerpt := testhelp.DocsBlock(t, "docs/usage.md", "An excerpt of a real run")
	assertExcerpt(t, "docs/usage.md", excerpt, runDemoNow(t))

	merge := testhelp.DocsBlock(t, "docs/usage.md", "`cosmoslag demo --merge` runs")
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

package demo

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
)

// Demo flag errors name the flag and an excerpt of its value; a unitless
// --duration hints at the unit; an unwritable --chart is refused before the
// simulation starts (nothing on stdout).
func TestDemoFlagErrorsNameFlagAndValue(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("9x", 400)
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"--duration", "5"}, []string{`--duration "5"`, "did you mean 5s?"}, ""},
		{[]string{"--interval", "soon"}, []string{`--interval "soon"`, "not a duration"}, ""},
		{[]string{"--partitions", "four"}, []string{`--partitions "four"`, "not a whole number"}, "must be between"},
		{[]string{"--threshold", long}, []string{`--threshold "9x9x`, "(800 bytes)"}, long},
		{[]string{"--write-rate", "-1"}, []string{"--write-rate", "got -1"}, "--drain-rate"},
		{[]string{"--drain-rate", "0"}, []string{"--drain-rate", "got 0"}, "--write-rate"},
		{[]string{"--chart", filepath.Join(dir, "missing", "chart.svg")}, []string{"--chart", "missing", "cannot write"}, ""},
		{[]string{"--chart", dir}, []string{"--chart", "cannot write", "directory"}, ""},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"demo"}, tc.args...)...)
		if code != cli.ExitBadArgs || stdout != "" {
			t.Errorf("demo %.60q: code %d, stdout %q; want exit 2 before the simulation", tc.args, code, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("demo %.60q: stderr does not say %q: %.300q", tc.args, w, stderr)
			}
		}
		if tc.not != "" && strings.Contains(stderr, tc.not) {
			t.Errorf("demo %.60q: stderr says %.60q: %.300q", tc.args, tc.not, stderr)
		}
	}
	// The help still shows the flags' types and defaults.
	_, help, _ := runCmd(t, "demo", "--help")
	if !strings.Contains(help, "-duration duration") || !strings.Contains(help, "(default 24s)") {
		t.Errorf("demo --help lost the flag types or defaults:\n%s", help)
	}
}

// Every demo flag error is one line with the command's prefix, and a
// refused --threshold draws no second, consequential error on --activation.
func TestDemoFlagErrorsOneLineEach(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		lines int
	}{
		{[]string{"--threshold", "0"}, 1},
		{[]string{"--threshold", "-3", "--activation", "-1"}, 2},
		{[]string{"--partitions", "0", "--max-replicas", "0", "--cooldown", "-1s"}, 3},
	} {
		code, _, stderr := runCmd(t, append([]string{"demo"}, tc.args...)...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != cli.ExitBadArgs || len(lines) != tc.lines {
			t.Errorf("demo %q: exit %d, %d line(s), want %d: %q", tc.args, code, len(lines), tc.lines, stderr)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "cosmoslag demo: ") {
				t.Errorf("demo %q: a line without the prefix: %q", tc.args, l)
			}
		}
	}
}

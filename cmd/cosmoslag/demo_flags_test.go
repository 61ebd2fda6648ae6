package main

import (
	"path/filepath"
	"strings"
	"testing"
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
		if code != exitBadArgs || stdout != "" {
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

package main

import (
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	code, _, stderr := runCmd(t)
	if code != exitBadArgs || !strings.Contains(stderr, "Commands:") {
		t.Errorf("no arguments: code %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCmd(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "demo") || !strings.Contains(stdout, "check") {
		t.Errorf("--help: code %d, stdout %q", code, stdout)
	}
	code, _, stderr = runCmd(t, "serve-everything")
	if code != exitBadArgs || !strings.Contains(stderr, `unknown command "serve-everything"`) {
		t.Errorf("unknown command: code %d, stderr %q", code, stderr)
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"demo", "Usage: cosmoslag demo"},
		{"check", "Usage: cosmoslag check"},
	} {
		code, stdout, stderr := runCmd(t, tc.cmd, "--help")
		if code != exitOK || !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, "Flags:") || stderr != "" {
			t.Errorf("%s --help: code %d, stdout %q, stderr %q", tc.cmd, code, stdout, stderr)
		}
		code, stdout, stderr = runCmd(t, tc.cmd, "--bogus")
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, "flag provided but not defined: -bogus") ||
			!strings.Contains(stderr, `Run "cosmoslag `+tc.cmd+` --help"`) || strings.Contains(stderr, "Flags:") {
			t.Errorf("%s --bogus: code %d, stdout %q, stderr %q", tc.cmd, code, stdout, stderr)
		}
	}
}

// cosmoslag help <command> shows that command's help; an unknown one is
// named and refused.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"demo", "check", "validate", "serve"} {
		code, stdout, _ := runCmd(t, "help", cmd)
		_, want, _ := runCmd(t, cmd, "--help")
		if code != exitOK || stdout != want || !strings.Contains(stdout, "Usage: cosmoslag "+cmd) {
			t.Errorf("help %s: code %d, stdout %.80q, want %s --help's", cmd, code, stdout, cmd)
		}
	}
	if code, _, stderr := runCmd(t, "help", "dmeo"); code != exitBadArgs || !strings.Contains(stderr, `unknown command "dmeo"`) {
		t.Errorf("help dmeo: code %d, stderr %q", code, stderr)
	}
}

// --version prints the command name and the Go version it was built with.
func TestVersion(t *testing.T) {
	for _, flag := range []string{"--version", "version"} {
		code, stdout, _ := runCmd(t, flag)
		if code != exitOK || !strings.HasPrefix(stdout, "cosmoslag ") || !strings.Contains(stdout, "go1.") {
			t.Errorf("%s: code %d, stdout %q", flag, code, stdout)
		}
	}
}

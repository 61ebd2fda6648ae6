package main

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
)

func TestUsage(t *testing.T) {
	code, _, stderr := runCmd(t)
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "Commands:") {
		t.Errorf("no arguments: code %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCmd(t, "--help")
	for _, name := range []string{"demo", "check", "tune", "validate", "serve"} {
		if code != cli.ExitOK || !strings.Contains(stdout, "\n  "+name+" ") {
			t.Errorf("--help: code %d, stdout %q does not list %s", code, stdout, name)
		}
	}
	code, _, stderr = runCmd(t, "serve-everything")
	if code != cli.ExitBadArgs || !strings.Contains(stderr, `unknown command "serve-everything"`) {
		t.Errorf("unknown command: code %d, stderr %q", code, stderr)
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"demo", "Usage: cosmoslag demo"},
		{"check", "Usage: cosmoslag check"},
	} {
		code, stdout, stderr := runCmd(t, tc.cmd, "--help")
		if code != cli.ExitOK || !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, "Flags:") || stderr != "" {
			t.Errorf("%s --help: code %d, stdout %q, stderr %q", tc.cmd, code, stdout, stderr)
		}
		code, stdout, stderr = runCmd(t, tc.cmd, "--bogus")
		if code != cli.ExitBadArgs || stdout != "" || !strings.Contains(stderr, "flag provided but not defined: -bogus") ||
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
		if code != cli.ExitOK || stdout != want || !strings.Contains(stdout, "Usage: cosmoslag "+cmd) {
			t.Errorf("help %s: code %d, stdout %.80q, want %s --help's", cmd, code, stdout, cmd)
		}
	}
	if code, _, stderr := runCmd(t, "help", "dmeo"); code != cli.ExitBadArgs || !strings.Contains(stderr, `unknown command "dmeo"`) {
		t.Errorf("help dmeo: code %d, stderr %q", code, stderr)
	}
}

// --version prints the command name and the Go version it was built with.
func TestVersion(t *testing.T) {
	for _, flag := range []string{"--version", "version"} {
		code, stdout, _ := runCmd(t, flag)
		if code != cli.ExitOK || !strings.HasPrefix(stdout, "cosmoslag ") || !strings.Contains(stdout, "go1.") {
			t.Errorf("%s: code %d, stdout %q", flag, code, stdout)
		}
	}
}

// Package cli is what every cosmoslag command shares on its command line:
// the exit codes, flag parsing and help, the refusal of invalid arguments
// (with -o json, one JSON document), and JSON and text output.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
)

// Exit codes shared by every subcommand.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the estimate (or the demo) failed at run time
	ExitBadArgs = 2 // flags, files or trigger configuration are invalid
)

// ParseFlags parses a subcommand's flags. --help prints usage on stdout
// (exit 0); a bad flag prints the flag package's message and a hint on
// stderr (exit 2), as does a positional argument. ok is false when the
// command must stop with code.
func ParseFlags(fs *flag.FlagSet, usage func(io.Writer), args []string, stdout, stderr io.Writer) (code int, ok bool) {
	return parseFlags(fs, usage, args, nil, stdout, stderr)
}

// parseFlags is ParseFlags; with positional, the arguments that are not
// flags are appended to it instead of refused.
func parseFlags(fs *flag.FlagSet, usage func(io.Writer), args []string, positional *[]string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if positional != nil {
		// Flags may follow a positional argument, as kubectl's do.
		for err == nil && fs.NArg() > 0 {
			*positional = append(*positional, fs.Arg(0))
			err = fs.Parse(fs.Args()[1:])
		}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return ExitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "Run \"%s --help\" for usage.\n", fs.Name())
		return ExitBadArgs, false
	case fs.NArg() > 0:
		// No subcommand takes positional arguments.
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), excerpt.Of(fs.Arg(0)))
		return ExitBadArgs, false
	}
	return ExitOK, true
}

// UsageWith is a command's usage: its help text, then its flags.
func UsageWith(fs *flag.FlagSet, help string) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, help)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// ParseFlagsJSON is ParseFlags for a command with -o json: when the flags
// are invalid and the arguments ask for JSON, standard output holds one
// document with the first line of the error.
func ParseFlagsJSON(fs *flag.FlagSet, usage func(io.Writer), args []string, stdout, stderr io.Writer) (code int, ok bool) {
	return parseFlagsJSON(fs, usage, args, nil, stdout, stderr)
}

func parseFlagsJSON(fs *flag.FlagSet, usage func(io.Writer), args []string, positional *[]string, stdout, stderr io.Writer) (code int, ok bool) {
	var flagErrors strings.Builder
	if code, ok := parseFlags(fs, usage, args, positional, stdout, io.MultiWriter(stderr, &flagErrors)); !ok {
		if code != ExitOK && jsonRequested(args) {
			_ = WriteJSON(stdout, Failure{Error: strings.TrimSpace(strings.SplitN(flagErrors.String(), "\n", 2)[0]), ExitCode: code})
		}
		return code, false
	}
	return ExitOK, true
}

// ParseCommand parses the flags of a command with -o json (check, tune)
// and checks their values with problem; bad then refuses what is found
// wrong later. ok is false when the command must stop with code.
func ParseCommand(command string, fs *flag.FlagSet, usage func(io.Writer), args []string, output *string, problem func() string,
	stdout, stderr io.Writer) (bad func(format string, a ...any) int, code int, ok bool) {
	return ParseCommandArgs(command, fs, usage, args, nil, output, problem, stdout, stderr)
}

// ParseCommandArgs is ParseCommand for a command that takes positional
// arguments: they are appended to positional (flags may follow them), and
// problem checks them too.
func ParseCommandArgs(command string, fs *flag.FlagSet, usage func(io.Writer), args []string, positional *[]string, output *string, problem func() string,
	stdout, stderr io.Writer) (bad func(format string, a ...any) int, code int, ok bool) {
	if code, ok := parseFlagsJSON(fs, usage, args, positional, stdout, stderr); !ok {
		return nil, code, false
	}
	bad = BadArgs(command, output, stdout, stderr, func(msg string) any { return Failure{Error: msg, ExitCode: ExitBadArgs} })
	if msg := problem(); msg != "" {
		return nil, bad("%s", msg), false
	}
	return bad, ExitOK, true
}

// BadArgs is how a command with -o json refuses invalid flags, files or
// configuration: the message on stderr and, when *output is json, the
// document doc makes of it on stdout; exit status 2.
func BadArgs(command string, output *string, stdout, stderr io.Writer, doc func(msg string) any) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(stderr, "cosmoslag %s: %s\n", command, msg)
		if *output == "json" {
			_ = WriteJSON(stdout, doc(msg))
		}
		return ExitBadArgs
	}
}

// KeyValueFlag collects repeated key=value flags.
type KeyValueFlag struct {
	Values map[string]string
	// Malformed counts arguments without "key=": they are reported after
	// parsing, because the flag package quotes a rejected argument in its
	// error and the argument may be a secret.
	Malformed int
}

func (f *KeyValueFlag) String() string { return "" }

func (f *KeyValueFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		f.Malformed++
		return nil
	}
	f.Values[strings.TrimSpace(k)] = v
	return nil
}

// ListFlag collects a repeated flag's values.
type ListFlag []string

func (f *ListFlag) String() string { return strings.Join(*f, ",") }

func (f *ListFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

func Or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// SleepUntil waits until t and reports false if ctx ends first.
func SleepUntil(ctx context.Context, t time.Time) bool {
	wait, cancel := context.WithDeadline(ctx, t)
	defer cancel()
	<-wait.Done()
	return ctx.Err() == nil
}

// Given reports whether flag name was given on fs's command line.
func Given(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

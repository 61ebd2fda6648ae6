// Command cosmoslag runs the azure-cosmosdb KEDA scaler outside a cluster.
//
//	cosmoslag demo    simulate a change feed processor on an embedded Cosmos DB server
//	cosmoslag check   run one estimate for the trigger of a ScaledObject
//	cosmoslag tune    measure the replicas' drain rate and recommend the threshold for a latency budget
//	cosmoslag validate check the azure-cosmosdb triggers of manifests offline
//	cosmoslag serve   run the embedded Cosmos DB server for other processes, with a control API
//
// demo, check and tune build the scaler through scalers.NewAzureCosmosDBScaler,
// the constructor KEDA itself calls, so what they print is what the
// operator would see. serve runs the embedded server (pkg/cosmostest) on an
// HTTPS address of choice, for end-to-end tests of a real cluster, plus a
// plain-HTTP control API for what only the service itself does (creating
// containers, splitting partitions) and a processor's first leases.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/version"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailed  = 1 // the estimate (or the demo) failed at run time
	exitBadArgs = 2 // flags, files or trigger configuration are invalid
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"demo", "simulate a change feed processor scaled by KEDA on an embedded Cosmos DB server", runDemo},
	{"check", "estimate the lag of a ScaledObject's azure-cosmosdb trigger, lease by lease", runCheck},
	{"tune", "measure what one replica drains and recommend changeFeedLagThreshold for a latency budget", runTune},
	{"validate", "check the azure-cosmosdb triggers of manifests offline with the scaler's own validation", runValidate},
	{"serve", "run the embedded Cosmos DB server for other processes, with a control API for tests", runServe},
}

func main() {
	// Size KEDA's shared HTTP transport as KEDA's operator does
	// (--http-max-idle-conns-per-host), so concurrent lease reads reuse connections.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "cosmoslag:", err)
		os.Exit(exitFailed)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var discardScalerLogs sync.Once

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The scaler logs through controller-runtime's global logger, as every
	// KEDA scaler does; what it computed reaches the commands as a typed
	// estimate instead. Without a logger controller-runtime would complain,
	// after 30 s, that none was ever set.
	discardScalerLogs.Do(func() { logf.SetLogger(logr.Discard()) })
	if len(args) == 0 {
		usage(stderr)
		return exitBadArgs
	}
	switch args[0] {
	case "help":
		if len(args) > 1 { // cosmoslag help demo: that command's --help
			for _, c := range commands {
				if c.name == args[1] {
					return c.run(ctx, []string{"--help"}, stdout, stderr)
				}
			}
			fmt.Fprintf(stderr, "cosmoslag: unknown command %q\n\n", excerpt.Of(args[1]))
			usage(stderr)
			return exitBadArgs
		}
		usage(stdout)
		return exitOK
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "cosmoslag", version.String())
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "cosmoslag: unknown command %q\n\n", excerpt.Of(args[0]))
	usage(stderr)
	return exitBadArgs
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "cosmoslag runs the KEDA azure-cosmosdb scaler outside the cluster.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  cosmoslag <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "cosmoslag <command> --help" or "cosmoslag help <command>" for the flags of a command,`)
	fmt.Fprintln(w, `"cosmoslag --version" for the version.`)
}

// parseFlags parses a subcommand's flags. --help prints usage on stdout
// (exit 0); a bad flag prints the flag package's message and a hint on
// stderr (exit 2), as does a positional argument. ok is false when the
// command must stop with code.
func parseFlags(fs *flag.FlagSet, usage func(io.Writer), args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return exitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "Run \"%s --help\" for usage.\n", fs.Name())
		return exitBadArgs, false
	case fs.NArg() > 0:
		// No subcommand takes positional arguments.
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), excerpt.Of(fs.Arg(0)))
		return exitBadArgs, false
	}
	return exitOK, true
}

// usageWith is a command's usage: its help text, then its flags.
func usageWith(fs *flag.FlagSet, help string) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, help)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// parseFlagsJSON is parseFlags for a command with -o json: when the flags
// are invalid and the arguments ask for JSON, standard output holds one
// document with the first line of the error.
func parseFlagsJSON(fs *flag.FlagSet, usage func(io.Writer), args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var flagErrors strings.Builder
	if code, ok := parseFlags(fs, usage, args, stdout, io.MultiWriter(stderr, &flagErrors)); !ok {
		if code != exitOK && jsonRequested(args) {
			_ = writeJSON(stdout, checkFailure{Error: strings.TrimSpace(strings.SplitN(flagErrors.String(), "\n", 2)[0]), ExitCode: code})
		}
		return code, false
	}
	return exitOK, true
}

// parseCommand parses the flags of a command with -o json (check, tune)
// and checks their values with problem; bad then refuses what is found
// wrong later. ok is false when the command must stop with code.
func parseCommand(command string, fs *flag.FlagSet, usage func(io.Writer), args []string, output *string, problem func() string,
	stdout, stderr io.Writer) (bad func(format string, a ...any) int, code int, ok bool) {
	if code, ok := parseFlagsJSON(fs, usage, args, stdout, stderr); !ok {
		return nil, code, false
	}
	bad = badArgs(command, output, stdout, stderr, func(msg string) any { return checkFailure{Error: msg, ExitCode: exitBadArgs} })
	if msg := problem(); msg != "" {
		return nil, bad("%s", msg), false
	}
	return bad, exitOK, true
}

// badArgs is how a command with -o json refuses invalid flags, files or
// configuration: the message on stderr and, when *output is json, the
// document doc makes of it on stdout; exit status 2.
func badArgs(command string, output *string, stdout, stderr io.Writer, doc func(msg string) any) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(stderr, "cosmoslag %s: %s\n", command, msg)
		if *output == "json" {
			_ = writeJSON(stdout, doc(msg))
		}
		return exitBadArgs
	}
}

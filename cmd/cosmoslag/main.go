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
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kedautil "github.com/kedacore/keda/v2/pkg/util"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/check"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/demo"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/serve"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/tune"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/validate"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/version"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"demo", "simulate a change feed processor scaled by KEDA on an embedded Cosmos DB server", demo.Run},
	{"check", "estimate the lag of a ScaledObject's azure-cosmosdb trigger, lease by lease", check.Run},
	{"tune", "measure what one replica drains and recommend changeFeedLagThreshold for a latency budget", tune.Run},
	{"validate", "check the azure-cosmosdb triggers of manifests offline with the scaler's own validation", validate.Run},
	{"serve", "run the embedded Cosmos DB server for other processes, with a control API for tests", serve.Run},
}

func main() {
	// Size KEDA's shared HTTP transport as KEDA's operator does
	// (--http-max-idle-conns-per-host), so concurrent lease reads reuse connections.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "cosmoslag:", err)
		os.Exit(cli.ExitFailed)
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
		return cli.ExitBadArgs
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
			return cli.ExitBadArgs
		}
		usage(stdout)
		return cli.ExitOK
	case "-h", "-help", "--help":
		usage(stdout)
		return cli.ExitOK
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "cosmoslag", version.String())
		return cli.ExitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "cosmoslag: unknown command %q\n\n", excerpt.Of(args[0]))
	usage(stderr)
	return cli.ExitBadArgs
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

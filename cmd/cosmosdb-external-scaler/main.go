// Command cosmosdb-external-scaler serves the azure-cosmosdb scaler over
// KEDA's external scaler gRPC protocol (externalscaler.ExternalScaler), so
// any KEDA version can scale a Cosmos DB change feed processor with
// `type: external` (or `external-push`) and the same trigger parameters as
// the in-tree `type: azure-cosmosdb` scaler. Every estimate is made by the
// in-tree scaler itself, built with scalers.NewAzureCosmosDBScaler.
//
// Credentials come from this server's own environment, named in the
// trigger metadata by <param>FromScalerEnv (see metadata.go); secrets in
// the metadata itself are refused.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kedautil "github.com/kedacore/keda/v2/pkg/util"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/version"
)

const (
	exitOK      = 0
	exitFailed  = 1 // could not listen or serve
	exitBadArgs = 2 // flags or TLS files are invalid
)

func main() {
	// Size KEDA's shared HTTP transport as KEDA's operator does
	// (--http-max-idle-conns-per-host), so concurrent lease reads reuse
	// their connections.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "cosmosdb-external-scaler:", err)
		os.Exit(exitFailed)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, func(l *slog.Logger) {
		// The in-tree scaler logs through controller-runtime's global
		// logger, as every KEDA scaler does; send it to the same handler.
		logf.SetLogger(logr.FromSlogHandler(verbosityAsDebug{l.Handler()}))
	})
	stop()
	os.Exit(code)
}

type config struct {
	version         bool
	address         string
	healthAddress   string
	tls             tlsFiles
	httpTimeout     time.Duration
	streamInterval  time.Duration
	resultMaxAge    time.Duration
	idleTimeout     time.Duration
	shutdownTimeout time.Duration
	logLevel        string
	logFormat       string
	pprof           bool
	allowed         string // --allowed-endpoints
}

func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("cosmosdb-external-scaler", flag.ContinueOnError)
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.StringVar(&c.address, "address", ":6000", "gRPC listen address")
	fs.StringVar(&c.healthAddress, "health-address", "", "extra plain-text listener serving the gRPC health service (kubelet probes, also when TLS is on) and Prometheus metrics at /metrics (empty: none)")
	fs.StringVar(&c.tls.cert, "tls-cert", "", "server certificate (PEM); with --tls-key turns TLS on; reloaded when the file changes")
	fs.StringVar(&c.tls.key, "tls-key", "", "server private key (PEM)")
	fs.StringVar(&c.tls.clientCA, "tls-client-ca", "", "CA bundle (PEM) client certificates must chain to: mutual TLS")
	fs.DurationVar(&c.httpTimeout, "http-timeout", 10*time.Second, "timeout of each Cosmos DB request try (the scaler's GlobalHTTPTimeout; KEDA's operator takes it from\nKEDA_HTTP_DEFAULT_TIMEOUT, 3000 ms by default; must be > 0)")
	fs.DurationVar(&c.streamInterval, "stream-interval", 15*time.Second, "StreamIsActive (type external-push): time between two pushes")
	fs.DurationVar(&c.resultMaxAge, "result-max-age", 2*time.Second, "reuse an estimate this recent instead of reading the leases again (KEDA calls GetMetrics then IsActive on every poll); 0 disables")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 15*time.Minute, "close the scaler of a ScaledObject trigger unused for this long; 0 never")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 20*time.Second, "on SIGTERM, time given to calls in flight before their connections are closed")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error (debug includes every call and the scaler's per-poll figures)")
	fs.StringVar(&c.logFormat, "log-format", "json", "json or text")
	fs.StringVar(&c.allowed, "allowed-endpoints", defaultAllowedEndpoints, "host names and *.suffix patterns the scaler sends its credentials to as endpoint/leaseEndpoint (the default: the\nknown clouds' Cosmos DB domains and loopback); listing hosts also allows cloud: Private for them")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go's profiling handlers at /debug/pprof/ on the --health-address listener")
	return fs
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: cosmosdb-external-scaler [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Serves KEDA's external scaler gRPC protocol with the azure-cosmosdb scaler. Trigger")
	fmt.Fprintln(w, "parameters are the in-tree scaler's; secrets are read from this process's environment,")
	fmt.Fprintln(w, "named by connectionFromScalerEnv, leaseConnectionFromScalerEnv, cosmosDBKeyFromScalerEnv,")
	fmt.Fprintln(w, "leaseCosmosDBKeyFromScalerEnv and clientSecretFromScalerEnv.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// run serves until ctx is done (SIGTERM/SIGINT in main) and returns the
// exit code. setupLogging, when not nil, is given the logger once built.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, setupLogging func(*slog.Logger)) int {
	var c config
	fs := newFlagSet(&c)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return exitOK
		}
		fmt.Fprintln(stderr, `Run "cosmosdb-external-scaler --help" for usage.`)
		return exitBadArgs
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cosmosdb-external-scaler: unexpected argument %q\n", excerpt.Of(fs.Arg(0)))
		return exitBadArgs
	}
	if c.version {
		fmt.Fprintln(stdout, "cosmosdb-external-scaler", version.String())
		return exitOK
	}
	log, err := newLogger(stderr, c.logLevel, c.logFormat)
	if err == nil {
		err = c.validate()
	}
	if err != nil {
		fmt.Fprintln(stderr, "cosmosdb-external-scaler:", err)
		return exitBadArgs
	}
	if setupLogging != nil {
		setupLogging(log)
	}
	tlsCfg, err := serverTLSConfig(c.tls, 10*time.Second, log)
	if err != nil {
		fmt.Fprintln(stderr, "cosmosdb-external-scaler:", err)
		return exitBadArgs
	}
	if err := serve(ctx, c, tlsCfg, log); err != nil {
		log.Error("stopped", "error", err)
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}

func (c config) validate() error {
	switch {
	case c.httpTimeout <= 0:
		return errors.New("--http-timeout must be greater than 0 (KEDA's HTTP client would use 300 ms)")
	case c.streamInterval <= 0:
		return errors.New("--stream-interval must be greater than 0")
	case c.resultMaxAge < 0:
		return errors.New("--result-max-age must not be negative")
	case c.idleTimeout < 0:
		return errors.New("--idle-timeout must not be negative")
	case c.shutdownTimeout <= 0:
		return errors.New("--shutdown-timeout must be greater than 0")
	case c.pprof && c.healthAddress == "":
		return errors.New("--pprof needs --health-address: the profiling handlers are served there")
	}
	return nil
}

// verbosityAsDebug logs logr's V(1), V(2)… records (slog levels -1, -2…)
// at slog's DEBUG level, so they read "DEBUG" rather than "DEBUG+3".
type verbosityAsDebug struct{ slog.Handler }

func asDebug(l slog.Level) slog.Level {
	if l < slog.LevelInfo && l > slog.LevelDebug {
		return slog.LevelDebug
	}
	return l
}

func (h verbosityAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, asDebug(l))
}

func (h verbosityAsDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = asDebug(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h verbosityAsDebug) WithAttrs(attrs []slog.Attr) slog.Handler {
	return verbosityAsDebug{h.Handler.WithAttrs(attrs)}
}

func (h verbosityAsDebug) WithGroup(name string) slog.Handler {
	return verbosityAsDebug{h.Handler.WithGroup(name)}
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", excerpt.Of(level))
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", excerpt.Of(format))
}

// serve listens, serves until ctx is done, then shuts down gracefully.
func serve(ctx context.Context, c config, tlsCfg *tls.Config, log *slog.Logger) error {
	var creds credentials.TransportCredentials
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	allowed, err := parseEndpointAllowList(c.allowed, c.allowed != defaultAllowedEndpoints)
	if err != nil {
		return err
	}
	srv := newServer(serverOptions{
		allowedEndpoints: allowed,
		httpTimeout:      c.httpTimeout,
		streamInterval:   c.streamInterval,
		resultMaxAge:     c.resultMaxAge,
		idleTimeout:      c.idleTimeout,
		logger:           log,
	}, creds)
	listeners, healthPort, err := listen(c, srv)
	if err != nil {
		srv.shutdown(context.Background())
		return err
	}
	ln := listeners[0]
	log.Info("serving", "address", ln.Addr().String(), "tls", tlsCfg != nil,
		"mutualTLS", tlsCfg != nil && tlsCfg.ClientCAs != nil, "healthAddress", addrOf(listeners[1:]),
		"pprof", c.pprof,
		"httpTimeout", c.httpTimeout.String(), "streamInterval", c.streamInterval.String(),
		"resultMaxAge", c.resultMaxAge.String(), "idleTimeout", c.idleTimeout.String())

	errc := make(chan error, len(listeners))
	go func() { errc <- srv.serve(ln) }()
	if healthPort != nil {
		go func() {
			if err := healthPort.Serve(listeners[1]); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "timeout", c.shutdownTimeout.String())
	case serveErr = <-errc:
		log.Error("a listener failed; shutting down", "error", serveErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	srv.shutdown(sctx) // NOT_SERVING on both listeners, streams end, scalers closed
	if healthPort != nil {
		_ = healthPort.Close()
	}
	return serveErr
}

// listen opens the gRPC listener and, with a health address, the health
// listener and its server (nil without one).
func listen(c config, srv *server) (listeners []net.Listener, healthPort *http.Server, err error) {
	ln, err := net.Listen("tcp", c.address)
	if err != nil {
		return nil, nil, err
	}
	listeners = []net.Listener{ln}
	if c.healthAddress != "" {
		hln, err := net.Listen("tcp", c.healthAddress)
		if err != nil {
			_ = ln.Close()
			return nil, nil, err
		}
		healthPort = newHealthPortServer(srv, c.pprof)
		listeners = append(listeners, hln)
	}
	return listeners, healthPort, nil
}

// newHealthPortServer serves the health listener: gRPC health checks
// (HTTP/2 without TLS, as kubelet sends them) and, over HTTP/1.1 or
// HTTP/2, /metrics and the optional profiling handlers.
func newHealthPortServer(srv *server, withPprof bool) *http.Server {
	probe := grpc.NewServer()
	healthpb.RegisterHealthServer(probe, srv.healthService())
	web := srv.metrics.httpHandler(withPprof)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
				probe.ServeHTTP(w, r)
				return
			}
			web.ServeHTTP(w, r)
		}),
	}
}

func addrOf(lns []net.Listener) string {
	if len(lns) == 0 {
		return ""
	}
	return lns[0].Addr().String()
}

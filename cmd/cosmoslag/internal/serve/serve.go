// Package serve is cosmoslag serve: the embedded Cosmos DB server as a
// standalone process, with a control API for tests.
package serve

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/sim"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// EmulatorKey is the account key of the Azure Cosmos DB Emulator, published
// by Microsoft in its documentation and identical on every emulator: it is
// public, and only fit for test accounts. serve uses it unless --key is set.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

const shutdownTimeout = 5 * time.Second

type serveOptions struct {
	addr        string
	controlAddr string
	key         string
	account     string
	CAFile      string
	certFile    string
	keyFile     string
	merge       bool
	seed        string
}

// keptCertificateValidity is how long a certificate serve writes to
// --cert-file stays valid: long enough for a test environment's life.
const keptCertificateValidity = 365 * 24 * time.Hour

func serveFlags(o *serveOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag serve", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8081", "host:port of the Cosmos DB endpoint (HTTPS); port 0 picks a free port")
	fs.StringVar(&o.controlAddr, "control-addr", "127.0.0.1:8082", "host:port of the control API (plain HTTP, no authentication)")
	fs.StringVar(&o.key, "key", "", "base64 account key (default: the Cosmos DB Emulator's published well-known key)")
	fs.StringVar(&o.account, "account", "localaccount", "account name reported by GET /")
	fs.StringVar(&o.CAFile, "ca-file", "", "write the endpoint's self-signed certificate (PEM, mode 0644) to this file,\nfor clients to trust (e.g. SSL_CERT_FILE)")
	fs.StringVar(&o.certFile, "cert-file", "", "serve this certificate (PEM) instead of a fresh one, with --key-file; when neither\nfile exists, a self-signed certificate valid for a year is written to both on\nfirst start, so a restarted server is trusted by the same clients")
	fs.StringVar(&o.keyFile, "key-file", "", "private key (PEM, written with mode 0600) of --cert-file")
	fs.BoolVar(&o.merge, "enable-partition-merge", false, "enable partition merge on the account: POST /control/merge merges ranges, and every\nCosmos DB request must declare the PartitionMerge capability (400 otherwise)")
	fs.StringVar(&o.seed, "seed", "", "YAML file of containers and processors (leases checkpointed, then a backlog) to\ncreate before the server listens (examples/seed.yaml shows the fields)")
	return fs, cli.UsageWith(fs, serveHelp)
}

// serveHelp is the help of cosmoslag serve, before its flags.
const serveHelp = `Usage: cosmoslag serve [flags]

Runs the embedded Cosmos DB server as a standalone process, for clients in
other processes (a KEDA operator in a cluster, a change feed processor):

  - the Cosmos DB endpoint on --addr, HTTPS with a fresh self-signed
    certificate valid for a day that names the loopback addresses,
    "localhost" and the --addr host (--ca-file writes it out). Bind the
    address the clients use: it is the endpoint URL's host, and the host
    processors write into lease ids. Clients sign requests with --key.
    With --cert-file and --key-file the server keeps its identity: it
    serves the certificate in those files, or on first start writes a new
    one (valid for a year) there, so clients that trusted it still do
    after a restart on the same address.
  - a control API on --control-addr, plain HTTP, for what only the service
    itself does: creating databases and containers, splitting and merging
    partitions, writing a processor's first leases, and finding a partition
    key value for a chosen physical partition. It has no authentication:
    keep it on an address only the tests reach.

With --enable-partition-merge the account has partition merge enabled, as
"az cosmosdb update --enable-partition-merge true" leaves one: the service
then admits only clients that declare support for merges, so every Cosmos DB
request without the header x-ms-cosmos-sdk-supportedcapabilities holding the
PartitionMerge bit (a decimal bit set with bit 0 set, e.g. 1, as the .NET
>= 3.27, Java >= 4.42 and JavaScript >= 4.3 SDKs send) is refused with 400,
and /control/merge can merge ranges.

When both listen, one line each goes to stdout, then how to connect:
  cosmos endpoint https://127.0.0.1:8081/
  control api http://127.0.0.1:8082
  connection string AccountEndpoint=https://127.0.0.1:8081/;AccountKey=<key>;
  ca file /tmp/cosmos-ca.pem
  trust it SSL_CERT_FILE=/tmp/cosmos-ca.pem (...)
The connection string holds the emulator's well-known key (the default),
which is public; a --key is never printed. Without --ca-file the "ca file"
line says to use it, and there is no "trust it" line. Clients trust the
certificate from the CA file: cosmoslag check and tune, as Go programs,
with SSL_CERT_FILE set to it.
Every control request is logged to stderr (method, path, status). SIGINT or
SIGTERM stops both servers; the exit status is then 0. It is 1 when a
listener cannot be opened or a certificate file cannot be read or written,
2 for invalid flags or a --seed file that is refused.

Control API (JSON; errors are {"error": "..."} with status 400, 404, 405,
409 or 500):
  POST /control/containers {"database","id","partitionKeyPath","ranges"}
      create the database and the container if missing (201; 200 and the
      container unchanged if it exists; 409 if with another key path)
      -> {"database","id","rid","partitionKeyPath","ranges":[{"id",
          "minInclusive","maxExclusive","parents"}]}  (live ranges)
  GET  /control/containers/{database}/{container}/ranges
      -> the same reply, with the live ranges now
  POST /control/processors {"name","database","monitored","leases",
                            "format","startFromNow","leaseDatabase","accountHost"}
      write a processor's leases, one per live range, and its .info and
      .lock documents, as a processor does when it first starts (201; 409 if
      it has leases already). format: dotnet-v0 (default), dotnet-v1,
      java-v0, java-v1, dotnet-v2-library, as cosmoslag prints them and
      the reply's "format" names them.
      leases is the lease container's id. startFromNow checkpoints every
      lease at the current LSNs; without it the leases have no continuation
      yet (a processor that has not checkpointed), and the scaler ignores
      such leases: they count no lag. leaseDatabase defaults to database,
      accountHost to the endpoint's host. name is required; "name": ""
      writes the leases of a processor without a prefix (an Azure Functions
      trigger without LeaseContainerPrefix: dotnet-v0/dotnet-v1 as Functions
      v4 writes them, dotnet-v2-library as Functions v3 does), ids
      "{accountHost}_{dbRid}_{collRid}..{token}".
      -> {"prefix","format","leases":[{"id","token"}]}
  GET  /control/partition-key?database=&container=&range=
      -> {"partitionKey"}: a fresh string value whose items land in that
         live range (send it in x-ms-documentdb-partitionkey as ["value"])
  POST /control/split {"database","container","range"}
      split a live range at its midpoint -> {"left":{...},"right":{...}}
  POST /control/merge {"database","container","ranges":["a","b"]}
      merge two adjacent live ranges (either order) into a new one whose
      parents are both; their ids then answer 410/1002, their items keep
      their _lsn and the new range's LSN continues from the larger one
      -> {"id","minInclusive","maxExclusive","parents"}; 409 without
      --enable-partition-merge or for ranges that are not adjacent
  GET  /control/requests
      -> {"requests":[{"at","kind","method","path","rangeId","status",
          "header"}]}: the Cosmos DB requests answered, oldest first (at
          least the last 1000), the Authorization header redacted to its type
  GET  /control/healthz -> 200 ok

Example:
  cosmoslag serve --seed examples/seed.yaml --ca-file /tmp/cosmoslag-ca.pem
  cosmoslag serve --addr 10.244.0.20:8081 --control-addr 10.244.0.20:8082 --ca-file /tmp/cosmos-ca.pem
  cosmoslag serve --cert-file /var/lib/cosmos/cert.pem --key-file /var/lib/cosmos/key.pem --ca-file /tmp/cosmos-ca.pem

Flags:
`

func (o *serveOptions) validate() error {
	var errs []error
	addrOK := func(flagName, v string) bool {
		if _, port, err := net.SplitHostPort(v); err == nil {
			if _, err := strconv.ParseUint(port, 10, 16); err == nil {
				return true
			}
		}
		errs = append(errs, fmt.Errorf("--%s must be host:port with a port from 0 to 65535, got %q", flagName, v))
		return false
	}
	if addrOK("addr", o.addr) && addrOK("control-addr", o.controlAddr) && o.addr == o.controlAddr && !strings.HasSuffix(o.addr, ":0") {
		errs = append(errs, fmt.Errorf("--addr and --control-addr must differ, both are %q", o.addr))
	}
	if o.key == "" {
		o.key = EmulatorKey
	}
	if k, err := base64.StdEncoding.DecodeString(o.key); err != nil || len(k) == 0 {
		errs = append(errs, errors.New("--key must be a non-empty standard base64 string (its value is not shown)"))
	}
	if o.account == "" {
		errs = append(errs, errors.New("--account must not be empty"))
	}
	if (o.certFile == "") != (o.keyFile == "") {
		errs = append(errs, errors.New("--cert-file and --key-file go together: set both or neither"))
	}
	return errors.Join(errs...)
}

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o serveOptions
	fs, usage := serveFlags(&o)
	if code, ok := cli.ParseFlags(fs, usage, args, stdout, stderr); !ok {
		return code
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "cosmoslag serve: %v\n", err)
		return cli.ExitBadArgs
	}
	var seed *sim.Seed
	if o.seed != "" {
		var err error
		if seed, err = sim.ReadSeed(o.seed); err != nil {
			fmt.Fprintf(stderr, "cosmoslag serve: --seed %v\n", err)
			return cli.ExitBadArgs
		}
	}
	if err := serve(ctx, o, seed, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "cosmoslag serve: %v\n", err)
		if _, ok := errors.AsType[badSeed](err); ok {
			return cli.ExitBadArgs
		}
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// badSeed is a seed the control API refuses: bad input, exit status 2.
type badSeed struct{ error }

// serve runs both listeners until ctx ends.
func serve(ctx context.Context, o serveOptions, seed *sim.Seed, stdout, logw io.Writer) error {
	opts, err := serverOptions(o, logw)
	if err != nil {
		return err
	}
	srv, err := cosmostest.NewTLS(opts...)
	if err != nil {
		return fmt.Errorf("Cosmos DB endpoint: %w", err)
	}
	defer srv.Close()
	if seed != nil {
		if err := seed.Apply(srv); err != nil {
			return badSeed{fmt.Errorf("--seed %s: %w", o.seed, err)}
		}
		fmt.Fprintf(logw, "cosmoslag serve: --seed %s: %d container(s), %d processor(s)\n", o.seed, len(seed.Containers), len(seed.Processors))
	}
	ln, err := net.Listen("tcp", o.controlAddr)
	if err != nil {
		return fmt.Errorf("control API: %w", err)
	}
	if o.CAFile != "" {
		if err := writeFileAtomic(o.CAFile, srv.CertPEM(), 0o644); err != nil {
			_ = ln.Close()
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	hs := &http.Server{
		Handler:           control.NewHandler(srv, logw),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(logw, "cosmoslag serve: control API: ", 0),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	fmt.Fprintf(stdout, "cosmos endpoint %s\n", srv.URL())
	fmt.Fprintf(stdout, "control api http://%s\n", ln.Addr())
	writeConnectHelp(stdout, srv.URL(), o)

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("control API: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-served
	srv.Close()
	fmt.Fprintln(logw, "cosmoslag serve: stopped")
	return nil
}

// writeConnectHelp prints how a client connects: the connection string
// (with the emulator's well-known key, which is public; a --key is never
// printed), the CA file and how to trust it.
func writeConnectHelp(w io.Writer, endpoint string, o serveOptions) {
	key := "<the --key value>"
	if o.key == EmulatorKey {
		key = EmulatorKey
	}
	fmt.Fprintf(w, "connection string AccountEndpoint=%s;AccountKey=%s;\n", endpoint, key)
	if o.CAFile == "" {
		fmt.Fprintf(w, "ca file none: the certificate is self-signed; start serve with --ca-file FILE to write it out for clients to trust\n")
		return
	}
	fmt.Fprintf(w, "ca file %s\n", o.CAFile)
	fmt.Fprintf(w, "trust it SSL_CERT_FILE=%s (in the environment of cosmoslag check and tune, and other Go programs; Node.js: NODE_EXTRA_CA_CERTS=%s)\n", o.CAFile, o.CAFile)
}

// serverOptions are the embedded server's options from the flags; with
// --cert-file, its certificate is the one kept there (written first when
// there is none).
func serverOptions(o serveOptions, logw io.Writer) ([]cosmostest.Option, error) {
	opts := []cosmostest.Option{
		cosmostest.WithAddress(o.addr),
		cosmostest.WithKey(o.key),
		cosmostest.WithAccountName(o.account),
		// A standalone server runs for hours: the control API's request
		// log keeps the recent requests only.
		cosmostest.WithRequestLogLimit(1000),
	}
	if o.merge {
		opts = append(opts, cosmostest.WithPartitionMerge())
	}
	if o.certFile != "" {
		cert, created, err := keptCertificate(o.certFile, o.keyFile, o.addr)
		if err != nil {
			return nil, err
		}
		if created {
			fmt.Fprintf(logw, "cosmoslag serve: wrote a new certificate to %s and its key to %s\n", o.certFile, o.keyFile)
		}
		opts = append(opts, cosmostest.WithCertificate(cert))
	}
	return opts, nil
}

// writeFileAtomic writes through a temporary file and a rename, so a reader
// waiting for the file never sees it half written.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// runMainEnv makes the test binary act as the command itself, so a test
// can run the real main (signals included) in a child process.
const runMainEnv = "COSMOSDB_EXTERNAL_SCALER_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	logf.SetLogger(funcr.New(scalerLogs.add, funcr.Options{Verbosity: 1}))
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := findLeaks(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks looks for goroutines left by the tests for up to patience.
// goleak.Find alone gives a goroutine about a second to end; on a loaded
// machine the last request's net/http.setRequestCancel goroutine can take
// longer to be scheduled and return. A goroutine that really leaks is still
// there when patience runs out.
func findLeaks(patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for {
		err := goleak.Find(leakOptions()...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// leakOptions ignore the keep-alive connections of KEDA's shared HTTP
// transport, which outlive a test by design (their servers close them).
func leakOptions(extra ...goleak.Option) []goleak.Option {
	return append([]goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}, extra...)
}

const (
	testNamespace = "shop"
	testName      = "orders-processor"
	connEnv       = "COSMOS_CONNECTION"
)

// fixture is an embedded Cosmos DB account with a lagging processor
// ("orders-processor": 4 ranges, 30 pending items each) and the external
// scaler serving on loopback, with a generated gRPC client.
type fixture struct {
	t       *testing.T
	cosmos  *cosmostest.Server
	proc    *leasetest.Writer
	srv     *server
	client  pb.ExternalScalerClient
	conn    *grpc.ClientConn
	addr    string
	logs    *testhelp.SyncBuffer
	env     map[string]string
	created atomic.Int32 // in-tree scalers built
	closed  atomic.Int32 // in-tree scalers closed
	served  chan error
	stopped sync.Once
}

type fixtureOption func(*serverOptions)

func newFixture(t *testing.T, opts ...fixtureOption) *fixture {
	return newFixtureWith(t, nil, nil, opts...)
}

// newFixtureWith starts the server with transport credentials (nil: plain
// text) and dials it with client credentials (nil: plain text).
func newFixtureWith(t *testing.T, serverCreds, clientCreds credentials.TransportCredentials, opts ...fixtureOption) *fixture {
	t.Helper()
	cosmos := cosmostest.NewServer()
	t.Cleanup(cosmos.Close) // registered first: runs last
	proc, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 4, 30)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, cosmos: cosmos, proc: proc, logs: &testhelp.SyncBuffer{},
		env: map[string]string{connEnv: cosmos.ConnectionString()}, served: make(chan error, 1)}
	o := serverOptions{
		httpTimeout:    5 * time.Second,
		streamInterval: 50 * time.Millisecond,
		resultMaxAge:   0,
		idleTimeout:    0,
		logger:         slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		lookupEnv: func(name string) (string, bool) {
			v, ok := f.env[name]
			return v, ok
		},
		newScaler: func(c *scalersconfig.ScalerConfig) (cosmosScaler, triggerInfo, error) {
			s, trigger, err := newCosmosScaler(c)
			if err != nil {
				return nil, trigger, err
			}
			f.created.Add(1)
			return &closeCounter{cosmosScaler: s, closed: &f.closed}, trigger, nil
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	f.srv = newServer(o, serverCreds)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	go func() { f.served <- f.srv.serve(ln) }()
	if clientCreds == nil {
		clientCreds = insecure.NewCredentials()
	}
	f.conn, err = grpc.NewClient(f.addr, grpc.WithTransportCredentials(clientCreds))
	if err != nil {
		t.Fatal(err)
	}
	f.client = pb.NewExternalScalerClient(f.conn)
	t.Cleanup(func() {
		_ = f.conn.Close()
		f.stop(5 * time.Second)
		f.assertNoSecretInLogs()
	})
	return f
}

// stop shuts the server down and waits for Serve to return (once).
func (f *fixture) stop(timeout time.Duration) {
	f.stopped.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		f.srv.shutdown(ctx)
		select {
		case err := <-f.served:
			if err != nil {
				f.t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			f.t.Error("Serve did not return after shutdown")
		}
	})
}

func (f *fixture) assertNoSecretInLogs() {
	f.t.Helper()
	logs := f.logs.String()
	if strings.Contains(logs, f.cosmos.Key()) {
		f.t.Errorf("the logs contain the account key:\n%s", logs)
	}
}

// metadata is the trigger metadata KEDA would send for the lagging
// processor, plus overrides (key, value, ...; an empty value deletes).
func metadata(kv ...string) map[string]string {
	m := map[string]string{
		"scalerAddress":           "cosmosdb-external-scaler.keda:6000",
		"databaseId":              "appdb",
		"containerId":             "orders",
		"leaseDatabaseId":         "appdb",
		"leaseContainerId":        "leases",
		"processorName":           "orders-processor",
		"changeFeedLagThreshold":  "20",
		"connectionFromScalerEnv": connEnv,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
		} else {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}

func ref(md map[string]string) *pb.ScaledObjectRef {
	return &pb.ScaledObjectRef{Namespace: testNamespace, Name: testName, ScalerMetadata: md}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// catchUp checkpoints every lease at the end of its range: zero lag.
func (f *fixture) catchUp() {
	f.t.Helper()
	for _, r := range f.proc.Monitored.Ranges() {
		if err := f.proc.CatchUp(r.ID); err != nil {
			f.t.Fatal(err)
		}
	}
}

// inTreeMetric is what the in-tree scaler, configured as KEDA would
// configure it, reports for the same processor.
func (f *fixture) inTreeMetric(md map[string]string) (int64, bool) {
	f.t.Helper()
	triggerMetadata := map[string]string{}
	for k, v := range md {
		if k != "connectionFromScalerEnv" && k != "scalerAddress" {
			triggerMetadata[k] = v
		}
	}
	s, err := scalers.NewAzureCosmosDBScaler(&scalersconfig.ScalerConfig{
		TriggerMetadata:   triggerMetadata,
		AuthParams:        map[string]string{"connection": f.cosmos.ConnectionString()},
		ResolvedEnv:       map[string]string{},
		GlobalHTTPTimeout: 5 * time.Second,
		TriggerType:       "azure-cosmosdb",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	defer s.Close(context.Background())
	spec := s.GetMetricSpecForScaling(context.Background())[0].External.Metric.Name
	values, active, err := s.GetMetricsAndActivity(testContext(f.t), spec)
	if err != nil {
		f.t.Fatal(err)
	}
	return values[0].Value.Value(), active
}

// closeCounter counts Close calls of the in-tree scalers the server builds.
type closeCounter struct {
	cosmosScaler
	closed *atomic.Int32
}

func (c *closeCounter) Close(ctx context.Context) error {
	c.closed.Add(1)
	return c.cosmosScaler.Close(ctx)
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testhelp.Eventually(t, timeout, 10*time.Millisecond, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
}

// assertStatus checks a gRPC error's code and that its message mentions
// every want and none of the forbidden strings.
func assertStatus(t *testing.T, err error, code codes.Code, want []string, forbidden ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	for _, w := range want {
		if !strings.Contains(st.Message(), w) {
			t.Errorf("message %q does not mention %q", st.Message(), w)
		}
	}
	for _, f := range forbidden {
		if f != "" && strings.Contains(st.Message(), f) {
			t.Errorf("message %q contains a secret", st.Message())
		}
	}
}

// instances returns the server's live instances.
func (f *fixture) instances() []*instance { return f.srv.reg.snapshot() }

// refs is the number of calls holding in.
func (f *fixture) refs(in *instance) int {
	f.srv.reg.mu.Lock()
	defer f.srv.reg.mu.Unlock()
	return in.refs
}

func isClosed(in *instance) bool {
	select {
	case <-in.closed:
		return true
	default:
		return false
	}
}

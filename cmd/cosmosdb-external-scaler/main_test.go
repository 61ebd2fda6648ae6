package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--help"}, exitOK, "Usage: cosmosdb-external-scaler", ""},
		// KEDA has no --http-timeout flag; its operator reads KEDA_HTTP_DEFAULT_TIMEOUT.
		{[]string{"--help"}, exitOK, "KEDA_HTTP_DEFAULT_TIMEOUT, 3000 ms", ""},
		{[]string{"--bogus"}, exitBadArgs, "", "flag provided but not defined: -bogus"},
		{[]string{"serve"}, exitBadArgs, "", `unexpected argument "serve"`},
		{[]string{"--http-timeout", "0"}, exitBadArgs, "", "--http-timeout must be greater than 0"},
		{[]string{"--stream-interval", "0s"}, exitBadArgs, "", "--stream-interval"},
		{[]string{"--result-max-age", "-1s"}, exitBadArgs, "", "--result-max-age"},
		{[]string{"--log-level", "loud"}, exitBadArgs, "", "--log-level"},
		{[]string{"--log-format", "xml"}, exitBadArgs, "", "--log-format"},
		{[]string{"--tls-cert", "tls.crt"}, exitBadArgs, "", "--tls-key"},
		{[]string{"--address", "256.0.0.1:1"}, exitFailed, "", "stopped"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr, nil)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%v: code %d, stdout %q, stderr %q", tc.args, code, stdout.String(), stderr.String())
		}
	}
}

// logLines follows a JSON log stream.
type logLines struct {
	lines chan map[string]any
	all   *testhelp.SyncBuffer
	done  chan struct{}
}

func followLogs(r io.Reader) *logLines {
	l := &logLines{lines: make(chan map[string]any, 1000), all: &testhelp.SyncBuffer{}, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			_, _ = l.all.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case l.lines <- m:
				default:
				}
			}
		}
	}()
	return l
}

// waitFor returns the first record with message msg.
func (l *logLines) waitFor(t *testing.T, msg string) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-l.lines:
			if m["msg"] == msg {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q log record; logs:\n%s", msg, l.all.String())
		}
	}
}

// The real command in a child process: it serves on the addresses it
// logs, takes the connection string from its own environment, bridges the
// in-tree scaler's logs, and on SIGTERM stops cleanly with exit code 0.
func TestCommandServesAndStopsOnSIGTERM(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	if _, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 4, 30); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--address", "127.0.0.1:0", "--health-address", "127.0.0.1:0", "--log-level", "debug", "--shutdown-timeout", "5s")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", connEnv+"="+cosmos.ConnectionString())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	logs := followLogs(stderr)
	serving := logs.waitFor(t, "serving")
	addr, _ := serving["address"].(string)
	healthAddr, _ := serving["healthAddress"].(string)

	ctx := testContext(t)
	for _, a := range []string{addr, healthAddr} {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health at %s: %v %v", a, resp.GetStatus(), err)
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewExternalScalerClient(conn)
	spec, err := client.GetMetricSpec(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(metadata()), MetricName: spec.MetricSpecs[0].MetricName})
	if err != nil || metrics.MetricValues[0].MetricValue != 80 {
		t.Fatalf("GetMetrics: %v %v", metrics, err)
	}
	stream, err := client.StreamIsActive(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); err != nil || !resp.Result {
		t.Fatalf("stream: %v %v", resp, err)
	}
	// The in-tree scaler's own per-poll record, through controller-runtime's logger.
	if rec := logs.waitFor(t, "change feed lag estimated"); rec["level"] != "DEBUG" || rec["totalLag"] != float64(120) {
		t.Errorf("scaler record %v", rec)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("stream at SIGTERM: %v, want a clean end", err)
	}
	logs.waitFor(t, "scaler closed")
	logs.waitFor(t, "stopped")
	<-logs.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.all.String())
	}
	if all := logs.all.String(); strings.Contains(all, cosmos.Key()) {
		t.Fatalf("the logs contain the account key:\n%s", all)
	}
}

// --version prints the command name and the Go version it was built with.
func TestVersionFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--version"}, &stdout, &stderr, nil)
	if code != exitOK || !strings.HasPrefix(stdout.String(), "cosmosdb-external-scaler ") || !strings.Contains(stdout.String(), "go1.") {
		t.Errorf("--version: code %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// The keys KEDA itself sends an external scaler (scalerAddress, enableTLS,
// unsafeSsl, and caCert, tlsClientCert, tlsClientKey when written into the
// metadata) draw no "Unmatched input property" warning from the real
// command; a real typo still does, once per scaler however many calls use it.
func TestKEDAKeysDrawNoUnmatchedPropertyWarning(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	if _, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 4, 30); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--address", "127.0.0.1:0", "--log-level", "info", "--shutdown-timeout", "5s")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", connEnv+"="+cosmos.ConnectionString())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	logs := followLogs(stderr)
	addr, _ := logs.waitFor(t, "serving")["address"].(string)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewExternalScalerClient(conn)
	ctx := testContext(t)
	md := metadata("enableTLS", "false", "unsafeSsl", "false",
		"caCert", "-----BEGIN CERTIFICATE-----", "tlsClientCert", "-----BEGIN CERTIFICATE-----", "tlsClientKey", "-----BEGIN PRIVATE KEY-----",
		"changeFeedLagTreshold", "50") // the typo
	for range 3 {
		spec, err := client.GetMetricSpec(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: spec.MetricSpecs[0].MetricName}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.IsActive(ctx, ref(md)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-logs.done
	_ = cmd.Wait()
	all := logs.all.String()
	if n := strings.Count(all, "Unmatched input property"); n != 1 || !strings.Contains(all, "Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb") {
		t.Errorf("want exactly one Unmatched input property warning, for changeFeedLagTreshold; got %d:\n%s", n, all)
	}
	for _, key := range kedaExternalScalerKeys {
		if strings.Contains(all, "property "+key+" ") {
			t.Errorf("KEDA's own key %s drew a warning:\n%s", key, all)
		}
	}
	if strings.Contains(all, "PRIVATE KEY") {
		t.Errorf("the logs quote a metadata value:\n%s", all)
	}
}

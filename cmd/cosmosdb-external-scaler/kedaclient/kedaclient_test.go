// Package kedaclient drives cosmosdb-external-scaler with KEDA v2.21.0's own
// external scaler client (pkg/scalers.NewExternalScaler and
// NewExternalPushScaler), the code KEDA's operator runs for triggers of type
// external and external-push: metric names with KEDA's "s<index>-" prefix,
// GetMetrics followed by IsActive, the push stream, and KEDA's rewriting of
// ...FromEnv metadata.
//
// It is its own module because importing KEDA's pkg/scalers compiles every
// KEDA scaler (tens of minutes cold); the main module never does. Run it
// from this directory with: go test -count=1 .
package kedaclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	ours "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	keda "github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

var serverBinary string

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "cosmosdb-external-scaler")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBinary = filepath.Join(dir, "cosmosdb-external-scaler")
	build := exec.Command("go", "build", "-o", serverBinary, ".")
	build.Dir = ".." // the command, in the main module
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	code := 1
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the external scaler:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer runs the command with env added to its environment and
// returns its gRPC address; the process is stopped with SIGTERM at cleanup.
func startServer(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(serverBinary, "--address", "127.0.0.1:0", "--stream-interval", "100ms", "--log-level", "debug")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			var rec struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" {
				addr <- rec.Address
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("external scaler exit: %v\n%s", err, logs.String())
		}
		for _, e := range env {
			if _, secret, _ := strings.Cut(e, "="); strings.Contains(logs.String(), secret) {
				t.Errorf("the external scaler's logs contain a secret:\n%s", logs.String())
			}
		}
	})
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the external scaler did not start")
		return ""
	}
}

func triggerMetadata(addr string, kv ...string) map[string]string {
	m := map[string]string{
		"scalerAddress": addr, "databaseId": "appdb", "containerId": "orders",
		"leaseDatabaseId": "appdb", "leaseContainerId": "leases", "processorName": "orders-processor",
		"changeFeedLagThreshold": "20", "connectionFromScalerEnv": "COSMOS_CONNECTION",
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

func scalerConfig(md, resolvedEnv map[string]string) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		ScalableObjectName: "orders-processor", ScalableObjectNamespace: "shop", ScalableObjectType: "ScaledObject",
		TriggerType: "external", TriggerIndex: 2, TriggerMetadata: md, ResolvedEnv: resolvedEnv,
		AuthParams: map[string]string{}, GlobalHTTPTimeout: 5 * time.Second,
	}
}

// KEDA's client sees what the in-tree scaler reports: the same metric name
// (under the trigger's index), the same target, value and activity.
func TestKEDAClientGetsTheInTreeEstimate(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	proc, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 4, 30)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, "COSMOS_CONNECTION="+cosmos.ConnectionString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ext, err := keda.NewExternalScaler(scalerConfig(triggerMetadata(addr), map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close(ctx)
	inTreeMD := triggerMetadata(addr, "connectionFromScalerEnv", "", "scalerAddress", "")
	inTree, err := ours.NewAzureCosmosDBScaler(&scalersconfig.ScalerConfig{
		TriggerType: "azure-cosmosdb", TriggerIndex: 2, TriggerMetadata: inTreeMD,
		AuthParams: map[string]string{"connection": cosmos.ConnectionString()}, GlobalHTTPTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inTree.Close(ctx)

	extSpec, inSpec := ext.GetMetricSpecForScaling(ctx), inTree.GetMetricSpecForScaling(ctx)
	if len(extSpec) != 1 {
		t.Fatalf("KEDA built %d metric specs from the external scaler", len(extSpec))
	}
	name := extSpec[0].External.Metric.Name
	if name != inSpec[0].External.Metric.Name || name != "s2-azure-cosmosdb-leases-orders-processor" {
		t.Fatalf("metric name via KEDA %q, in-tree %q", name, inSpec[0].External.Metric.Name)
	}
	if got := extSpec[0].External.Target.AverageValue; got == nil || got.Value() != 20 {
		t.Fatalf("target %v, want AverageValue 20", extSpec[0].External.Target)
	}

	poll := func() (int64, bool, int64, bool) {
		t.Helper()
		ev, ea, err := ext.GetMetricsAndActivity(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		iv, ia, err := inTree.GetMetricsAndActivity(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ev[0].MetricName != name {
			t.Errorf("KEDA reports metric %q, want %q", ev[0].MetricName, name)
		}
		return ev[0].Value.MilliValue(), ea, iv[0].Value.MilliValue(), ia
	}
	if ev, ea, iv, ia := poll(); ev != 80_000 || !ea || ev != iv || ea != ia {
		t.Fatalf("lagging: external %dm active=%v, in-tree %dm active=%v (want 80 and active)", ev, ea, iv, ia)
	}
	for _, r := range proc.Monitored.Ranges() {
		if err := proc.CatchUp(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // past --result-max-age (2s)
	if ev, ea, iv, ia := poll(); ev != 0 || ea || ev != iv || ea != ia {
		t.Fatalf("caught up: external %dm active=%v, in-tree %dm active=%v (want 0, inactive)", ev, ea, iv, ia)
	}
}

// type external-push: KEDA's push scaler receives activity on the stream,
// and its StreamMetricSpec watcher gives up quietly (Unimplemented).
func TestKEDAPushScaler(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	if _, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 2, 5); err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, "COSMOS_CONNECTION="+cosmos.ConnectionString())
	push, err := keda.NewExternalPushScaler(scalerConfig(triggerMetadata(addr), map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	active := make(chan bool)
	ran := make(chan struct{})
	go func() {
		push.Run(ctx, active)
		close(ran)
	}()
	for i := 0; i < 3; i++ {
		select {
		case a := <-active:
			if !a {
				t.Fatalf("push %d: inactive with 10 pending items", i)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no push from the stream")
		}
	}
	cancel()
	for range active { // Run closes it on return
	}
	<-ran
}

// What KEDA does to ...FromEnv metadata, and the answer the operator then
// sees: KEDA sends the scale target's secret value, which the external
// scaler refuses without echoing it; when the scale target has no such
// variable KEDA drops the key.
func TestKEDARewritesFromEnvMetadata(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	if _, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 1, 1); err != nil {
		t.Fatal(err)
	}
	secret := cosmos.ConnectionString()
	addr := startServer(t, "COSMOS_CONNECTION="+secret)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md := triggerMetadata(addr, "connectionFromScalerEnv", "", "connectionFromEnv", "COSMOS_CONNECTION")

	for name, resolved := range map[string]map[string]string{
		"scale target has the variable": {"COSMOS_CONNECTION": secret},
		"scale target lacks it":         {},
	} {
		ext, err := keda.NewExternalScaler(scalerConfig(md, resolved))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = ext.GetMetricsAndActivity(ctx, "s2-azure-cosmosdb-leases-orders-processor")
		_ = ext.Close(ctx)
		if err == nil {
			t.Fatalf("%s: connectionFromEnv accepted", name)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), cosmos.Key()) {
			t.Fatalf("%s: the error quotes the secret: %v", name, err)
		}
		want := "connectionFromScalerEnv" // the refusal names the form to use
		if len(resolved) == 0 {
			want = "endpoint" // KEDA dropped the key: no account configured
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v does not mention %s", name, err, want)
		}
	}
}

package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// The metric spec carries the in-tree scaler's metric name without KEDA's
// "s<index>-" prefix (KEDA adds it, and strips it again before GetMetrics)
// and the lag threshold as target.
func TestGetMetricSpec(t *testing.T) {
	f := newFixture(t)
	resp, err := f.client.GetMetricSpec(testContext(t), ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.MetricSpecs) != 1 {
		t.Fatalf("got %d metric specs, want 1", len(resp.MetricSpecs))
	}
	spec := resp.MetricSpecs[0]
	want := kedautil.NormalizeString("azure-cosmosdb-leases-orders-processor")
	if spec.MetricName != want || spec.TargetSize != 20 || spec.TargetSizeFloat != 20 {
		t.Fatalf("spec = {%q %d %v}, want {%q 20 20}", spec.MetricName, spec.TargetSize, spec.TargetSizeFloat, want)
	}
	// Building the spec reads nothing from Cosmos DB.
	if n := len(f.cosmos.Handler.Requests()); n != 0 {
		t.Errorf("GetMetricSpec sent %d requests to Cosmos DB", n)
	}
}

// GetMetrics, called with the name GetMetricSpec returned, reports what the
// in-tree scaler computes: 4 lagging ranges × 30 = 120, capped at 4 × 20.
func TestGetMetricsEqualsInTreeScaler(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	md := metadata()
	spec, err := f.client.GetMetricSpec(ctx, ref(md))
	if err != nil {
		t.Fatal(err)
	}
	name := spec.MetricSpecs[0].MetricName
	resp, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: name})
	if err != nil {
		t.Fatal(err)
	}
	inTree, _ := f.inTreeMetric(md)
	if inTree != 80 {
		t.Fatalf("in-tree scaler metric %d, want 80 (fixture changed?)", inTree)
	}
	if len(resp.MetricValues) != 1 {
		t.Fatalf("got %d metric values, want 1", len(resp.MetricValues))
	}
	v := resp.MetricValues[0]
	if v.MetricName != name || v.MetricValue != inTree || v.MetricValueFloat != float64(inTree) {
		t.Fatalf("metric value {%q %d %v}, want {%q %d %d}", v.MetricName, v.MetricValue, v.MetricValueFloat, name, inTree, inTree)
	}

	// Below the cap the metric is the total lag.
	resp, err = f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(metadata("changeFeedLagThreshold", "100")), MetricName: name})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.MetricValues[0].MetricValue; got != 120 {
		t.Fatalf("uncapped metric %d, want 120", got)
	}

	// Any other name is refused: KEDA only ever sends the spec's.
	_, err = f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: "s0-" + name})
	assertStatus(t, err, codes.NotFound, []string{"s0-" + name, name})
}

// IsActive follows the lag against activationChangeFeedLagThreshold.
func TestIsActive(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	isActive := func(md map[string]string) bool {
		t.Helper()
		resp, err := f.client.IsActive(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Result
	}
	if !isActive(metadata()) {
		t.Error("120 pending items, activation 0: not active")
	}
	if isActive(metadata("changeFeedLagThreshold", "200", "activationChangeFeedLagThreshold", "120")) {
		t.Error("lag 120, activation 120: active")
	}
	f.catchUp()
	if isActive(metadata()) {
		t.Error("no lag: active")
	}
	if _, active := f.inTreeMetric(metadata()); active {
		t.Error("in-tree scaler: active with no lag")
	}
}

// KEDA calls GetMetrics and then IsActive on every poll. Within
// --result-max-age the second call reuses the first's estimate: one lease
// query per poll, not two.
func TestBackToBackCallsShareOneEstimate(t *testing.T) {
	for _, tc := range []struct {
		maxAge  time.Duration
		queries int
	}{{time.Minute, 1}, {0, 2}} {
		f := newFixture(t, func(o *serverOptions) { o.resultMaxAge = tc.maxAge })
		ctx := testContext(t)
		md := metadata()
		spec, err := f.client.GetMetricSpec(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		f.cosmos.Handler.ResetRequests()
		if _, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: spec.MetricSpecs[0].MetricName}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.IsActive(ctx, ref(md)); err != nil {
			t.Fatal(err)
		}
		if got := f.cosmos.Handler.Count(cosmostest.KindQuery); got != tc.queries {
			t.Errorf("result-max-age %v: %d lease queries, want %d", tc.maxAge, got, tc.queries)
		}
	}
}

// StreamIsActive sends the activity at once and then on every interval,
// follows the lag, and ends (server side too, no goroutine left) when the
// client cancels; the instance it held is then released.
func TestStreamIsActive(t *testing.T) {
	f := newFixture(t)
	// Open the gRPC connection before taking the goroutine baseline.
	if _, err := f.client.GetMetricSpec(testContext(t), ref(metadata())); err != nil {
		t.Fatal(err)
	}
	// The embedded Cosmos DB server's connection handlers belong to it
	// (its Close ends them, which TestMain's check covers).
	defer goleak.VerifyNone(t, leakOptions(goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("net/http.(*conn).serve"))...)

	ctx, cancel := context.WithCancel(testContext(t))
	stream, err := f.client.StreamIsActive(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	recv := func() bool {
		t.Helper()
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp.Result
	}
	if !recv() {
		t.Fatal("first push: not active with 120 pending items")
	}
	if !recv() {
		t.Fatal("second push: not active with 120 pending items")
	}
	f.catchUp()
	deadline := time.Now().Add(10 * time.Second)
	for recv() {
		if time.Now().After(deadline) {
			t.Fatal("still active 10s after the processor caught up")
		}
	}
	live := f.instances()
	if len(live) != 1 || f.refs(live[0]) != 1 {
		t.Fatalf("while streaming: %d instances", len(live))
	}

	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v, want Canceled", err)
	}
	eventually(t, 5*time.Second, "the stream handler to release its instance", func() bool { return f.refs(live[0]) == 0 })
}

// A changed ScaledObject (same trigger, other metadata) gets a new scaler
// and the old one is closed; a second trigger of the same ScaledObject
// (another processor) gets its own scaler and leaves the first alone. An
// old scaler a stream still uses is closed when the stream ends.
func TestMetadataChangeReplacesTheScaler(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	spec := func(md map[string]string) *pb.MetricSpec {
		t.Helper()
		resp, err := f.client.GetMetricSpec(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		return resp.MetricSpecs[0]
	}

	spec(metadata())
	spec(metadata()) // same metadata: reused
	if n := f.created.Load(); n != 1 {
		t.Fatalf("%d scalers built for identical calls, want 1", n)
	}
	first := f.instances()[0]

	if got := spec(metadata("changeFeedLagThreshold", "25")); got.TargetSize != 25 {
		t.Fatalf("target %d after the change, want 25", got.TargetSize)
	}
	eventually(t, 5*time.Second, "the old scaler to be closed", func() bool { return isClosed(first) })
	if live := f.instances(); len(live) != 1 || live[0] == first || f.created.Load() != 2 || f.closed.Load() != 1 {
		t.Fatalf("after the change: %d live, %d built, %d closed", len(live), f.created.Load(), f.closed.Load())
	}

	// Another trigger of the same ScaledObject.
	audit := spec(metadata("processorName", "audit-processor"))
	if audit.MetricName == spec(metadata("changeFeedLagThreshold", "25")).MetricName {
		t.Fatal("two processors share a metric name")
	}
	if n := len(f.instances()); n != 2 || f.closed.Load() != 1 {
		t.Fatalf("two triggers: %d live scalers and %d closed, want 2 and 1", n, f.closed.Load())
	}

	// A stream holds the current scaler while the metadata changes again.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.client.StreamIsActive(sctx, ref(metadata("changeFeedLagThreshold", "25")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	var held *instance
	for _, in := range f.instances() {
		if in.processor == "orders-processor" {
			held = in
		}
	}
	spec(metadata("changeFeedLagThreshold", "30"))
	time.Sleep(100 * time.Millisecond)
	if isClosed(held) {
		t.Fatal("a scaler was closed while a stream still used it")
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("stream on the replaced scaler: %v", err)
	}
	cancel()
	eventually(t, 5*time.Second, "the replaced scaler to be closed once its stream ended", func() bool { return isClosed(held) })
}

// Bad metadata is InvalidArgument naming the parameter, is never cached,
// and never quotes a secret, even one KEDA resolved into the metadata.
func TestBadMetadata(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	secret := f.cosmos.ConnectionString()
	key := f.cosmos.Key()
	cases := []struct {
		name string
		ref  *pb.ScaledObjectRef
		code codes.Code
		want []string
	}{
		{"missing processorName", ref(metadata("processorName", "")), codes.InvalidArgument, []string{"processorName"}},
		{"zero threshold", ref(metadata("changeFeedLagThreshold", "0")), codes.InvalidArgument, []string{"changeFeedLagThreshold"}},
		{"threshold not a number", ref(metadata("changeFeedLagThreshold", "many")), codes.InvalidArgument, []string{"changeFeedLagThreshold"}},
		{"activation above threshold", ref(metadata("activationChangeFeedLagThreshold", "50")), codes.InvalidArgument, []string{"activationChangeFeedLagThreshold"}},
		{"no credential", ref(metadata("connectionFromScalerEnv", "")), codes.InvalidArgument, []string{"endpoint"}},
		{"connection string in metadata", ref(metadata("connection", secret)), codes.InvalidArgument, []string{"connection", "connectionFromScalerEnv"}},
		{"key in metadata", ref(metadata("connectionFromScalerEnv", "", "endpoint", f.cosmos.URL(), "cosmosDBKey", key)), codes.InvalidArgument, []string{"cosmosDBKey"}},
		{"client secret in metadata", ref(metadata("clientSecret", "s3cr3t~value")), codes.InvalidArgument, []string{"clientSecret"}},
		// What KEDA sends for connectionFromEnv when the scale target has the variable.
		{"FromEnv resolved by KEDA", ref(metadata("connectionFromScalerEnv", "", "connectionFromEnv", secret)), codes.InvalidArgument, []string{"connectionFromEnv", "connectionFromScalerEnv"}},
		{"both env forms", ref(metadata("connectionFromEnv", connEnv)), codes.InvalidArgument, []string{"connectionFromEnv", "connectionFromScalerEnv"}},
		{"variable not set", ref(metadata("connectionFromScalerEnv", "NOT_SET_ANYWHERE")), codes.FailedPrecondition, []string{"connectionFromScalerEnv"}},
		{"not a variable name", ref(metadata("connectionFromScalerEnv", "COSMOS-CONNECTION")), codes.InvalidArgument, []string{"connectionFromScalerEnv"}},
		{"lease key without lease account", ref(metadata("leaseCosmosDBKeyFromScalerEnv", connEnv)), codes.InvalidArgument, []string{"leaseCosmosDBKey"}},
		{"unsupported pod identity", ref(metadata("podIdentityProvider", "aws")), codes.InvalidArgument, []string{"podIdentityProvider"}},
		{"bad cloud", ref(metadata("cloud", "Moon")), codes.InvalidArgument, []string{"cloud"}},
		{"no namespace", &pb.ScaledObjectRef{Name: testName, ScalerMetadata: metadata()}, codes.InvalidArgument, []string{"namespace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, tc.ref)
			assertStatus(t, err, tc.code, tc.want, secret, key, "s3cr3t~value")
			_, err = f.client.IsActive(ctx, tc.ref)
			assertStatus(t, err, tc.code, tc.want, secret, key, "s3cr3t~value")
		})
	}
	if n := len(f.instances()); n != 0 || f.created.Load() != 0 {
		t.Fatalf("bad metadata left %d instances (%d built)", n, f.created.Load())
	}
	if logs := f.logs.String(); containsAny(logs, secret, key, "s3cr3t~value") {
		t.Fatalf("logs quote a secret:\n%s", logs)
	}
}

// A failed estimate is Unavailable with the in-tree scaler's reason; a
// later poll succeeds again (no cached failure).
func TestEstimateFailure(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	md := metadata()
	spec, err := f.client.GetMetricSpec(ctx, ref(md))
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: spec.MetricSpecs[0].MetricName}
	remove := f.cosmos.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindQuery, Status: http.StatusBadRequest})
	_, err = f.client.GetMetrics(ctx, req)
	assertStatus(t, err, codes.Unavailable, []string{"query leases", "400"}, f.cosmos.Key())
	_, err = f.client.IsActive(ctx, ref(md))
	assertStatus(t, err, codes.Unavailable, []string{"query leases"}, f.cosmos.Key())
	remove()
	if _, err := f.client.GetMetrics(ctx, req); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
}

// A caller's deadline ends the estimate with DeadlineExceeded.
func TestEstimateHonoursTheCallDeadline(t *testing.T) {
	f := newFixture(t)
	if _, err := f.client.GetMetricSpec(testContext(t), ref(metadata())); err != nil {
		t.Fatal(err)
	}
	f.cosmos.Handler.SetLatency(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.client.IsActive(ctx, ref(metadata()))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("returned after %v", d)
	}
	f.cosmos.Handler.SetLatency(0)
}

// A scaler nobody calls for the idle timeout is closed (its ScaledObject
// was probably deleted); one a stream holds is not.
func TestIdleScalersAreClosed(t *testing.T) {
	f := newFixture(t, func(o *serverOptions) { o.idleTimeout = 150 * time.Millisecond })
	ctx := testContext(t)
	if _, err := f.client.GetMetricSpec(ctx, ref(metadata())); err != nil {
		t.Fatal(err)
	}
	idle := f.instances()[0]
	eventually(t, 5*time.Second, "the idle scaler to be closed", func() bool { return isClosed(idle) })
	if n := len(f.instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.client.StreamIsActive(sctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	held := f.instances()[0]
	time.Sleep(600 * time.Millisecond)
	if isClosed(held) {
		t.Fatal("the idle sweep closed a scaler a stream is using")
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	eventually(t, 5*time.Second, "the scaler to be closed once idle after its stream", func() bool { return isClosed(held) })
}

// The gRPC health service reports SERVING for the server and the service.
func TestHealth(t *testing.T) {
	f := newFixture(t)
	h := healthpb.NewHealthClient(f.conn)
	for _, svc := range []string{"", serviceName} {
		resp, err := h.Check(testContext(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %v %v", svc, resp.GetStatus(), err)
		}
	}
}

// Shutdown ends streams cleanly (KEDA sees io.EOF and reconnects), waits
// for calls in flight, closes every scaler and stops serving.
func TestShutdown(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	stream, err := f.client.StreamIsActive(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetMetricSpec(ctx, ref(metadata("processorName", "audit-processor"))); err != nil {
		t.Fatal(err)
	}
	live := f.instances()
	watch, err := healthpb.NewHealthClient(f.conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: serviceName})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before shutdown: %v %v", resp.GetStatus(), err)
	}

	done := make(chan struct{})
	go func() {
		f.stop(10 * time.Second)
		close(done)
	}()
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream at shutdown: %v, want a clean end (io.EOF)", err)
		}
	}
	if resp, err := watch.Recv(); err == nil && resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health during shutdown: %v", resp.Status)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not finish")
	}
	for _, in := range live {
		if !isClosed(in) {
			t.Errorf("scaler of %s not closed at shutdown", in.processor)
		}
	}
	if f.closed.Load() != f.created.Load() {
		t.Errorf("%d scalers built, %d closed", f.created.Load(), f.closed.Load())
	}
	if _, err := f.client.IsActive(ctx, ref(metadata())); status.Code(err) != codes.Unavailable {
		t.Errorf("call after shutdown: %v, want Unavailable", err)
	}
}

// A call that outlives --shutdown-timeout is cut off rather than holding
// the pod past its termination grace period.
func TestShutdownDeadline(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	if _, err := f.client.GetMetricSpec(ctx, ref(metadata())); err != nil {
		t.Fatal(err)
	}
	f.cosmos.Handler.SetLatency(30 * time.Second)
	defer f.cosmos.Handler.SetLatency(0)
	errc := make(chan error, 1)
	go func() {
		_, err := f.client.IsActive(ctx, ref(metadata()))
		errc <- err
	}()
	in := f.instances()[0]
	eventually(t, 5*time.Second, "the estimate to start", func() bool { return len(in.sem) == 1 })
	start := time.Now()
	f.stop(200 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v with a 200ms deadline", d)
	}
	if err := <-errc; status.Code(err) != codes.Unavailable {
		t.Fatalf("cut-off call: %v, want Unavailable", err)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

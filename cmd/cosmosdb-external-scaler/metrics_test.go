package main

import (
	"context"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// The command serves Prometheus metrics on its health port: after real
// gRPC calls, /metrics counts them by method and code, times them, counts
// the estimates and the Cosmos DB requests they made, and shows the cached
// scalers; gRPC health checks still answer on the same port, and --pprof
// adds the profiling handlers.
func TestMetricsOnTheHealthPort(t *testing.T) {
	cosmos := cosmostest.NewServer()
	defer cosmos.Close()
	if _, err := leasetest.LaggingLeases(cosmos.Account, "orders-processor", 4, 30); err != nil {
		t.Fatal(err)
	}
	t.Setenv(connEnv, cosmos.ConnectionString())
	cosmos.Handler.ResetRequests()

	ctx, stop := context.WithCancel(context.Background())
	stderrR, stderrW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"--address", "127.0.0.1:0", "--health-address", "127.0.0.1:0", "--pprof", "--result-max-age", "0"}, io.Discard, stderrW, nil)
		_ = stderrW.Close()
	}()
	defer func() {
		stop()
		if code := <-exited; code != exitOK {
			t.Errorf("exit code %d", code)
		}
	}()
	serving := followLogs(stderrR).waitFor(t, "serving")
	addr, _ := serving["address"].(string)
	healthAddr, _ := serving["healthAddress"].(string)

	callCtx := testContext(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewExternalScalerClient(conn)
	spec, err := client.GetMetricSpec(callCtx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.GetMetricsRequest{ScaledObjectRef: ref(metadata()), MetricName: spec.MetricSpecs[0].MetricName}
	for range 2 {
		if _, err := client.GetMetrics(callCtx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.IsActive(callCtx, ref(metadata())); err != nil {
		t.Fatal(err)
	}
	_, err = client.IsActive(callCtx, ref(metadata("processorName", "")))
	assertStatus(t, err, codes.InvalidArgument, nil)

	// The health service answers gRPC on the metrics port.
	healthConn, err := grpc.NewClient(healthAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer healthConn.Close()
	if resp, err := healthpb.NewHealthClient(healthConn).Check(callCtx, &healthpb.HealthCheckRequest{}); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health on the health port: %v %v", resp.GetStatus(), err)
	}

	families := scrape(t, "http://"+healthAddr+"/metrics")
	const ns = "cosmosdb_external_scaler_"
	service := "externalscaler.ExternalScaler"
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{ns + "grpc_calls_total", map[string]string{"service": service, "method": "GetMetricSpec", "code": "OK"}, 1},
		{ns + "grpc_calls_total", map[string]string{"service": service, "method": "GetMetrics", "code": "OK"}, 2},
		{ns + "grpc_calls_total", map[string]string{"service": service, "method": "IsActive", "code": "OK"}, 1},
		{ns + "grpc_calls_total", map[string]string{"service": service, "method": "IsActive", "code": "InvalidArgument"}, 1},
		{ns + "grpc_call_duration_seconds", map[string]string{"service": service, "method": "GetMetrics"}, 2},
		{ns + "estimate_duration_seconds", map[string]string{"result": "ok"}, 3},
		{ns + "cosmosdb_requests_total", nil, float64(cosmos.Handler.Count(""))},
		{ns + "scalers", nil, 1},
	} {
		if got := sample(t, families, c.family, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if got := sample(t, families, ns+"cosmosdb_request_charge_total", nil); got <= 0 {
		t.Errorf("request charge %v, want the RU of %d requests", got, cosmos.Handler.Count(""))
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}

	resp, err := http.Get("http://" + healthAddr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/debug/pprof/ with --pprof: %s", resp.Status)
	}
}

// Without --pprof the profiling handlers are not served.
func TestPprofIsOffByDefault(t *testing.T) {
	f := newFixture(t)
	rec := &statusRecorder{header: http.Header{}}
	r, _ := http.NewRequest(http.MethodGet, "/debug/pprof/", nil)
	f.srv.metrics.httpHandler(false).ServeHTTP(rec, r)
	if rec.status != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ without --pprof: %d, want 404", rec.status)
	}
}

type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(code int)        { r.status = code }

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sample is the value of the series of family with exactly these labels:
// a counter's or gauge's value, a histogram's sample count.
func sample(t *testing.T, families map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
	t.Helper()
	mf, ok := families[family]
	if !ok {
		t.Fatalf("no %s series", family)
	}
next:
	for _, m := range mf.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s series with labels %v", family, labels)
	return 0
}

package main

import (
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
)

const metricsNamespace = "cosmosdb_external_scaler"

// serverMetrics are the external scaler's Prometheus series. They live in
// a registry of their own, not the client library's global one, so that
// nothing another package registers ends up on /metrics and tests can
// build as many servers as they like.
type serverMetrics struct {
	registry *prometheus.Registry

	calls            *prometheus.CounterVec   // service, method, code
	callDuration     *prometheus.HistogramVec // service, method (unary calls)
	estimateDuration *prometheus.HistogramVec // result
	requests         prometheus.Counter
	requestCharge    prometheus.Counter
}

// newServerMetrics registers the series; scalers reports the number of
// cached in-tree scalers when scraped.
func newServerMetrics(scalers func() int) *serverMetrics {
	m := &serverMetrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "grpc_calls_total",
			Help: "gRPC calls handled, by service, method and status code (streams count when they end).",
		}, []string{"service", "method", "code"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "grpc_call_duration_seconds",
			Help:    "Time to answer a unary gRPC call, by service and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"service", "method"}),
		estimateDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "estimate_duration_seconds",
			Help:    "Time one change feed lag estimate took (lease query and change feed reads), by result (ok or error).",
			Buckets: prometheus.DefBuckets,
		}, []string{"result"}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "cosmosdb_requests_total",
			Help: "Requests sent to Cosmos DB by estimates, retries included.",
		}),
		requestCharge: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "cosmosdb_request_charge_total",
			Help: "Request units (RU) Cosmos DB charged for those requests.",
		}),
	}
	m.registry.MustRegister(m.calls, m.callDuration, m.estimateDuration, m.requests, m.requestCharge,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: metricsNamespace, Name: "scalers",
			Help: "In-tree scalers cached, one per ScaledObject trigger configuration.",
		}, func() float64 { return float64(scalers()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observeCall counts a finished call; duration is recorded for unary calls
// only (a stream's lifetime says nothing about the server's speed).
func (m *serverMetrics) observeCall(fullMethod string, code codes.Code, duration time.Duration, unary bool) {
	if m == nil {
		return
	}
	// gRPC only runs interceptors for registered methods, so the labels
	// stay few whatever clients send.
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	m.calls.WithLabelValues(service, method, code.String()).Inc()
	if unary {
		m.callDuration.WithLabelValues(service, method).Observe(duration.Seconds())
	}
}

// observeEstimate records one estimate of an in-tree scaler: how long it
// took and what it cost in Cosmos DB requests and request units, failed
// estimates included (their requests were made and charged too).
func (m *serverMetrics) observeEstimate(duration time.Duration, requests int64, requestCharge float64, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.estimateDuration.WithLabelValues(result).Observe(duration.Seconds())
	m.requests.Add(float64(requests))
	m.requestCharge.Add(requestCharge)
}

// httpHandler serves /metrics and, when withPprof, Go's profiling handlers
// under /debug/pprof/.
func (m *serverMetrics) httpHandler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	if withPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

package main

import (
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
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

	// Per ScaledObject trigger (labels namespace, scaledObject, trigger):
	// one series each, removed when the trigger's scaler is closed.
	trigger triggerGauges
	mu      sync.Mutex
	owners  map[triggerLabels]*instance // the instance whose figures the series show
}

// triggerLabels identify one ScaledObject trigger. KEDA does not send an
// external scaler the trigger's index, so the trigger is named by its
// metric (azure-cosmosdb-<leaseContainerId>-<processorName>, KEDA's metric
// name without the "s<index>-" prefix), which is unique per trigger.
type triggerLabels struct{ namespace, scaledObject, trigger string }

var triggerLabelNames = []string{"namespace", "scaledObject", "trigger"}

type triggerGauges struct {
	lag, metric, activePartitions, leases, staleParents, oldestPendingAge *prometheus.GaugeVec
	success, duration, timestamp                                          *prometheus.GaugeVec
}

func (g triggerGauges) all() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{g.lag, g.metric, g.activePartitions, g.leases, g.staleParents, g.oldestPendingAge, g.success, g.duration, g.timestamp}
}

func newTriggerGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Subsystem: "trigger", Name: name, Help: help}, triggerLabelNames)
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
	m.owners = map[triggerLabels]*instance{}
	m.trigger = triggerGauges{
		lag:              newTriggerGauge("lag", "Total change feed lag (pending transactions) of the last successful estimate, per ScaledObject trigger."),
		metric:           newTriggerGauge("metric_value", "Metric value served to KEDA by the last successful estimate: min(lag, active partitions x changeFeedLagThreshold)."),
		activePartitions: newTriggerGauge("active_partitions", "Partitions (leases) with lag at the last successful estimate; the HPA never gets more replicas than this."),
		leases:           newTriggerGauge("leases", "Leases of the processor read by the last successful estimate."),
		staleParents:     newTriggerGauge("stale_parent_leases", "Leases of a split or merged range (not yet replaced by the processor) at the last successful estimate."),
		oldestPendingAge: newTriggerGauge("oldest_pending_age_seconds", "Age of the oldest pending change at the last successful estimate (0: nothing pending or unknown)."),
		success:          newTriggerGauge("last_estimate_success", "1 if the last estimate succeeded, 0 if it failed."),
		duration:         newTriggerGauge("last_estimate_duration_seconds", "Time the last estimate took, failed or not."),
		timestamp:        newTriggerGauge("last_estimate_timestamp_seconds", "Unix time of the last estimate, failed or not."),
	}
	for _, g := range m.trigger.all() {
		m.registry.MustRegister(g)
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

// observeTrigger sets the trigger's series from an estimate of in, or its
// failure err. The series show the instance that estimated last, so an
// edited ScaledObject's new scaler takes them over from the old one.
func (m *serverMetrics) observeTrigger(in *instance, e triggerEstimate, err error) {
	if m == nil {
		return
	}
	l := in.labels()
	m.mu.Lock()
	defer m.mu.Unlock()
	if in.metricsForgotten {
		return // closed: its series are gone and stay gone
	}
	m.owners[l] = in
	values := []string{l.namespace, l.scaledObject, l.trigger}
	g := m.trigger
	g.duration.WithLabelValues(values...).Set(e.Duration.Seconds())
	g.timestamp.WithLabelValues(values...).Set(float64(time.Now().UnixNano()) / 1e9)
	if err != nil {
		g.success.WithLabelValues(values...).Set(0)
		return
	}
	g.success.WithLabelValues(values...).Set(1)
	g.lag.WithLabelValues(values...).Set(float64(e.TotalLag))
	g.metric.WithLabelValues(values...).Set(float64(e.Metric))
	g.activePartitions.WithLabelValues(values...).Set(float64(e.ActivePartitions))
	g.leases.WithLabelValues(values...).Set(float64(e.Leases))
	g.staleParents.WithLabelValues(values...).Set(float64(e.StaleParents))
	g.oldestPendingAge.WithLabelValues(values...).Set(e.OldestPendingAge.Seconds())
}

// forgetTrigger removes the trigger's series when in is closed, unless a
// newer instance of the same trigger owns them.
func (m *serverMetrics) forgetTrigger(in *instance) {
	if m == nil {
		return
	}
	l := in.labels()
	m.mu.Lock()
	defer m.mu.Unlock()
	in.metricsForgotten = true
	if m.owners[l] != in {
		return
	}
	delete(m.owners, l)
	for _, g := range m.trigger.all() {
		g.DeleteLabelValues(l.namespace, l.scaledObject, l.trigger)
	}
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

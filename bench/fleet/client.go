package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/metrics/pkg/apis/external_metrics"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ours "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// scaler is the method set both implementations share (KEDA's scalers.Scaler).
type scaler interface {
	GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error)
	Close(ctx context.Context) error
}

// implementations are the constructors by name: ours, and KEDA
// v2.21.0's (keda.go, left out by the build tag oursonly, which builds in
// minutes rather than compiling all of KEDA's scalers).
var implementations = map[string]func(*scalersconfig.ScalerConfig) (scaler, error){
	"ours": func(c *scalersconfig.ScalerConfig) (scaler, error) { return ours.NewAzureCosmosDBScaler(c) },
}

// clientResult is one fleet process's figures.
type clientResult struct {
	Impl, Shape, Auth string
	N, Leases         int
	PollingInterval   time.Duration
	HPAPeriod         time.Duration
	Window            time.Duration
	LoadAvg           string // at the start

	HeapPerSOBuilt         float64 // live heap after building, per SO (bytes)
	GoroutinesBuilt        int     // goroutines after building, beyond the baseline
	HeapPerSOIdle          float64 // live heap after the polls stopped (caches, idle connections), per SO
	GoroutinesPerSOIdle    float64
	HeapPerSONoConns       float64 // the same after the account closed the idle connections
	GoroutinesPerSONoConns float64
	HeapPerSOPolling       float64 // peak live heap while polling, per SO
	GoroutinesPerSOPoll    float64 // peak goroutines while polling (the operator loop's included), per SO

	Polls, Failed    int     // in the measured window
	OfferedPolls     int     // polls due in the window on KEDA's cadence
	P50, P99, Max    float64 // ms, in the window
	CPUPerPollMs     float64 // this process's CPU per poll in the window
	BurstPolls       int     // restart: the first operator round, all at once
	BurstFailed      int
	BurstP50         float64
	BurstP99         float64
	BurstSecs        float64 // until the last poll of the round returned
	WrongMetric      int     // polls whose metric was not leases*pending
	Metric           int64   // the metric of the last successful poll
	Errors           []string
	ConnsPeak        int64
	InFlightPeak     int64
	ConnsAccepted    int64
	Requests         int64
	Throttled        int64
	NonOK            int64
	TokenRequests    map[string]int
	ServerCPUPerPoll float64 // ms
	UnroutedConns    int
}

type pollRecord struct {
	start  time.Time
	dur    time.Duration
	err    error
	metric int64
	burst  bool
}

func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	impl := fs.String("impl", "ours", "ours or keda-v2.21.0")
	n := fs.Int("n", 10, "ScaledObjects")
	leases := fs.Int("leases", 100, "leases per processor (for the metric check)")
	pending := fs.Int("pending", 3, "items pending per lease (for the metric check)")
	shape := fs.String("shape", "steady", "steady (operator loops' start times spread over one polling interval) or restart (all at once)")
	auth := fs.String("auth", "key", "key (a connection string in the TriggerAuthentication) or workload (workload identity)")
	endpoint := fs.String("endpoint", "", "the account")
	key := fs.String("key", "", "the account key")
	control := fs.String("control", "", "the account process's statistics")
	pollingInterval := fs.Duration("polling-interval", 30*time.Second, "the ScaledObjects' pollingInterval")
	hpaPeriod := fs.Duration("hpa-period", 15*time.Second, "the HPA's sync period (one metric read per ScaledObject each)")
	hpaWorkers := fs.Int("hpa-workers", 5, "the HPA controller's concurrent syncs")
	window := fs.Duration("window", 60*time.Second, "measured after the first polling interval")
	timeout := fs.Duration("timeout", 3*time.Second, "GlobalHTTPTimeout (KEDA_HTTP_DEFAULT_TIMEOUT's default)")
	maxConnsPerHost := fs.Int("max-conns-per-host", 0, "a per-host connection limit on KEDA's shared transport, as its operator could set it (0: none, KEDA v2.21.0's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logf.SetLogger(logr.Discard()) // both scalers log through controller-runtime
	// As KEDA's operator does at start-up, with its flags' defaults.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}); err != nil {
		return err
	}
	if err := limitConnsPerHost(*maxConnsPerHost); err != nil {
		return err
	}
	newScaler := implementations[*impl]
	if newScaler == nil {
		return fmt.Errorf("unknown -impl %q (built with %d implementations)", *impl, len(implementations))
	}
	res := clientResult{Impl: *impl, Shape: *shape, Auth: *auth, N: *n, Leases: *leases, PollingInterval: *pollingInterval,
		HPAPeriod: *hpaPeriod, Window: *window, LoadAvg: loadAverage()}
	want := int64(*leases * *pending)

	var before serverStats // token grants are counted from here
	if err := getStats(*control, false, &before); err != nil {
		return err
	}
	if os.Getenv("FLEET_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation, for the profile (slow)
	}
	baseHeap, baseG := liveHeap(true), runtime.NumGoroutine()
	scalers := make([]scaler, *n)
	for i := range scalers {
		s, err := newScaler(operatorConfig(i, *impl, *auth, *endpoint, *key, *pollingInterval, *timeout))
		if err != nil {
			return fmt.Errorf("ScaledObject %d: %w", i, err)
		}
		scalers[i] = s
	}
	res.HeapPerSOBuilt = float64(liveHeap(true)-baseHeap) / float64(*n)
	res.GoroutinesBuilt = runtime.NumGoroutine() - baseG

	var (
		mu      sync.Mutex
		records []pollRecord
	)
	poll := func(i int, burst bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		m, _, err := scalers[i].GetMetricsAndActivity(ctx, "s0-metric")
		rec := pollRecord{start: start, dur: time.Since(start), err: err, burst: burst}
		if err == nil && len(m) > 0 {
			rec.metric = m[0].Value.Value()
		}
		mu.Lock()
		records = append(records, rec)
		mu.Unlock()
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var loops sync.WaitGroup
	t0 := time.Now().Add(100 * time.Millisecond)
	measureFrom := t0.Add(*pollingInterval)
	end := measureFrom.Add(*window)
	if *shape == "restart" {
		measureFrom = t0 // the burst and what follows
		end = t0.Add(*pollingInterval + *window)
	} else if *shape != "steady" {
		return fmt.Errorf("unknown -shape %q", *shape)
	}
	// The operator: one loop per ScaledObject, as KEDA's startScaleLoop: a
	// timer of pollingInterval started before each check.
	for i := range scalers {
		offset := time.Duration(0)
		if *shape == "steady" {
			offset = *pollingInterval * time.Duration(i) / time.Duration(*n)
		}
		loops.Add(1)
		go func() {
			defer loops.Done()
			if !sleepUntil(ctx, t0.Add(offset)) {
				return
			}
			first := true
			for {
				tmr := time.NewTimer(*pollingInterval)
				poll(i, first && *shape == "restart")
				first = false
				select {
				case <-tmr.C:
				case <-ctx.Done():
					tmr.Stop()
					return
				}
			}
		}()
	}
	// The HPA controller: hpaWorkers workers, each ScaledObject's metric
	// read once per hpaPeriod, phases spread (an operator restart does not
	// move them).
	hpaQueue := make(chan int, *n)
	loops.Add(1)
	go func() {
		defer loops.Done()
		defer close(hpaQueue)
		due := make(dueHeap, *n)
		for i := range due {
			due[i] = dueItem{at: t0.Add(*hpaPeriod * time.Duration((i*7919)%*n) / time.Duration(*n)), so: i}
		}
		heap.Init(&due)
		for {
			next := due[0]
			if !sleepUntil(ctx, next.at) {
				return
			}
			select {
			case hpaQueue <- next.so:
			default: // still queued from its last period
			}
			due[0].at = next.at.Add(*hpaPeriod)
			heap.Fix(&due, 0)
		}
	}()
	for range *hpaWorkers {
		loops.Add(1)
		go func() {
			defer loops.Done()
			for i := range hpaQueue {
				if ctx.Err() != nil {
					return
				}
				poll(i, false)
			}
		}()
	}

	// Sampling, and the window's start.
	var peakHeap uint64
	peakG := 0
	cpuAt := 0.0
	var atStart serverStats
	sampler := time.NewTicker(200 * time.Millisecond)
	defer sampler.Stop()
	started := false
	if *shape == "restart" {
		if err := getStats(*control, true, &atStart); err != nil {
			return err
		}
		cpuAt = cpuSeconds()
		started = true
	}
	for now := range sampler.C {
		if !started && !now.Before(measureFrom) {
			if err := getStats(*control, true, &atStart); err != nil {
				return err
			}
			cpuAt = cpuSeconds()
			started = true
		}
		if started {
			peakHeap = max(peakHeap, liveHeap(false))
			peakG = max(peakG, runtime.NumGoroutine())
		}
		if !now.Before(end) {
			break
		}
	}
	cpu := cpuSeconds() - cpuAt
	var st serverStats
	if err := getStats(*control, false, &st); err != nil {
		return err
	}
	stop()
	loops.Wait()

	// The window's figures.
	var lat, burst []float64
	mu.Lock()
	for _, r := range records {
		if r.start.Before(measureFrom) || !r.start.Before(end) {
			continue
		}
		res.Polls++
		ms := float64(r.dur) / float64(time.Millisecond)
		lat = append(lat, ms)
		if r.burst {
			res.BurstPolls++
			burst = append(burst, ms)
			res.BurstSecs = max(res.BurstSecs, r.start.Add(r.dur).Sub(t0).Seconds())
		}
		if r.err != nil {
			res.Failed++
			if r.burst {
				res.BurstFailed++
			}
			if msg := r.err.Error(); len(res.Errors) < 3 && !slices.Contains(res.Errors, msg) {
				res.Errors = append(res.Errors, msg)
			}
			continue
		}
		res.Metric = r.metric
		if r.metric != want {
			res.WrongMetric++
		}
	}
	mu.Unlock()
	span := end.Sub(measureFrom)
	res.OfferedPolls = int(float64(*n) * (span.Seconds()/pollingInterval.Seconds() + span.Seconds()/hpaPeriod.Seconds()))
	res.P50, res.P99, res.Max = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	res.BurstP50, res.BurstP99 = quantile(burst, 0.5), quantile(burst, 0.99)
	if res.Polls > 0 {
		res.CPUPerPollMs = cpu * 1000 / float64(res.Polls)
		res.ServerCPUPerPoll = (st.ServerCPUSecs - atStart.ServerCPUSecs) * 1000 / float64(res.Polls)
	}
	res.ConnsPeak, res.InFlightPeak, res.ConnsAccepted = st.ConnsPeak, st.InFlightPeak, st.ConnsAccepted
	res.Requests, res.Throttled, res.NonOK = st.Requests, st.Throttled, st.NonOK
	res.TokenRequests = map[string]int{}
	for id, n := range st.TokenRequests {
		if d := n - before.TokenRequests[id]; d > 0 {
			res.TokenRequests[id] = d
		}
	}
	res.UnroutedConns = st.UnroutedConns
	res.HeapPerSOPolling = float64(int64(peakHeap)-int64(baseHeap)) / float64(*n)
	res.GoroutinesPerSOPoll = float64(peakG-baseG) / float64(*n)

	// Idle: the loops stopped, the scalers and the shared pool's idle
	// connections kept.
	res.HeapPerSOIdle = float64(int64(liveHeap(true))-int64(baseHeap)) / float64(*n)
	res.GoroutinesPerSOIdle = float64(runtime.NumGoroutine()-baseG) / float64(*n)
	// The same without the idle connections: the account closes them.
	if resp, err := http.Get(*control + "/closeidle"); err == nil {
		resp.Body.Close()
	}
	time.Sleep(500 * time.Millisecond)
	res.HeapPerSONoConns = float64(int64(liveHeap(true))-int64(baseHeap)) / float64(*n)
	res.GoroutinesPerSONoConns = float64(runtime.NumGoroutine()-baseG) / float64(*n)
	if prefix := os.Getenv("FLEET_HEAP_PROFILE"); prefix != "" { // what the idle scalers keep
		if err := writeHeapProfile(fmt.Sprintf("%s-%s-%dx%d-%s.pprof", prefix, *impl, *n, *leases, *shape)); err != nil {
			return err
		}
	}
	for _, s := range scalers {
		_ = s.Close(context.Background())
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// operatorConfig fills a ScalerConfig as KEDA v2.21.0's scale handler does
// (pkg/scaling/scalers_builder.go) for trigger 0 of ScaledObject
// fleet/so-i, whose TriggerAuthentication holds the connection string, or
// whose podIdentity is azure-workload.
func operatorConfig(i int, impl, auth, endpoint, key string, pollingInterval, timeout time.Duration) *scalersconfig.ScalerConfig {
	name := fmt.Sprintf("so-%d", i)
	metadata := map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
		"leaseContainerId": fmt.Sprintf("leases-%d", i), "processorName": fmt.Sprintf("proc-%d", i),
		"changeFeedLagThreshold": "100",
	}
	authParams := map[string]string{"connection": "AccountEndpoint=" + endpoint + ";AccountKey=" + key + ";"}
	var podIdentity kedav1alpha1.AuthPodIdentity
	if auth == "workload" {
		podIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
		if impl == "ours" {
			// The token's audience is the public cloud's
			// (https://cosmos.azure.com/.default) for both; ours sends a
			// token outside the known clouds only to an endpoint its
			// TriggerAuthentication names.
			authParams = map[string]string{"endpoint": endpoint}
		} else {
			authParams = map[string]string{}
			metadata["endpoint"] = endpoint
		}
	}
	seconds := int32(pollingInterval / time.Second)
	trigger := kedav1alpha1.ScaleTriggers{Type: "azure-cosmosdb", Metadata: metadata}
	so := &kedav1alpha1.WithTriggers{
		TypeMeta:   metav1.TypeMeta{Kind: "ScaledObject", APIVersion: "keda.sh/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"},
		Spec:       kedav1alpha1.WithTriggersSpec{PollingInterval: &seconds, Triggers: []kedav1alpha1.ScaleTriggers{trigger}},
	}
	return &scalersconfig.ScalerConfig{
		ScalableObjectName:      name,
		ScalableObjectNamespace: "fleet",
		ScalableObjectType:      "ScaledObject",
		TriggerName:             trigger.Name,
		TriggerMetadata:         metadata,
		TriggerType:             trigger.Type,
		TriggerUseCachedMetrics: false,
		ResolvedEnv:             map[string]string{},
		AuthParams:              authParams,
		PodIdentity:             podIdentity,
		GlobalHTTPTimeout:       timeout,
		TriggerIndex:            0,
		MetricType:              trigger.MetricType,
		ScaledObject:            so,
		Recorder:                &events.FakeRecorder{},
		TriggerUniqueKey:        fmt.Sprintf("%s-%s-%s-%d", "ScaledObject", "fleet", name, 0),
	}
}

// limitConnsPerHost sets MaxConnsPerHost on KEDA's shared transport,
// which v2.21.0 does not configure: what a KEDA operator setting would do
// (hack/pr/keda-issue-fleet.md). The transport is behind KEDA's metrics
// round tripper, in an unexported field.
func limitConnsPerHost(n int) error {
	if n <= 0 {
		return nil
	}
	rt := reflect.ValueOf(kedautil.CreateRT(false))
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	next := rt.FieldByName("next")
	if !next.IsValid() {
		return fmt.Errorf("KEDA's shared round tripper %s has no field next", rt.Type())
	}
	tr, ok := reflect.NewAt(next.Type(), unsafe.Pointer(next.UnsafeAddr())).Elem().Interface().(*http.Transport)
	if !ok {
		return fmt.Errorf("KEDA's shared round tripper wraps a %s, not an *http.Transport", next.Type())
	}
	tr.MaxConnsPerHost = n
	return nil
}

// liveHeap is the live heap: after a full GC when gc, else as of the last GC.
func liveHeap(gc bool) uint64 {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func getStats(control string, reset bool, into *serverStats) error {
	url := control + "/stats"
	if reset {
		url += "?reset=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// quantile is the q-quantile of xs (nearest rank; 1 = the maximum), 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

type dueItem struct {
	at time.Time
	so int
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// writeHeapProfile writes the live heap's profile after a GC to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

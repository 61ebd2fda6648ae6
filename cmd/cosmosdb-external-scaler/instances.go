package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// instanceKey identifies one trigger configuration of one ScaledObject.
type instanceKey struct {
	namespace, name string
	hash            string // metadataHash of the scalerMetadata
}

// instance is one in-tree scaler serving one ScaledObject trigger. It is
// reused across calls with the same key and closed when its ScaledObject's
// metadata changes, when it has been unused for the idle timeout, or at
// shutdown, but never while a call (such as a stream) still holds it.
type instance struct {
	key        instanceKey
	scaler     cosmosScaler
	metricName string // as sent in GetMetricSpec: without KEDA's "s<index>-" prefix
	target     int64  // changeFeedLagThreshold
	processor  string
	secrets    *redact.Secrets
	metrics    *serverMetrics

	// sem serialises estimates, so concurrent calls for one ScaledObject
	// wait for one estimate instead of each making their own; last is
	// guarded by it.
	sem  chan struct{}
	last *served

	// Guarded by registry.mu.
	refs     int
	lastUsed time.Time
	retired  bool   // out of the registry; close when refs drops to 0
	reason   string // why it was retired

	metricsForgotten bool // guarded by metrics.mu: the series were removed at close

	closeOnce sync.Once
	closed    chan struct{} // closed after the scaler's Close returned
}

// served is what the external scaler serves for one estimate: the metric
// and the activity.
type served struct {
	value      int64   // the metric (capped lag), as an integer
	valueFloat float64 // the same, as KEDA's float field
	active     bool
	at         time.Time
}

// servedResult returns what was served for an estimate no older than maxAge
// (0: always a new estimate). KEDA calls GetMetrics and then IsActive back to back on every
// poll; with a small maxAge the second call reuses the first's estimate
// rather than reading every lease again.
func (in *instance) servedResult(ctx context.Context, maxAge time.Duration) (served, error) {
	select {
	case in.sem <- struct{}{}:
	case <-ctx.Done():
		return served{}, ctx.Err()
	}
	defer func() { <-in.sem }()
	if maxAge > 0 && in.last != nil && time.Since(in.last.at) < maxAge {
		return *in.last, nil
	}
	e, err := in.scaler.Estimate(ctx)
	in.metrics.observeEstimate(e.Duration, e.Requests, e.RequestCharge, err)
	in.metrics.observeTrigger(in, e, err)
	if err != nil {
		return served{}, err
	}
	in.last = &served{value: e.Metric, valueFloat: float64(e.Metric), active: e.Active, at: time.Now()}
	return *in.last, nil
}

// labels name the instance's trigger in the per-trigger series.
func (in *instance) labels() triggerLabels {
	return triggerLabels{namespace: in.key.namespace, scaledObject: in.key.name, trigger: in.metricName}
}

func (in *instance) close(log *slog.Logger) {
	in.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.metrics.forgetTrigger(in)
		err := in.scaler.Close(ctx)
		attrs := []any{"namespace", in.key.namespace, "name", in.key.name, "processor", in.processor,
			"metadataHash", in.key.hash[:12], "reason", in.reason}
		if err != nil {
			log.Warn("scaler closed with an error", append(attrs, "error", in.secrets.Redact(err.Error()))...)
		} else {
			log.Info("scaler closed", attrs...)
		}
		close(in.closed)
	})
}

// registry holds the live instances.
type registry struct {
	log         *slog.Logger
	idleTimeout time.Duration
	build       func(ref *pb.ScaledObjectRef, key instanceKey) (*instance, error)

	mu       sync.Mutex
	items    map[instanceKey]*instance
	shutdown bool

	stopSweep chan struct{}
	swept     sync.WaitGroup
}

func newRegistry(log *slog.Logger, idleTimeout time.Duration, build func(*pb.ScaledObjectRef, instanceKey) (*instance, error)) *registry {
	r := &registry{log: log, idleTimeout: idleTimeout, build: build, items: map[instanceKey]*instance{}, stopSweep: make(chan struct{})}
	if idleTimeout > 0 {
		every := min(max(idleTimeout/4, 10*time.Millisecond), time.Minute)
		r.swept.Add(1)
		go r.sweepLoop(every)
	}
	return r
}

var errShuttingDown = status.Error(codes.Unavailable, "the external scaler is shutting down")

// acquire returns the instance for ref, creating it if needed, and a
// release function the caller must call once done with it.
func (r *registry) acquire(ref *pb.ScaledObjectRef) (*instance, func(), error) {
	if ref == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "scaledObjectRef is required")
	}
	key := instanceKey{namespace: ref.Namespace, name: ref.Name, hash: metadataHash(ref.ScalerMetadata)}
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		return nil, nil, errShuttingDown
	}
	if in, ok := r.items[key]; ok {
		in.refs++
		in.lastUsed = time.Now()
		r.mu.Unlock()
		return in, r.releaser(in), nil
	}
	r.mu.Unlock()

	// Built outside the lock; a concurrent call may build the same key, in
	// which case the first one stored wins and the other is dropped.
	in, err := r.build(ref, key)
	if err != nil {
		return nil, nil, err
	}

	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		in.reason = "shutdown"
		in.close(r.log)
		return nil, nil, errShuttingDown
	}
	if existing, ok := r.items[key]; ok {
		existing.refs++
		existing.lastUsed = time.Now()
		r.mu.Unlock()
		in.reason = "duplicate of a concurrently created scaler"
		in.close(r.log)
		return existing, r.releaser(existing), nil
	}
	toClose := r.retireEdited(key, in.metricName)
	in.refs, in.lastUsed = 1, time.Now()
	r.items[key] = in
	r.mu.Unlock()

	r.log.Info("scaler created", "namespace", key.namespace, "name", key.name, "processor", in.processor,
		"metric", in.metricName, "metadataHash", key.hash[:12])
	for _, old := range toClose {
		old.close(r.log)
	}
	return in, r.releaser(in), nil
}

// retireEdited retires the instances of the same ScaledObject trigger
// (same metric) with other metadata than key's: the ScaledObject was
// edited, so the old configuration goes. Another trigger of the same
// ScaledObject (another metric) is left alone. It returns the retired
// instances nobody holds, to close outside the lock; r.mu is held.
func (r *registry) retireEdited(key instanceKey, metricName string) (toClose []*instance) {
	for k, old := range r.items {
		if k.namespace == key.namespace && k.name == key.name && old.metricName == metricName {
			delete(r.items, k)
			old.retired, old.reason = true, "metadata changed"
			if old.refs == 0 {
				toClose = append(toClose, old)
			}
		}
	}
	return toClose
}

func (r *registry) releaser(in *instance) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			in.refs--
			in.lastUsed = time.Now()
			closeNow := in.retired && in.refs == 0
			r.mu.Unlock()
			if closeNow {
				in.close(r.log)
			}
		})
	}
}

func (r *registry) sweepLoop(every time.Duration) {
	defer r.swept.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stopSweep:
			return
		case now := <-t.C:
			r.sweep(now)
		}
	}
}

// sweep closes instances nobody has used for the idle timeout, such as
// those of a deleted ScaledObject.
func (r *registry) sweep(now time.Time) {
	var idle []*instance
	r.mu.Lock()
	for k, in := range r.items {
		if in.refs == 0 && now.Sub(in.lastUsed) >= r.idleTimeout {
			delete(r.items, k)
			in.retired, in.reason = true, "unused for "+r.idleTimeout.String()
			idle = append(idle, in)
		}
	}
	r.mu.Unlock()
	for _, in := range idle {
		in.close(r.log)
	}
}

// closeAll refuses new instances and closes every instance; those still
// held are closed when released.
func (r *registry) closeAll() {
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		return
	}
	r.shutdown = true
	var free []*instance
	for k, in := range r.items {
		delete(r.items, k)
		in.retired, in.reason = true, "shutdown"
		if in.refs == 0 {
			free = append(free, in)
		}
	}
	r.mu.Unlock()
	close(r.stopSweep)
	r.swept.Wait()
	for _, in := range free {
		in.close(r.log)
	}
}

// size is the number of live instances.
func (r *registry) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// snapshot lists the live instances (for tests and diagnostics).
func (r *registry) snapshot() []*instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*instance, 0, len(r.items))
	for _, in := range r.items {
		out = append(out, in)
	}
	return out
}

// newInstance builds the in-tree scaler for ref and reads the metric name
// and target it reports.
func newInstance(ref *pb.ScaledObjectRef, key instanceKey, o serverOptions) (*instance, error) {
	tc, err := buildTriggerConfig(ref, o.lookupEnv, o.httpTimeout)
	if err != nil {
		return nil, err
	}
	allowed := o.allowedEndpoints
	if allowed.patterns == nil {
		allowed, _ = parseEndpointAllowList(defaultAllowedEndpoints, false)
	}
	if err := allowed.adopt(tc.scaler.TriggerMetadata, tc.scaler.AuthParams); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	secrets := &redact.Secrets{}
	secrets.Add(tc.secrets...)
	in := &instance{key: key, secrets: secrets, metrics: o.metrics, sem: make(chan struct{}, 1), closed: make(chan struct{})}
	sc, trigger, err := o.newScaler(tc.scaler)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, secrets.Redact(err.Error()))
	}
	in.scaler, in.processor, in.metricName, in.target = sc, trigger.Processor, trigger.MetricName, trigger.Threshold
	// KEDA's own keys, the ...FromScalerEnv keys and the pod identity keys
	// are gone from the metadata by now: what remains unknown is the user's.
	if o.logger != nil {
		for _, warning := range triggerWarnings(tc.scaler.TriggerMetadata) {
			o.logger.Warn(warning, "namespace", ref.Namespace, "name", ref.Name)
		}
	}
	return in, nil
}

// estimateStatus turns an estimate failure into a gRPC status.
func estimateStatus(ctx context.Context, err error, secrets *redact.Secrets) error {
	if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return status.FromContextError(ctxErr).Err()
	}
	return status.Error(codes.Unavailable, secrets.Redact(err.Error()))
}

package lag

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/changefeed"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// DefaultConcurrency bounds the per-lease reads in flight during one poll.
// Against a real account the round trips dominate a poll, so the bound is
// set where more reads in flight stop removing waves of round trips
// (measured in BENCHMARKS.md, "Choosing the read concurrency"). Workers are
// only started as leases need them: a processor with 100 leases uses 100.
// Each lease is one read of about 1 RU on its own partition per poll whatever
// the bound, so it does not concentrate RU load.
const DefaultConcurrency = 256

// LeaseLag is one lease's estimate.
type LeaseLag struct {
	lease.Lease
	Lag         int64
	StaleParent bool // its range split or merged; no lag could be read
}

// Result is the outcome of one estimate.
type Result struct {
	Leases       []LeaseLag // sorted by lease token
	StaleParents int
	// SplitRetried is true when a split was seen and the estimate was redone
	// after a complete lease refresh.
	SplitRetried  bool
	Documents     int // documents the lease query returned, leases or not
	Requests      int64
	RequestCharge float64
	Duration      time.Duration
}

// Estimator computes a processor's lag: one lease query (every page), then
// one change feed read per lease, concurrently.
type Estimator struct {
	leases    *lease.Reader
	positions *changefeed.Reader
	data      *rest.Client
	processor string
	database  string
	container string

	// Concurrency bounds the reads in flight; 0 means DefaultConcurrency.
	Concurrency int

	mu    sync.Mutex
	scope *lease.Scope // resolved monitored RIDs, cached across polls
}

// Config names what an Estimator watches.
type Config struct {
	Data, Lease                   *rest.Client
	Database, Container           string // the monitored container
	LeaseDatabase, LeaseContainer string
	Processor                     string
	Concurrency                   int
}

// NewEstimator returns an Estimator; it makes no request until Estimate.
func NewEstimator(c Config) *Estimator {
	return &Estimator{
		leases:      &lease.Reader{Client: c.Lease, Database: c.LeaseDatabase, Container: c.LeaseContainer},
		positions:   changefeed.NewReader(c.Data, c.Database, c.Container),
		data:        c.Data,
		processor:   c.Processor,
		database:    c.Database,
		container:   c.Container,
		Concurrency: c.Concurrency,
	}
}

// Estimate runs one poll. Only a split (410 Gone, substatus 1002, or an EPK
// lease spanning several ranges) leads to one complete lease refresh and one
// retry; leases still stale then are reported as stale parents. Any other
// failure fails the whole estimate: a partial total is never returned.
func (e *Estimator) Estimate(ctx context.Context) (Result, error) {
	start := time.Now()
	ctx, usage := rest.WithUsage(ctx)
	res, err := e.estimate(ctx)
	res.Requests, res.RequestCharge, res.Duration = usage.Requests(), usage.RequestCharge(), time.Since(start)
	return res, err
}

func (e *Estimator) estimate(ctx context.Context) (Result, error) {
	scope, fresh, err := e.resolveScope(ctx)
	if err != nil {
		return Result{}, err
	}
	res, err := e.attempt(ctx, scope, false)
	if err == nil && len(res.Leases) == 0 && res.strangers > 0 && !fresh {
		// This processor's leases exist but name another container: the
		// monitored container was probably recreated. Re-read its RIDs once.
		e.forgetScope()
		if scope, _, err = e.resolveScope(ctx); err != nil {
			return Result{}, err
		}
		res, err = e.attempt(ctx, scope, false)
	}
	if errors.Is(err, changefeed.ErrStaleParent) {
		res, err = e.attempt(ctx, scope, true)
		res.SplitRetried = true
	}
	if err != nil {
		return Result{}, err
	}
	return res.Result, nil
}

type attemptResult struct {
	Result
	strangers int
}

// attempt reads all pages of leases and every lease's position. On the
// first attempt a stale parent cancels the remaining reads and is returned
// as ErrStaleParent; on the final attempt it is recorded in the result.
func (e *Estimator) attempt(ctx context.Context, scope lease.Scope, final bool) (attemptResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	concurrency := e.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		res     attemptResult
		work    = make(chan lease.Lease)
		workers int
	)
	fail := func(err error) { cancel(err) } // the first cause wins
	// A fixed pool of workers, grown on demand up to the bound: goroutines are
	// reused across leases (their stacks are already grown for the request
	// pipeline) and reads start as soon as the first page arrives.
	worker := func() {
		defer wg.Done()
		for l := range work {
			if ctx.Err() != nil {
				continue // drain: the attempt is over
			}
			lag, err := e.positions.Lag(ctx, l)
			stale := errors.Is(err, changefeed.ErrStaleParent)
			if err != nil && (!stale || !final) {
				fail(err)
				continue
			}
			mu.Lock()
			res.Leases = append(res.Leases, LeaseLag{Lease: l, Lag: lag, StaleParent: stale})
			if stale {
				res.StaleParents++
			}
			mu.Unlock()
		}
	}

	queryErr := e.leases.Read(ctx, scope, func(page lease.Page) error {
		mu.Lock()
		res.Documents += page.Documents
		res.strangers += page.Strangers
		mu.Unlock()
		for _, l := range page.Leases {
			select {
			case work <- l:
				continue
			default:
			}
			if workers < concurrency {
				workers++
				wg.Add(1)
				go worker()
			}
			select {
			case work <- l:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return nil
	})
	close(work)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause // a read failed (or found a split) and stopped the rest
	}
	if queryErr != nil {
		return res, queryErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	sort.Slice(res.Leases, func(i, j int) bool { return res.Leases[i].Token < res.Leases[j].Token })
	return res, nil
}

func (e *Estimator) resolveScope(ctx context.Context) (lease.Scope, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.scope != nil {
		return *e.scope, false, nil
	}
	s, err := lease.ReadScope(ctx, e.data, e.processor, e.database, e.container)
	if err != nil {
		return lease.Scope{}, false, err
	}
	e.scope = &s
	return s, true, nil
}

func (e *Estimator) forgetScope() {
	e.mu.Lock()
	e.scope = nil
	e.mu.Unlock()
}

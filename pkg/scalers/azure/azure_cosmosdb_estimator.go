package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// CosmosDBReadConcurrency bounds a poll's lease reads in flight. Each is
// about 1 RU on its own partition: the bound limits sockets and memory.
const CosmosDBReadConcurrency = 256

// CosmosDBContainers names the monitored and lease containers and the processor.
type CosmosDBContainers struct {
	Database, Container, LeaseDatabase, LeaseContainer, Processor string
}

// CosmosDBLeaseLag is one lease's estimate.
type CosmosDBLeaseLag struct {
	CosmosDBLease
	Lag          int64
	PendingSince time.Time // when the first pending change was made, if known
	StaleParent  bool      // its range split or merged: no lag could be read
}

// CosmosDBLagEstimate is the outcome of one poll.
type CosmosDBLagEstimate struct {
	Leases        []CosmosDBLeaseLag // sorted by lease token
	StaleParents  int
	SplitRetried  bool  // a split was seen and the estimate redone after a lease refresh
	Documents     int   // documents the lease query returned, leases or not
	Requests      int64 // tries; these three are set on failure too
	RequestCharge float64
	Duration      time.Duration
}

// CosmosDBLagSummary is the trigger's arithmetic over one estimate.
type CosmosDBLagSummary struct {
	TotalLag         int64 // sum of positive lease lags
	ActivePartitions int64 // leases with lag
	Metric           int64 // min(TotalLag, ActivePartitions * threshold)
	Active           bool  // TotalLag > activation threshold
}

// Summarize caps the metric at min(totalLag, activePartitions * threshold),
// so that with AverageValue the HPA never asks for more replicas than
// partitions with work. A stale parent must be replaced by a running
// processor: the total rises to activation + 1 if needed and, when nothing
// else lags, one partition is active. Sums and products saturate.
func (e CosmosDBLagEstimate) Summarize(threshold, activation int64) CosmosDBLagSummary {
	var s CosmosDBLagSummary
	for _, l := range e.Leases {
		if l.Lag > 0 {
			s.TotalLag = min(s.TotalLag, math.MaxInt64-l.Lag) + l.Lag
			s.ActivePartitions++
		}
	}
	if e.StaleParents > 0 {
		s.TotalLag = max(s.TotalLag, min(activation, math.MaxInt64-1)+1)
		s.ActivePartitions = max(s.ActivePartitions, 1)
	}
	s.Metric = s.TotalLag
	if s.ActivePartitions <= math.MaxInt64/max(threshold, 1) {
		s.Metric = min(s.TotalLag, s.ActivePartitions*max(threshold, 0))
	}
	s.Active = s.TotalLag > activation
	return s
}

// CosmosDBLagEstimator estimates a processor's pending work: the lease
// query, and one change feed read per lease, from the first page on.
type CosmosDBLagEstimator struct {
	data, leases *CosmosDBClient
	names        CosmosDBContainers
	positions    *cosmosDBPositionReader

	mu    sync.Mutex
	scope *cosmosDBLeaseScope // the monitored container's RIDs, cached across polls
}

// NewCosmosDBLagEstimator returns an estimator; Estimate sends the requests.
func NewCosmosDBLagEstimator(data, leases *CosmosDBClient, names CosmosDBContainers) *CosmosDBLagEstimator {
	return &CosmosDBLagEstimator{data: data, leases: leases, names: names,
		positions: &cosmosDBPositionReader{client: data, database: names.Database, container: names.Container,
			docs: data.resource("dbs", names.Database, "colls", names.Container, "docs")}}
}

// Estimate runs one poll. A split (410/1002, or an EPK lease spanning
// ranges) leads to one lease refresh and retry, then counts stale parents;
// any other failure fails the estimate, never a partial total.
func (e *CosmosDBLagEstimator) Estimate(ctx context.Context) (CosmosDBLagEstimate, error) {
	start, usage := time.Now(), &cosmosDBUsage{}
	ctx = context.WithValue(ctx, cosmosDBUsageKey{}, usage)
	res, err := e.estimate(ctx)
	res.Requests, res.RequestCharge, res.Duration = usage.requests, usage.charge, time.Since(start)
	return res, err
}

func (e *CosmosDBLagEstimator) estimate(ctx context.Context) (CosmosDBLagEstimate, error) {
	scope, fresh, err := e.resolveScope(ctx)
	if err != nil {
		return CosmosDBLagEstimate{}, err
	}
	res, strangers, err := e.attempt(ctx, scope, false)
	if err == nil && len(res.Leases) == 0 && strangers > 0 && !fresh {
		// The leases name another container: it was recreated? Re-read RIDs.
		e.mu.Lock()
		e.scope = nil
		e.mu.Unlock()
		if scope, _, err = e.resolveScope(ctx); err != nil {
			return CosmosDBLagEstimate{}, err
		}
		res, _, err = e.attempt(ctx, scope, false)
	}
	if errors.Is(err, errCosmosDBStaleParent) {
		res, _, err = e.attempt(ctx, scope, true)
		res.SplitRetried = true
	}
	if err != nil {
		res = CosmosDBLagEstimate{}
	}
	return res, err
}

// attempt reads the leases and their positions; a stale parent is an error
// before the final attempt.
func (e *CosmosDBLagEstimator) attempt(ctx context.Context, scope cosmosDBLeaseScope, final bool) (CosmosDBLagEstimate, int, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(1 + CosmosDBReadConcurrency)
	var (
		mu        sync.Mutex
		res       CosmosDBLagEstimate
		strangers int
		leases    = make(chan CosmosDBLease)
	)
	reader := func() error {
		for l := range leases {
			if err := e.read(gctx, l, final, &mu, &res); err != nil {
				return err
			}
		}
		return nil
	}
	// The query is a task too: whichever fails first stops the rest. Readers
	// read many leases each: a goroutine per lease regrows its stack every time.
	g.Go(func() error {
		defer close(leases)
		return readCosmosDBLeases(gctx, e.leases, e.names.LeaseDatabase, e.names.LeaseContainer, scope, func(page cosmosDBLeasePage) error {
			mu.Lock()
			res.Documents += page.documents
			strangers += page.strangers
			mu.Unlock()
			for _, l := range page.leases {
				g.TryGo(reader) // one more reader, up to the limit
				select {
				case leases <- l:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return gctx.Err()
		})
	})
	if err := g.Wait(); err != nil {
		return res, strangers, err
	}
	slices.SortFunc(res.Leases, func(a, b CosmosDBLeaseLag) int { return strings.Compare(a.Token, b.Token) })
	return res, strangers, nil
}

// read estimates one lease into res.
func (e *CosmosDBLagEstimator) read(ctx context.Context, l CosmosDBLease, final bool, mu *sync.Mutex, res *CosmosDBLagEstimate) error {
	lag, since, err := e.positions.lag(ctx, l)
	stale := errors.Is(err, errCosmosDBStaleParent)
	if err != nil && (!stale || !final) {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	res.Leases = append(res.Leases, CosmosDBLeaseLag{CosmosDBLease: l, Lag: lag, PendingSince: since, StaleParent: stale})
	if stale {
		res.StaleParents++
	}
	return nil
}

// resolveScope reads, once, the RIDs the leases name the container by.
func (e *CosmosDBLagEstimator) resolveScope(ctx context.Context) (cosmosDBLeaseScope, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.scope != nil {
		return *e.scope, false, nil
	}
	n := e.names
	s := cosmosDBLeaseScope{processor: n.Processor, account: cosmosDBAccountName(e.data.conn.Endpoint.Hostname()), databaseID: n.Database, containerID: n.Container}
	var err error
	if s.databaseRID, err = e.readRID(ctx, "read database "+cosmosDBExcerpt(n.Database), "dbs", n.Database); err != nil {
		return s, false, err
	}
	if s.containerRID, err = e.readRID(ctx, "read container "+cosmosDBExcerpt(n.Database)+"/"+cosmosDBExcerpt(n.Container), "dbs", n.Database, "colls", n.Container); err != nil {
		return s, false, err
	}
	e.scope = &s
	return s, true, nil
}

func (e *CosmosDBLagEstimator) readRID(ctx context.Context, operation string, segments ...string) (string, error) {
	_, _, body, err := e.data.send(ctx, http.MethodGet, e.data.resource(segments...), nil, nil, operation, http.StatusOK)
	if err != nil {
		return "", err
	}
	var props struct {
		RID string `json:"_rid"`
	}
	if err := json.Unmarshal(body, &props); err != nil || props.RID == "" {
		return "", fmt.Errorf("%s: response has no _rid", operation)
	}
	return props.RID, nil
}

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

	"golang.org/x/sync/errgroup"
)

// cosmosDBReadConcurrency bounds a poll's reads in flight: one operator polls
// every ScaledObject, so a processor with thousands of leases must not open
// thousands of connections; a poll of up to 256 leases takes one round trip.
const cosmosDBReadConcurrency = 256

// CosmosDBContainers names the monitored and lease containers and the processor.
type CosmosDBContainers struct {
	Database, Container, LeaseDatabase, LeaseContainer, Processor string
}

// CosmosDBLeaseLag is one lease's estimate.
type CosmosDBLeaseLag struct {
	CosmosDBLease
	Lag         int64
	StaleParent bool // its range split or merged: no lag could be read
}

// CosmosDBLagEstimate is the outcome of one poll.
type CosmosDBLagEstimate struct {
	Leases       []CosmosDBLeaseLag // sorted by lease token
	StaleParents int
	SplitRetried bool // a split was seen and the estimate redone after a lease refresh
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
	docs         string // the monitored container's documents, whose change feed each read addresses

	mu     sync.Mutex                  // guards the caches, never held across a request
	scope  *cosmosDBLeaseScope         // the monitored container's RIDs
	ranges []cosmosDBPartitionKeyRange // its live physical ranges, loaded for EPK leases
}

// NewCosmosDBLagEstimator returns an estimator; Estimate sends the requests.
func NewCosmosDBLagEstimator(data, leases *CosmosDBClient, names CosmosDBContainers) *CosmosDBLagEstimator {
	return &CosmosDBLagEstimator{data: data, leases: leases, names: names, docs: data.url("dbs", names.Database, "colls", names.Container, "docs")}
}

// Estimate runs one poll. A split (410/1002, or an EPK lease spanning
// ranges) is retried once with fresh leases and ranges, then counts stale
// parents; any other failure fails the estimate, never a partial total.
func (e *CosmosDBLagEstimator) Estimate(ctx context.Context) (CosmosDBLagEstimate, error) {
	scope, err := e.resolveScope(ctx)
	if err != nil {
		return CosmosDBLagEstimate{}, err
	}
	res, err := e.attempt(ctx, scope, false)
	if errors.Is(err, errCosmosDBStaleParent) {
		e.mu.Lock()
		e.ranges = nil
		e.mu.Unlock()
		res, err = e.attempt(ctx, scope, true)
		res.SplitRetried = true
	}
	if err != nil {
		return CosmosDBLagEstimate{}, err
	}
	return res, nil
}

// attempt reads the leases, then their positions, cosmosDBReadConcurrency at
// a time; a stale parent is an error before the final attempt.
func (e *CosmosDBLagEstimator) attempt(ctx context.Context, scope cosmosDBLeaseScope, final bool) (CosmosDBLagEstimate, error) {
	leases, err := readCosmosDBLeases(ctx, e.leases, e.names.LeaseDatabase, e.names.LeaseContainer, scope)
	if err != nil {
		return CosmosDBLagEstimate{}, err
	}
	ranges, err := e.liveRanges(ctx, leases)
	if err != nil {
		return CosmosDBLagEstimate{}, err
	}
	res := CosmosDBLagEstimate{Leases: make([]CosmosDBLeaseLag, len(leases))}
	// Each reader takes the next lease: a goroutine per lease would grow a
	// fresh stack through net/http and azcore for every read.
	var mu sync.Mutex
	next := 0
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next - 1
	}
	g, gctx := errgroup.WithContext(ctx)
	for range min(cosmosDBReadConcurrency, len(leases)) {
		g.Go(func() error {
			for i := take(); i < len(leases); i = take() {
				lag, err := e.lag(gctx, leases[i], ranges)
				if lag.StaleParent = errors.Is(err, errCosmosDBStaleParent); lag.StaleParent && final {
					err = nil
				}
				if err != nil {
					return err
				}
				res.Leases[i] = lag
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return CosmosDBLagEstimate{}, err
	}
	for _, l := range res.Leases {
		if l.StaleParent {
			res.StaleParents++
		}
	}
	slices.SortFunc(res.Leases, func(a, b CosmosDBLeaseLag) int { return strings.Compare(a.Token, b.Token) })
	return res, nil
}

// liveRanges returns the monitored container's live ranges when an EPK
// lease needs them: cached across polls, loaded before the readers start.
func (e *CosmosDBLagEstimator) liveRanges(ctx context.Context, leases []CosmosDBLease) ([]cosmosDBPartitionKeyRange, error) {
	if !slices.ContainsFunc(leases, func(l CosmosDBLease) bool { return l.EPK }) {
		return nil, nil
	}
	e.mu.Lock()
	ranges := e.ranges
	e.mu.Unlock()
	if ranges != nil {
		return ranges, nil
	}
	ranges, err := e.loadRanges(ctx)
	if err == nil {
		e.mu.Lock()
		e.ranges = ranges
		e.mu.Unlock()
	}
	return ranges, err
}

// resolveScope reads the RIDs the leases name the container by, once.
func (e *CosmosDBLagEstimator) resolveScope(ctx context.Context) (cosmosDBLeaseScope, error) {
	e.mu.Lock()
	cached := e.scope
	e.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	n := e.names
	s := cosmosDBLeaseScope{processor: n.Processor, account: cosmosDBAccountName(e.data.endpoint.Hostname()), databaseID: n.Database, containerID: n.Container}
	var err error
	if s.databaseRID, err = e.readRID(ctx, "read database "+n.Database, "dbs", n.Database); err != nil {
		return s, err
	}
	if s.containerRID, err = e.readRID(ctx, "read container "+n.Database+"/"+n.Container, "dbs", n.Database, "colls", n.Container); err != nil {
		return s, err
	}
	e.mu.Lock()
	e.scope = &s
	e.mu.Unlock()
	return s, nil
}

func (e *CosmosDBLagEstimator) readRID(ctx context.Context, operation string, path ...string) (string, error) {
	resp, err := e.data.send(ctx, cosmosDBRequest{operation: operation, method: http.MethodGet, url: e.data.url(path...), ok: []int{http.StatusOK}})
	if err != nil {
		return "", err
	}
	var props struct {
		RID string `json:"_rid"`
	}
	if err := json.Unmarshal(resp.body, &props); err != nil || props.RID == "" {
		return "", fmt.Errorf("%s: response has no _rid", operation)
	}
	return props.RID, nil
}

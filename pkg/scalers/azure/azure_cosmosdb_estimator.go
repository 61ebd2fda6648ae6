package azure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

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
	docs         string             // the monitored container's documents, whose change feed each read addresses
	container    *cosmosDBContainer // the bound on its requests in flight, shared by the process's scalers
	release      func()             // the hold on container

	mu     sync.Mutex                  // guards the caches, never held across a request
	scope  *cosmosDBLeaseScope         // the monitored container's RIDs: see Estimate for what invalidates them
	ranges []cosmosDBPartitionKeyRange // its live physical ranges, loaded at the first EPK lease
}

// NewCosmosDBLagEstimator returns an estimator; Estimate sends the requests.
func NewCosmosDBLagEstimator(data, leases *CosmosDBClient, names CosmosDBContainers) *CosmosDBLagEstimator {
	container, release, _ := cosmosDBContainers.acquire(newCosmosDBContainerKey(data.endpoint, names.Database, names.Container), newCosmosDBContainer)
	return &CosmosDBLagEstimator{data: data, leases: leases, names: names, docs: data.url("dbs", names.Database, "colls", names.Container, "docs"),
		container: container, release: release}
}

// Close releases the estimator's holds on what the process's scalers share
// (its container's bound, its clients' credential); it may be called more
// than once.
func (e *CosmosDBLagEstimator) Close() {
	e.release()
	e.data.Close()
	e.leases.Close()
}

// errCosmosDBContainerChanged: the RIDs in hand no longer name the monitored
// container (deleted and created again: a restore, a redeploy).
var errCosmosDBContainerChanged = errors.New("the monitored container is not the one whose RIDs were read")

// Estimate runs one poll. A split (410/1002, or an EPK lease spanning
// ranges) is retried once with fresh leases and ranges, then counts stale
// parents; any other failure fails the estimate, never a partial total.
//
// The container's RIDs, which lease ids name it by, are read once and kept
// until a poll sees that they no longer name it: a change feed answer from
// another container (x-ms-content-path), or a lease of this processor and
// account for a container not seen when they were read (the container
// recreated, its processor restarted). Then they are read again and the
// poll redone; if the new RIDs do not hold either, the poll fails.
func (e *CosmosDBLagEstimator) Estimate(ctx context.Context) (CosmosDBLagEstimate, error) {
	e.mu.Lock()
	scope := e.scope
	e.mu.Unlock()
	fresh, final := scope == nil, false
	for {
		if scope == nil {
			var err error
			if scope, err = e.resolveScope(ctx); err != nil {
				return CosmosDBLagEstimate{}, err
			}
		}
		res, others, err := e.attempt(ctx, scope, fresh, final)
		switch {
		case errors.Is(err, errCosmosDBContainerChanged) && !fresh:
			scope, fresh = nil, true
			continue
		case errors.Is(err, errCosmosDBStaleParent) && !final:
			e.mu.Lock()
			e.ranges = nil
			e.mu.Unlock()
			final = true
			continue
		case err != nil:
			return CosmosDBLagEstimate{}, err
		}
		if len(others) > 0 {
			e.remember(scope, others)
		}
		res.SplitRetried = final
		return res, nil
	}
}

// attempt reads the leases and, as each page arrives, their positions.
// Before it hands a lease to a reader the query, in the poll's goroutine,
// takes the read's place at the container, and starts a reader only when
// all its others are busy: a poll waiting for its container waits in its
// query, and its readers are no more than its reads in flight. A stale
// parent is an error before the final attempt. others are the lease id
// parts of other containers first seen here, which only a fresh scope may
// meet.
func (e *CosmosDBLagEstimator) attempt(ctx context.Context, scope *cosmosDBLeaseScope, fresh, final bool) (CosmosDBLagEstimate, []string, error) {
	var (
		mu      sync.Mutex // guards res and busy
		res     CosmosDBLagEstimate
		others  []string // only the query writes it
		ranges  []cosmosDBPartitionKeyRange
		readers int // started; only the query counts them
		busy    int // leases handed to readers and not yet read (mu)
	)
	g, gctx := errgroup.WithContext(ctx)
	// Each reader reads lease after lease: a goroutine per lease would grow
	// a fresh stack through net/http and azcore for every read.
	leases := make(chan cosmosDBLeaseRead)
	read := func() error {
		for r := range leases {
			lag, err := e.lag(gctx, r.lease, r.ranges, scope.containerRID, r.place)
			if lag.StaleParent = errors.Is(err, errCosmosDBStaleParent); lag.StaleParent && final {
				err = nil
			}
			mu.Lock()
			busy--
			if err == nil {
				res.Leases = append(res.Leases, lag)
				if lag.StaleParent {
					res.StaleParents++
				}
			}
			mu.Unlock()
			r.place.give()
			if err != nil {
				return err
			}
		}
		return nil
	}
	query := readCosmosDBLeases(gctx, e.leases, e.container, e.names.LeaseDatabase, e.names.LeaseContainer, scope.processor, func(doc cosmosDBLeaseDocument) error {
		container, ok := scope.leaseContainer(doc.ID)
		switch {
		case !ok:
			return nil
		case !scope.ownsContainer(container):
			if scope.others[container] || slices.Contains(others, container) {
				return nil
			}
			if !fresh {
				return fmt.Errorf("%w: lease %s names another container of processor %q", errCosmosDBContainerChanged, cosmosDBExcerpt(doc.ID), scope.processor)
			}
			others = append(others, container)
			return nil
		}
		l, ok := doc.lease()
		if !ok {
			return nil
		}
		if l.EPK && ranges == nil {
			var err error
			if ranges, err = e.liveRanges(gctx); err != nil {
				return err
			}
		}
		place := &cosmosDBPlace{container: e.container}
		if err := place.take(gctx, false); err != nil {
			return err
		}
		mu.Lock()
		busy++
		allBusy := busy > readers
		mu.Unlock()
		if allBusy {
			readers++
			g.Go(read)
		}
		select {
		case leases <- cosmosDBLeaseRead{l, ranges, place}:
			return nil
		case <-gctx.Done(): // no reader will take it
			mu.Lock()
			busy--
			mu.Unlock()
			place.give()
			return gctx.Err()
		}
	})
	close(leases)
	// A reader's failure ends the query too, so it comes first; a failed
	// query leaves the readers to finish the reads they hold.
	if err := cmp.Or(g.Wait(), query); err != nil {
		return CosmosDBLagEstimate{}, nil, err
	}
	slices.SortFunc(res.Leases, func(a, b CosmosDBLeaseLag) int { return strings.Compare(a.Token, b.Token) })
	return res, others, nil
}

// liveRanges returns the monitored container's live ranges, cached across
// polls until a split or merge, or new RIDs.
func (e *CosmosDBLagEstimator) liveRanges(ctx context.Context) ([]cosmosDBPartitionKeyRange, error) {
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

// resolveScope reads the RIDs the leases name the container by, and keeps
// them in place of any earlier ones, whose ranges it forgets.
func (e *CosmosDBLagEstimator) resolveScope(ctx context.Context) (*cosmosDBLeaseScope, error) {
	n := e.names
	s := &cosmosDBLeaseScope{processor: n.Processor, account: cosmosDBAccountName(e.data.endpoint.Hostname()), databaseID: n.Database, containerID: n.Container}
	var err error
	if s.databaseRID, err = e.readRID(ctx, "read database "+n.Database, "dbs", n.Database); err != nil {
		return nil, err
	}
	if s.containerRID, err = e.readRID(ctx, "read container "+n.Database+"/"+n.Container, "dbs", n.Database, "colls", n.Container); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.scope, e.ranges = s, nil
	e.mu.Unlock()
	return s, nil
}

// remember adds the other containers a fresh scope met to the kept scope, if
// it is still that one: a later poll meeting them reads no RIDs again.
func (e *CosmosDBLagEstimator) remember(scope *cosmosDBLeaseScope, others []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.scope != scope {
		return
	}
	kept := *scope // a new value: polls in flight hold the old one
	kept.others = maps.Clone(scope.others)
	if kept.others == nil {
		kept.others = map[string]bool{}
	}
	for _, c := range others {
		kept.others[c] = true
	}
	e.scope = &kept
}

func (e *CosmosDBLagEstimator) readRID(ctx context.Context, operation string, path ...string) (string, error) {
	resp, err := e.data.send(ctx, cosmosDBRequest{operation: operation, method: http.MethodGet, url: e.data.url(path...), ok: []int{http.StatusOK}, container: e.container})
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

// cosmosDBLeaseRead is a lease handed to a reader, with the live ranges an
// EPK lease is read through.
type cosmosDBLeaseRead struct {
	lease  CosmosDBLease
	ranges []cosmosDBPartitionKeyRange
	place  *cosmosDBPlace // the read's place at the container, taken
}

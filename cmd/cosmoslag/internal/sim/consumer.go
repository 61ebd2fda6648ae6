package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// The simulated consumer: a change feed processor's replicas draining the
// monitored container and checkpointing their leases.

// simLease is the processor's view of one of its leases.
type simLease struct {
	token string // a partition key range id (.NET v0 leases), or "{min}-{max}" (v1, after a merge)
	// rangeID is the physical range the lease is read through: its token
	// for a v0 lease; for a v1 lease the merged range holding its EPK
	// range [minEPK, maxEPK).
	rangeID        string
	epk            bool
	minEPK, maxEPK string
	checkpoint     int64 // LSN of the last processed change
	owner          int   // replica number, 0 = unowned
	carry          float64
	stale          bool   // its range split or merged; the next running replica replaces it
	mergedInto     string // the range its range merged into, if it merged
	caughtUp       int64  // range LSN at which a read last found nothing more; -1 = never
}

// writer is the lease writer of the lease's format.
func (w *World) writer(l *simLease) *leasetest.Writer {
	if l.epk {
		return w.epkWriter
	}
	return w.leaseWriter
}

// runConsumer is one interval of the simulated processor with `replicas` replicas.
// Each replica owns at most one lease: it keeps a lease while it has work
// and otherwise moves to the unowned lease with the most pending changes.
// A stale parent lease is replaced by its children, which carry its
// checkpoint, as soon as any replica runs; at 0 replicas it stays.
func (w *World) runConsumer(ctx context.Context, replicas int) ([]string, error) {
	var events []string
	if replicas > 0 {
		var err error
		if events, err = w.replaceStaleLeases(); err != nil {
			return nil, err
		}
	}
	owned, err := w.assignLeases(replicas)
	if err != nil {
		return nil, err
	}
	for r := 1; r <= replicas; r++ {
		if l := owned[r]; l != nil {
			if err := w.drain(ctx, l); err != nil {
				return nil, err
			}
		}
	}
	return events, nil
}

// replaceStaleLeases replaces each stale parent lease: by its children
// after a split, by an EPK lease over its part of the merged range after a
// merge.
func (w *World) replaceStaleLeases() ([]string, error) {
	var events []string
	var merged, epkTokens []string
	into := ""
	for _, l := range w.sortedLeases() {
		switch {
		case !l.stale:
			continue
		case l.mergedInto != "":
			token, err := w.followMerge(l)
			if err != nil {
				return nil, err
			}
			merged, epkTokens, into = append(merged, l.token), append(epkTokens, shortEPK(token)), l.mergedInto
			continue
		}
		children, err := w.leaseWriter.ReplaceAfterSplit(l.token)
		if err != nil {
			return nil, err
		}
		delete(w.leases, l.token)
		for _, c := range children {
			w.leases[c] = &simLease{token: c, rangeID: c, checkpoint: l.checkpoint, caughtUp: -1}
		}
		events = append(events, fmt.Sprintf("processor: lease %s replaced by %s", l.token, strings.Join(children, ", ")))
	}
	if len(merged) > 0 {
		events = append(events, fmt.Sprintf("processor: lease(s) %s → EPK lease(s) %s of merged range %s, each from its old continuation (as .NET does)",
			strings.Join(merged, ", "), strings.Join(epkTokens, ", "), into))
	}
	return events, nil
}

// assignLeases releases the leases of replicas that are gone and gives
// each replica without work the unowned lease with the most pending
// changes; it returns each replica's lease.
func (w *World) assignLeases(replicas int) (map[int]*simLease, error) {
	owned := map[int]*simLease{}
	for _, l := range w.sortedLeases() {
		if l.owner > replicas {
			if err := w.setOwner(l, 0); err != nil {
				return nil, err
			}
		} else if l.owner > 0 {
			owned[l.owner] = l
		}
	}
	for r := 1; r <= replicas; r++ {
		cur := owned[r]
		if cur != nil && w.pending(cur) > 0 {
			continue
		}
		next := w.mostPendingUnowned(cur == nil)
		if next == nil {
			continue
		}
		if cur != nil {
			if err := w.setOwner(cur, 0); err != nil {
				return nil, err
			}
		}
		if err := w.setOwner(next, r); err != nil {
			return nil, err
		}
		owned[r] = next
	}
	return owned, nil
}

// drain is one interval of a replica on its lease: it reads up to its
// budget of changes and checkpoints after them.
func (w *World) drain(ctx context.Context, l *simLease) error {
	budget := w.Cfg.DrainRate*w.Cfg.Interval.Seconds() + l.carry
	n := int(budget)
	l.carry = budget - float64(n)
	if n <= 0 || w.pending(l) == 0 {
		return nil
	}
	lsn := w.data.LSN(l.rangeID)
	changes, err := w.feed.read(ctx, l, n)
	if err != nil {
		return err
	}
	if changes.Count < n {
		l.caughtUp, l.carry = lsn, 0
	}
	if changes.Count == 0 {
		return nil
	}
	l.checkpoint = max(l.checkpoint, changes.Last)
	w.Processed += int64(changes.Count)
	return w.writer(l).Checkpoint(l.token, l.checkpoint)
}

// pending is what the processor guesses of a lease's backlog without
// reading: the LSNs after its checkpoint, or 0 if its last read found the
// range drained and nothing was written since. After a split, a child's
// guess includes the other child's share of the parent's backlog until a
// read skips over it. A stale parent has none it can read.
func (w *World) pending(l *simLease) int64 {
	if l.stale {
		return 0
	}
	lsn := w.data.LSN(l.rangeID)
	if lsn == l.caughtUp {
		return 0
	}
	return max(lsn-l.checkpoint, 0)
}

// mostPendingUnowned returns the unowned lease with the largest backlog, or
// with anyIdle the first unowned lease even if it has none.
func (w *World) mostPendingUnowned(anyIdle bool) *simLease {
	var best *simLease
	var bestPending int64
	for _, l := range w.sortedLeases() {
		if l.owner != 0 || l.stale {
			continue
		}
		p := w.pending(l)
		if (best == nil && (p > 0 || anyIdle)) || p > bestPending {
			best, bestPending = l, p
		}
	}
	return best
}

func (w *World) setOwner(l *simLease, replica int) error {
	l.owner = replica
	name := ""
	if replica > 0 {
		name = w.Cfg.replicaName(replica)
	}
	return w.writer(l).SetOwner(l.token, name)
}

// sortedLeases orders leases by numeric range id, for deterministic runs.
func (w *World) sortedLeases() []*simLease {
	out := make([]*simLease, 0, len(w.leases))
	for _, l := range w.leases {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *simLease) int {
		if len(a.token) != len(b.token) {
			return len(a.token) - len(b.token)
		}
		return strings.Compare(a.token, b.token)
	})
	return out
}

// followMerge does what the .NET SDK's processor does when a range-id
// (version 0) lease's range was merged (PartitionSynchronizerCore): it
// replaces the lease by an EPK-range (version 1) lease over the old range's
// EPK range, with the old continuation, read through the merged range with
// EPK bounds from then on. It returns the new lease's token.
func (w *World) followMerge(l *simLease) (string, error) {
	doc, ok := w.leaseWriter.Lease(l.token)
	if !ok {
		return "", fmt.Errorf("lease %s: %w", l.token, leasetest.ErrLeaseNotFound)
	}
	fr, _ := doc["FeedRange"].(map[string]any)
	r, _ := fr["Range"].(map[string]any)
	lo, _ := r["min"].(string)
	hi, okHi := r["max"].(string)
	if !okHi {
		return "", fmt.Errorf("lease %s has no FeedRange to follow the merge with", l.token)
	}
	token := lo + "-" + hi
	epk := maps.Clone(doc)
	epk["id"], epk["LeaseToken"], epk["version"], epk["Owner"] = w.epkWriter.LeaseID(token), token, 1, nil
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		delete(epk, k) // the service's own fields
	}
	if _, err := w.leaseStore.Upsert(epk); err != nil {
		return "", fmt.Errorf("write lease %s: %w", token, err)
	}
	w.leaseStore.Delete(w.leaseWriter.LeaseID(l.token))
	delete(w.leases, l.token)
	w.leases[token] = &simLease{token: token, rangeID: l.mergedInto, epk: true, minEPK: lo, maxEPK: hi, checkpoint: l.checkpoint, caughtUp: -1}
	return token, nil
}

// shortEPK shortens the bounds of an EPK lease token for the events line.
func shortEPK(token string) string {
	lo, hi, _ := strings.Cut(token, "-")
	cut := func(s string) string {
		if len(s) > 6 {
			return s[:6] + "…"
		}
		if s == "" {
			return `""`
		}
		return s
	}
	return "[" + cut(lo) + ", " + cut(hi) + ")"
}

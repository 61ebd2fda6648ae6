package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The simulated consumer: a change feed processor's replicas draining the
// monitored container and checkpointing their leases.

// simLease is the processor's view of one of its leases.
type simLease struct {
	token      string // a partition key range id (the demo uses .NET v0 leases)
	checkpoint int64  // LSN of the last processed change
	owner      int    // replica number, 0 = unowned
	carry      float64
	stale      bool  // its range split; the next running replica replaces it
	caughtUp   int64 // range LSN at which a read last found nothing more; -1 = never
}

// runConsumer is one interval of the simulated processor with `replicas` replicas.
// Each replica owns at most one lease: it keeps a lease while it has work
// and otherwise moves to the unowned lease with the most pending changes.
// A stale parent lease is replaced by its children, which carry its
// checkpoint, as soon as any replica runs; at 0 replicas it stays.
func (w *world) runConsumer(ctx context.Context, replicas int) ([]string, error) {
	var events []string
	if replicas > 0 {
		for _, l := range w.sortedLeases() {
			if !l.stale {
				continue
			}
			children, err := w.leaseWriter.ReplaceAfterSplit(l.token)
			if err != nil {
				return nil, err
			}
			delete(w.leases, l.token)
			for _, c := range children {
				w.leases[c] = &simLease{token: c, checkpoint: l.checkpoint, caughtUp: -1}
			}
			events = append(events, fmt.Sprintf("processor: lease %s replaced by %s", l.token, strings.Join(children, ", ")))
		}
	}

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

	for r := 1; r <= replicas; r++ {
		l := owned[r]
		if l == nil {
			continue
		}
		budget := w.cfg.DrainRate*w.cfg.Interval.Seconds() + l.carry
		n := int(budget)
		l.carry = budget - float64(n)
		if n <= 0 || w.pending(l) == 0 {
			continue
		}
		lsn := w.data.LSN(l.token)
		changes, err := w.feed.read(ctx, l.token, l.checkpoint, n)
		if err != nil {
			return nil, err
		}
		if changes.Count < n {
			l.caughtUp, l.carry = lsn, 0
		}
		if changes.Count == 0 {
			continue
		}
		l.checkpoint = max(l.checkpoint, changes.Last)
		w.Processed += int64(changes.Count)
		if err := w.leaseWriter.Checkpoint(l.token, l.checkpoint); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// pending is what the processor guesses of a lease's backlog without
// reading: the LSNs after its checkpoint, or 0 if its last read found the
// range drained and nothing was written since. After a split, a child's
// guess includes the other child's share of the parent's backlog until a
// read skips over it. A stale parent has none it can read.
func (w *world) pending(l *simLease) int64 {
	if l.stale {
		return 0
	}
	lsn := w.data.LSN(l.token)
	if lsn == l.caughtUp {
		return 0
	}
	return max(lsn-l.checkpoint, 0)
}

// mostPendingUnowned returns the unowned lease with the largest backlog, or
// with anyIdle the first unowned lease even if it has none.
func (w *world) mostPendingUnowned(anyIdle bool) *simLease {
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

func (w *world) setOwner(l *simLease, replica int) error {
	l.owner = replica
	name := ""
	if replica > 0 {
		name = fmt.Sprintf("%s-%d", demoProcessor, replica)
	}
	return w.leaseWriter.SetOwner(l.token, name)
}

// sortedLeases orders leases by numeric range id, for deterministic runs.
func (w *world) sortedLeases() []*simLease {
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

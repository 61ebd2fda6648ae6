// Package lag estimates a change feed processor's pending work from its
// leases and turns it into the capped metric the HPA scales on.
package lag

import "math"

// Summary is what the scaler reports for one poll.
type Summary struct {
	TotalLag         int64 // sum of positive per-lease lags, after split recovery
	ActivePartitions int64 // leases with lag > 0 (at least 1 when a stale parent wakes the processor)
	Metric           int64 // min(TotalLag, ActivePartitions * threshold)
	Active           bool  // TotalLag > activation threshold
}

// Summarize applies the trigger's arithmetic to per-lease lags:
//
//	metric = min(totalLag, activePartitions * threshold)
//
// so that, with AverageValue, the HPA never asks for more replicas than there
// are partitions with pending work. Stale parent leases (a split the
// processor has not handled yet) carry no readable lag; when one remains the
// processor must run to replace it, so the total is raised to
// activation + 1 if it is not above activation already, and, only when no
// other partition lags, exactly one partition is counted active.
// Sums and products saturate instead of wrapping.
func Summarize(r Result, threshold, activation int64) Summary {
	var s Summary
	for _, l := range r.Leases {
		if l.Lag > 0 {
			s.TotalLag = addSaturating(s.TotalLag, l.Lag)
			s.ActivePartitions++
		}
	}
	if r.StaleParents > 0 {
		if s.TotalLag <= activation {
			s.TotalLag = activation + 1
		}
		if s.ActivePartitions == 0 {
			s.ActivePartitions = 1
		}
	}
	s.Metric = min(s.TotalLag, mulSaturating(s.ActivePartitions, threshold))
	s.Active = s.TotalLag > activation
	return s
}

func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSaturating(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

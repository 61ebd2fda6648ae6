package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// What tune makes of its samples: per lease, how far its checkpoint (the
// LSN of the last change processed) and its partition's latest LSN
// (checkpoint + lag: the lag is counted in the same LSN units) moved
// between its first and last sample; per owner (replica) the sums over the
// leases it holds; the per-replica drain rate over the replicas that were
// busy, and the threshold it gives for the budget. Data that cannot
// support a recommendation gives reasons instead.

// tuneSample is one poll of the leases: the scaler's estimate and when the
// poll began.
type tuneSample struct {
	at       time.Time
	estimate scalers.AzureCosmosDBEstimate
}

// tuneMinSamples is the fewest samples a recommendation is made from: two
// give a rate, a third the first check that the lease set and the owners
// held still.
const tuneMinSamples = 3

// Owner states, as perOwner[].state says them.
const (
	ownerBusy     = "busy"     // drained, with lag at every sample: what a replica can do
	ownerCaughtUp = "caughtUp" // drained, and had no lag at some sample: what it was given
	ownerStuck    = "stuck"    // drained nothing while lag was pending
	ownerIdle     = "idle"     // drained nothing and had no lag
	ownerMoved    = "moved"    // held a lease that changed owner
	ownerNone     = "unowned"  // the leases without an owner
)

// tuneLease is one lease's measurement.
type tuneLease struct {
	Token string `json:"token"`
	Owner string `json:"owner"` // at its last sample; "" none
	// Owners lists every owner in the order seen, when the owner changed.
	Owners []string `json:"owners,omitempty"`
	// FirstCheckpoint and LastCheckpoint are the continuation LSNs at the
	// lease's first and last sample (absent when not a number).
	FirstCheckpoint *int64  `json:"firstCheckpoint,omitempty"`
	LastCheckpoint  *int64  `json:"lastCheckpoint,omitempty"`
	Drained         int64   `json:"drained"`   // LSNs the checkpoint moved
	DrainRate       float64 `json:"drainRate"` // Drained per second
	WriteRate       float64 `json:"writeRate"` // growth of checkpoint + lag per second
	Lag             int64   `json:"lag"`       // at the last sample
	Seconds         float64 `json:"seconds"`   // from its first to its last sample
	StaleParent     bool    `json:"staleParent,omitempty"`

	firstLatest, lastLatest int64
	samples                 []int // the samples that hold it
	lagAlways, lagEver      bool  // lag > 0 at every / some sample
	measurable              bool  // its continuation is a number at both ends
}

// tuneOwner is one owner's (replica's) measurement: its leases' sums.
type tuneOwner struct {
	Owner              string   `json:"owner"` // "" for the leases without an owner
	Leases             []string `json:"leases"`
	Drained            int64    `json:"drained"`
	DrainRate          float64  `json:"drainRate"`
	WriteRate          float64  `json:"writeRate"`
	Lag                int64    `json:"lag"`
	TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"` // null: never at these rates
	State              string   `json:"state"`
	Counted            bool     `json:"counted"` // in the per-replica rate
	Note               string   `json:"note"`
}

// tuneTotal is the measurement over every lease.
type tuneTotal struct {
	Leases             int      `json:"leases"`
	Owners             int      `json:"owners"` // replicas holding a lease at the last sample
	Drained            int64    `json:"drained"`
	DrainRate          float64  `json:"drainRate"`
	WriteRate          float64  `json:"writeRate"`
	Lag                int64    `json:"lag"`
	ActivePartitions   int64    `json:"activePartitions"`
	TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"`
}

// tuneRecommendation is the threshold for the budget and the HPA's
// decisions with it and with the current threshold.
type tuneRecommendation struct {
	Threshold      int64    `json:"changeFeedLagThreshold"`
	PerReplicaRate float64  `json:"perReplicaRate"`
	Replicas       []string `json:"countedReplicas"`
	// LowerBound: no replica was busy at every sample, so the rate is
	// what the replicas were given, not what they can do.
	LowerBound     bool    `json:"lowerBound"`
	BudgetSeconds  float64 `json:"budgetSeconds"`
	StartupSeconds float64 `json:"startupSeconds"`
	Arithmetic     string  `json:"arithmetic"`
	// CurrentReplicas is the count the HPA's decisions start from:
	// --current-replicas, or the lease owners at the last sample.
	CurrentReplicas     int     `json:"currentReplicas"`
	CurrentReplicasFrom string  `json:"currentReplicasFrom"` // "owners" or "flag"
	HPA                 tuneHPA `json:"hpa"`
	// KeepUpReplicas is ceil(total write rate / per-replica rate): the
	// fewest replicas that drain as fast as the writes add.
	KeepUpReplicas int     `json:"keepUpReplicas"`
	CurrentHPA     tuneHPA `json:"hpaWithCurrentThreshold"`
}

// tuneHPA is what the scaler and the HPA make of the last sample's lag
// with one threshold.
type tuneHPA struct {
	Threshold  int64       `json:"changeFeedLagThreshold"`
	Metric     int64       `json:"metric"`
	Arithmetic string      `json:"arithmetic"`
	Active     bool        `json:"active"`
	Replicas   replicaPlan `json:"replicas"`
}

// tuneInput is what the analysis needs besides the samples.
type tuneInput struct {
	budget, startup time.Duration
	// current is the replicas running now, for the HPA; -1: the owners at
	// the last sample.
	current int
	hpa     autoscaler // the ScaledObject's bounds and metric type; Target is set per threshold
}

// tuneAnalysis is the outcome: the measurement, and a recommendation or
// the reasons there is none.
type tuneAnalysis struct {
	Leases         []tuneLease
	PerOwner       []tuneOwner
	Total          tuneTotal
	Recommendation *tuneRecommendation
	Reasons        []string
	Notes          []string
}

// analyzeTune measures the samples and recommends a threshold if they
// support one.
func analyzeTune(samples []tuneSample, in tuneInput) tuneAnalysis {
	var a tuneAnalysis
	if len(samples) < tuneMinSamples {
		a.Reasons = append(a.Reasons, fmt.Sprintf("too few samples: %d, at least %d are needed (a longer --window or a shorter --interval)", len(samples), tuneMinSamples))
	}
	if len(samples) == 0 {
		return a
	}
	leases, changes := trackLeases(samples)
	a.Reasons = append(a.Reasons, changes...)
	a.Leases = leases
	moved := map[string]bool{} // owners that held a lease that changed owner
	for _, l := range leases {
		switch {
		case !l.measurable:
			a.Notes = append(a.Notes, fmt.Sprintf("lease %s: its continuation is not an LSN; not measured", l.Token))
		case l.Drained < 0:
			a.Reasons = append(a.Reasons, fmt.Sprintf("lease %s's checkpoint moved back (%d → %d): the processor reset it", l.Token, *l.FirstCheckpoint, *l.LastCheckpoint))
		}
		if len(l.Owners) > 1 {
			for _, o := range l.Owners {
				moved[o] = true
			}
			a.Notes = append(a.Notes, fmt.Sprintf("lease %s changed owner (%s): its drain is in the total but cannot be attributed, so %s %s left out of the per-replica rate",
				l.Token, ownersText(l.Owners), ownersList(l.Owners), pluralVerb(len(nonEmpty(l.Owners)))))
		}
	}
	last := samples[len(samples)-1].estimate
	a.PerOwner = ownerRows(leases, samples, moved)
	a.Total = totalRow(leases, last, a.PerOwner)
	if never, _ := uncountedLeases(last.Skipped); len(never) > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("lease(s) %s never checkpointed: not counted by the scaler, not measured", strings.Join(never, ", ")))
	}
	drained := slices.ContainsFunc(leases, func(l tuneLease) bool { return l.Drained > 0 })
	if len(samples) >= 2 && !drained {
		a.Reasons = append(a.Reasons, noCheckpointReason(leases, samples))
	}
	counted, lowerBound := countedOwners(a.PerOwner)
	if drained && len(counted) == 0 {
		a.Reasons = append(a.Reasons, "no replica's drain can be attributed: the checkpoints that moved were on leases that changed owner or have none")
	}
	if len(a.Reasons) > 0 {
		return a
	}
	if lowerBound {
		a.Notes = append(a.Notes, "no replica had lag at every sample: the rate is what the replicas were given, not what they can do, so the threshold is a lower bound "+
			"(more replicas than needed); measure under a backlog (at a peak, or after a pause) for a replica's capacity")
	}
	a.Recommendation = recommend(counted, lowerBound, last, in, a.Total.Owners, a.Total.WriteRate)
	for _, note := range []string{a.Recommendation.keepUpNote(a.Total.WriteRate), budgetNote(a.Total, a.Recommendation, in.budget)} {
		if note != "" {
			a.Notes = append(a.Notes, note)
		}
	}
	return a
}

// trackLeases follows each lease through the samples, and reports what
// changed the lease set: leases that appear or disappear, stale parents,
// estimates that met a split.
func trackLeases(samples []tuneSample) ([]tuneLease, []string) {
	byToken := map[string]*tuneLease{}
	var order []string
	var changes []string
	var appeared, gone, stale []string
	splitAt := ""
	prev := map[string]bool{}
	for i, s := range samples {
		cur := map[string]bool{}
		for _, ll := range s.estimate.Leases {
			cur[ll.Token] = true
			l := byToken[ll.Token]
			if l == nil {
				l = &tuneLease{Token: ll.Token, lagAlways: true}
				byToken[ll.Token] = l
				order = append(order, ll.Token)
				if i > 0 {
					appeared = append(appeared, fmt.Sprintf("%s (at %s)", ll.Token, offset(samples, i)))
				}
			}
			l.samples = append(l.samples, i)
			if len(l.Owners) == 0 || l.Owners[len(l.Owners)-1] != ll.Owner {
				l.Owners = append(l.Owners, ll.Owner)
			}
			l.Owner, l.Lag = ll.Owner, ll.Lag
			l.lagAlways = l.lagAlways && ll.Lag > 0
			l.lagEver = l.lagEver || ll.Lag > 0
			if ll.StaleParent && !l.StaleParent {
				l.StaleParent = true
				stale = append(stale, fmt.Sprintf("%s (from %s)", ll.Token, offset(samples, i)))
			}
			lsn, ok := continuationLSN(ll.Continuation)
			if len(l.samples) == 1 {
				l.measurable = ok
				if ok {
					l.FirstCheckpoint, l.firstLatest = &lsn, lsn+ll.Lag
				}
			}
			l.measurable = l.measurable && ok
			if ok {
				last := lsn
				l.LastCheckpoint, l.lastLatest = &last, lsn+ll.Lag
			}
		}
		for token := range prev {
			if !cur[token] {
				gone = append(gone, fmt.Sprintf("%s (at %s)", token, offset(samples, i)))
			}
		}
		if s.estimate.SplitRetried && splitAt == "" {
			splitAt = offset(samples, i)
		}
		prev = cur
	}
	if len(stale) > 0 {
		changes = append(changes, fmt.Sprintf("split or merge in the window: stale parent lease(s) %s: the partition split or merged and the processor had not yet replaced the lease", strings.Join(stale, ", ")))
	}
	if len(appeared)+len(gone) > 0 {
		var parts []string
		if len(gone) > 0 {
			parts = append(parts, "lease(s) "+strings.Join(gone, ", ")+" gone")
		}
		if len(appeared) > 0 {
			parts = append(parts, "lease(s) "+strings.Join(appeared, ", ")+" new")
		}
		changes = append(changes, fmt.Sprintf("split or merge in the window: the lease set changed: %s (the processor replaced leases after a split or merge, or recreated them)", strings.Join(parts, "; ")))
	}
	if splitAt != "" {
		changes = append(changes, fmt.Sprintf("split or merge in the window: the estimate at %s met a split and was redone", splitAt))
	}
	leases := make([]tuneLease, 0, len(order))
	for _, token := range order {
		l := byToken[token]
		if len(l.Owners) == 1 {
			l.Owners = nil
		}
		first, last := samples[l.samples[0]], samples[l.samples[len(l.samples)-1]]
		l.Seconds = last.at.Sub(first.at).Seconds()
		if l.measurable {
			l.Drained = *l.LastCheckpoint - *l.FirstCheckpoint
			if l.Seconds > 0 {
				l.DrainRate = round2(float64(l.Drained) / l.Seconds)
				l.WriteRate = round2(float64(l.lastLatest-l.firstLatest) / l.Seconds)
			}
		}
		leases = append(leases, *l)
	}
	slices.SortStableFunc(leases, func(a, b tuneLease) int { return compareTokens(a.Token, b.Token) })
	return leases, changes
}

// continuationLSN is the LSN of a continuation, a quoted LSN like "123".
func continuationLSN(c string) (int64, bool) {
	n, err := strconv.ParseInt(strings.Trim(c, `"`), 10, 64)
	return n, err == nil
}

// ownerRows sums the leases by their owner at the last sample and says
// what each owner's rate is worth.
func ownerRows(leases []tuneLease, samples []tuneSample, moved map[string]bool) []tuneOwner {
	byOwner := map[string]*tuneOwner{}
	lagAt := map[string][]int64{} // an owner's lag at each sample
	var names []string
	for _, l := range leases {
		o := byOwner[l.Owner]
		if o == nil {
			o = &tuneOwner{Owner: l.Owner, Leases: []string{}}
			byOwner[l.Owner] = o
			lagAt[l.Owner] = make([]int64, len(samples))
			names = append(names, l.Owner)
		}
		o.Leases = append(o.Leases, l.Token)
		o.Drained += l.Drained
		o.DrainRate = round2(o.DrainRate + l.DrainRate)
		o.WriteRate = round2(o.WriteRate + l.WriteRate)
		o.Lag += l.Lag
	}
	ownerOf := map[string]string{}
	for _, l := range leases {
		ownerOf[l.Token] = l.Owner
	}
	for i, s := range samples {
		for _, ll := range s.estimate.Leases {
			lagAt[ownerOf[ll.Token]][i] += max(ll.Lag, 0)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if (a == "") != (b == "") { // the unowned last
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	})
	rows := make([]tuneOwner, 0, len(names))
	for _, name := range names {
		o := byOwner[name]
		o.TimeToDrainSeconds = timeToDrain(o.Lag, o.DrainRate, o.WriteRate)
		lagAlways, lagEver := true, false
		for _, lag := range lagAt[name] {
			lagAlways, lagEver = lagAlways && lag > 0, lagEver || lag > 0
		}
		o.State, o.Note = ownerState(o, moved[name], lagAlways, lagEver)
		rows = append(rows, *o)
	}
	return rows
}

// ownerState classifies an owner by what its drain says of a replica.
func ownerState(o *tuneOwner, moved, lagAlways, lagEver bool) (state, note string) {
	switch {
	case o.Owner == "":
		return ownerNone, "no owner: nobody drains these leases; not a replica"
	case moved:
		return ownerMoved, "held a lease that changed owner: its drain cannot be told apart; not counted"
	case o.Drained > 0 && lagAlways:
		return ownerBusy, "lag at every sample: its rate is what a replica can do"
	case o.Drained > 0:
		return ownerCaughtUp, "caught up at some sample: its rate is what it was given, not what it can do"
	case lagEver:
		return ownerStuck, "drained nothing while lag was pending: idle or stuck, not slow; not counted"
	}
	return ownerIdle, "no lag to drain: idle; not counted"
}

// countedOwners chooses the owners the per-replica rate is the mean of:
// the busy ones, or if there are none, those that caught up (a lower bound).
func countedOwners(rows []tuneOwner) (counted []*tuneOwner, lowerBound bool) {
	for _, state := range []string{ownerBusy, ownerCaughtUp} {
		for i := range rows {
			if rows[i].State == state {
				counted = append(counted, &rows[i])
			}
		}
		if len(counted) > 0 {
			return counted, state == ownerCaughtUp
		}
	}
	return nil, false
}

// totalRow sums every lease, with the last sample's lag.
func totalRow(leases []tuneLease, last scalers.AzureCosmosDBEstimate, owners []tuneOwner) tuneTotal {
	t := tuneTotal{Leases: len(leases), Lag: last.TotalLag, ActivePartitions: last.ActivePartitions}
	for _, l := range leases {
		t.Drained += l.Drained
		t.DrainRate = round2(t.DrainRate + l.DrainRate)
		t.WriteRate = round2(t.WriteRate + l.WriteRate)
	}
	for _, o := range owners {
		if o.Owner != "" {
			t.Owners++
		}
	}
	t.TimeToDrainSeconds = timeToDrain(t.Lag, t.DrainRate, t.WriteRate)
	return t
}

// timeToDrain is how long lag takes to drain at these rates: 0 with no
// lag, nil (never) when the writes keep up with the drain.
func timeToDrain(lag int64, drainRate, writeRate float64) *float64 {
	var s float64
	switch {
	case lag <= 0:
	case drainRate > writeRate:
		s = math.Round(float64(lag) / (drainRate - writeRate))
	default:
		return nil
	}
	return &s
}

// budgetNote says when the last sample's lag takes longer than the budget
// to drain at the current replica count, and when more replicas could not
// help because the metric is capped by the partitions with lag.
func budgetNote(t tuneTotal, r *tuneRecommendation, budget time.Duration) string {
	if t.Lag <= 0 || (t.TimeToDrainSeconds != nil && *t.TimeToDrainSeconds <= budget.Seconds()) {
		return ""
	}
	drains := "does not drain (the writes keep up with the drain)"
	if t.TimeToDrainSeconds != nil {
		drains = "takes " + formatAge(int64(*t.TimeToDrainSeconds)) + " to drain"
	}
	note := fmt.Sprintf("at the current replica count the last sample's lag (%d) %s, beyond the %s budget", t.Lag, drains, budget)
	if r.HPA.Metric < t.Lag {
		note += fmt.Sprintf("; the scaler asks for no more replicas than partitions with lag (%d), so beyond that only faster replicas or more physical partitions drain it sooner",
			t.ActivePartitions)
	}
	return note
}

// noCheckpointReason says why no checkpoint moved.
func noCheckpointReason(leases []tuneLease, samples []tuneSample) string {
	window := samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Millisecond)
	for _, l := range leases {
		if l.lagEver {
			return fmt.Sprintf("no checkpoint moved in the %s measured while changes were pending (%d at the last sample): the processor is stopped or stuck, "+
				"or checkpoints less often than that (a longer --window)", window, samples[len(samples)-1].estimate.TotalLag)
		}
	}
	return fmt.Sprintf("no checkpoint moved in the %s measured and no change was pending: the processor was idle; measure under load", window)
}

// recommend is the threshold for the budget from the counted owners' mean
// rate, and the HPA's decisions with it and with the current threshold.
func recommend(counted []*tuneOwner, lowerBound bool, last scalers.AzureCosmosDBEstimate, in tuneInput, owners int, writeRate float64) *tuneRecommendation {
	var sum float64
	names := make([]string, 0, len(counted))
	for _, o := range counted {
		o.Counted = true
		sum += o.DrainRate
		names = append(names, o.Owner)
	}
	rate := round2(sum / float64(len(counted)))
	useful := in.budget - in.startup
	product := int64(math.Floor(rate*useful.Seconds() + 1e-9))
	threshold := max(product, 1)
	r := &tuneRecommendation{
		Threshold: threshold, PerReplicaRate: rate, Replicas: names, LowerBound: lowerBound,
		BudgetSeconds: in.budget.Seconds(), StartupSeconds: in.startup.Seconds(),
		Arithmetic: fmt.Sprintf("floor(%.2f LSN/s per replica × (%s budget − %s startup)) = floor(%.2f × %s) = %d",
			rate, in.budget, in.startup, rate, strconv.FormatFloat(useful.Seconds(), 'f', -1, 64), product),
	}
	if product < 1 {
		r.Arithmetic += ", raised to 1, the least threshold"
	}
	r.CurrentReplicas, r.CurrentReplicasFrom = in.current, "flag"
	if in.current < 0 {
		r.CurrentReplicas, r.CurrentReplicasFrom = owners, "owners"
	}
	r.HPA = hpaWith(in.hpa, last, threshold, r.CurrentReplicas)
	r.CurrentHPA = hpaWith(in.hpa, last, last.Threshold, r.CurrentReplicas)
	if rate > 0 {
		r.KeepUpReplicas = int(math.Ceil(writeRate/rate - 1e-9))
	}
	return r
}

// keepUpNote says when the replicas the HPA would choose with the
// recommendation drain less than the writes add: the lag grows until the
// HPA scales up, and the budget is not met meanwhile.
func (r *tuneRecommendation) keepUpNote(writeRate float64) string {
	desired := int(r.HPA.Replicas.Desired)
	if after := r.HPA.Replicas.AfterWindow; after != nil {
		desired = int(*after)
	}
	if desired >= r.KeepUpReplicas {
		return ""
	}
	return fmt.Sprintf("the writes (%.2f/s) need %d replica(s) at %.2f/s each to keep up; with the %d the HPA would choose for the last sample's lag, the lag grows "+
		"until it scales up (a minReplicaCount of %d keeps up from the start)", writeRate, r.KeepUpReplicas, r.PerReplicaRate, desired, r.KeepUpReplicas)
}

// hpaWith is the scaler's metric for the last sample with threshold, and
// the replicas KEDA and the HPA would choose from current.
func hpaWith(model autoscaler, last scalers.AzureCosmosDBEstimate, threshold int64, current int) tuneHPA {
	s := last.Summarize(threshold, last.Activation)
	model.Target = threshold
	return tuneHPA{
		Threshold: threshold, Metric: s.Metric, Active: s.Active,
		Arithmetic: fmt.Sprintf("metric %d = min(total lag %d, %d active partition(s) × %d)", s.Metric, s.TotalLag, s.ActivePartitions, threshold),
		Replicas:   model.settle(int32(min(current, 1<<30)), s.Metric, s.Active),
	}
}

// offset is sample i's time since the first sample.
func offset(samples []tuneSample, i int) string {
	return "+" + samples[i].at.Sub(samples[0].at).Round(time.Millisecond).String()
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// ownersText is a lease's owners in order, "none" for no owner.
func ownersText(owners []string) string {
	out := make([]string, len(owners))
	for i, o := range owners {
		out[i] = cmpOr(o, "none")
	}
	return strings.Join(out, " → ")
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ownersList names the owners of a moved lease, for "… are left out".
func ownersList(owners []string) string {
	names := nonEmpty(owners)
	if len(names) == 0 {
		return "no replica"
	}
	return strings.Join(names, " and ")
}

func pluralVerb(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

package tune

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// What tune makes of its samples: per lease, how far its checkpoint (the
// LSN of the last change processed) and its partition's latest LSN
// (checkpoint + lag: the lag is counted in the same LSN units) moved
// between its first and last sample, and how long its lag takes to drain;
// per owner (replica) the sums over the leases it holds and its slowest
// lease's time to drain; the per-replica drain rate over the replicas that
// were busy (they had more work than they did), or else a lower bound, and
// the threshold it gives for the budget. Data that cannot support a
// recommendation gives reasons instead, and no time to drain.

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
	ownerBusy       = "busy"       // drained, its lag never below what it drained by the next sample: what a replica can do
	ownerCaughtUp   = "caughtUp"   // drained, and at some sample had less lag than it drained by the next: what it was given
	ownerStuck      = "stuck"      // drained nothing while lag was pending
	ownerIdle       = "idle"       // drained nothing and had no lag
	ownerMoved      = "moved"      // held a lease that changed owner
	ownerUnmeasured = "unmeasured" // holds a lease whose drain or writes are not measured
	ownerNone       = "unowned"    // the leases without an owner
)

// tuneLease is one lease's measurement.
type tuneLease struct {
	Token string `json:"token"`
	Owner string `json:"owner"` // at its last sample; "" none
	// Owners lists every owner in the order seen, when the owner changed.
	Owners []string `json:"owners,omitempty"`
	// FirstCheckpoint and LastCheckpoint are the continuation LSNs at the
	// lease's first and last sample (absent when not a number).
	FirstCheckpoint *int64 `json:"firstCheckpoint,omitempty"`
	LastCheckpoint  *int64 `json:"lastCheckpoint,omitempty"`
	Drained         int64  `json:"drained"` // LSNs the checkpoint moved; 0 when its drain is not measured
	// DrainRate is Drained per second, WriteRate the growth of checkpoint +
	// lag per second; nil when not measured, Unmeasured says why.
	DrainRate   *float64 `json:"drainRate"`
	WriteRate   *float64 `json:"writeRate"`
	Unmeasured  string   `json:"unmeasured,omitempty"`
	Lag         int64    `json:"lag"`     // at the last sample
	Seconds     float64  `json:"seconds"` // from its first to its last sample
	StaleParent bool     `json:"staleParent,omitempty"`
	tuneDrainTime

	points     []leasePoint // one per sample that holds it
	lagEver    bool         // lag > 0 at some sample
	measurable bool         // its continuation is an LSN at every sample
	movedBack  bool         // its checkpoint moved back between two samples
}

// leasePoint is a lease at one sample.
type leasePoint struct {
	Sample int
	lsn    int64 // its checkpoint, when ok
	ok     bool  // its continuation is an LSN
	lag    int64
	stale  bool
}

// tuneDrainTime is how long a lease's, an owner's or every lease's lag at
// the last sample takes to drain at the measured rates. Exactly one holds:
// TimeToDrainSeconds is set, NeverDrains says why it does not drain, or
// TimeToDrainUnknown says why no time is given.
type tuneDrainTime struct {
	TimeToDrainSeconds *float64 `json:"timeToDrainSeconds"`
	NeverDrains        string   `json:"neverDrains,omitempty"`
	TimeToDrainUnknown string   `json:"timeToDrainUnknown,omitempty"`
}

// tuneOwner is one owner's (replica's) measurement: its leases' sums (a
// rate is nil when one of its leases' is); its time to drain is its
// slowest lease's.
type tuneOwner struct {
	Owner     string   `json:"owner"` // "" for the leases without an owner
	Leases    []string `json:"leases"`
	Drained   int64    `json:"drained"`
	DrainRate *float64 `json:"drainRate"`
	WriteRate *float64 `json:"writeRate"`
	Lag       int64    `json:"lag"`
	tuneDrainTime
	State   string `json:"state"`
	Counted bool   `json:"counted"` // in the per-replica rate
	// LowerBound: its rate is what it was given, not what it can do.
	LowerBound bool   `json:"lowerBound"`
	Note       string `json:"note"`
}

// tuneTotal is the measurement over every lease (a rate is nil when one
// of the leases' is); its time to drain is the slowest owner's.
type tuneTotal struct {
	Leases           int      `json:"leases"`
	Owners           int      `json:"owners"` // replicas holding a lease at the last sample
	Drained          int64    `json:"drained"`
	DrainRate        *float64 `json:"drainRate"`
	WriteRate        *float64 `json:"writeRate"`
	Lag              int64    `json:"lag"`
	ActivePartitions int64    `json:"activePartitions"`
	tuneDrainTime
}

// tuneRecommendation is the threshold for the budget and the HPA's
// decisions with it and with the current threshold.
type tuneRecommendation struct {
	Threshold      int64    `json:"changeFeedLagThreshold"`
	PerReplicaRate float64  `json:"perReplicaRate"`
	Replicas       []string `json:"countedReplicas"`
	// LowerBound: no replica was busy, so the rate is what the replicas
	// were given, not what they can do; LowerBoundReason says so.
	LowerBound       bool    `json:"lowerBound"`
	LowerBoundReason string  `json:"lowerBoundReason,omitempty"`
	BudgetSeconds    float64 `json:"budgetSeconds"`
	StartupSeconds   float64 `json:"startupSeconds"`
	Arithmetic       string  `json:"arithmetic"`
	// CurrentReplicas is the count the HPA's decisions start from:
	// --current-replicas, or the lease owners at the last sample.
	CurrentReplicas     int     `json:"currentReplicas"`
	CurrentReplicasFrom string  `json:"currentReplicasFrom"` // "owners" or "flag"
	HPA                 tuneHPA `json:"hpa"`
	// KeepUpReplicas is ceil(total write rate × 1.1 / per-replica rate),
	// at most the partitions with writes: the fewest replicas that drain
	// the writes with 10 % headroom (replicas that drain exactly as fast
	// as the writes add never drain a backlog). From a lower bound it is
	// the most that are needed: KeepUpReplicasUpperBound says so. Nil when
	// no count keeps up: CannotKeepUp says why (a partition takes as many
	// writes as a replica drains, or more).
	KeepUpReplicas           *int   `json:"keepUpReplicas"`
	CannotKeepUp             string `json:"cannotKeepUp,omitempty"`
	KeepUpReplicasUpperBound bool   `json:"keepUpReplicasUpperBound"`
	// Slowest is the slowest counted replica when the counted replicas'
	// rates differ: the threshold comes from their mean, and the slowest
	// takes longer than the others to drain its share.
	Slowest              *tuneSlowest `json:"slowestReplica,omitempty"`
	PartitionsWithWrites int          `json:"partitionsWithWrites"`
	CurrentHPA           tuneHPA      `json:"hpaWithCurrentThreshold"`
}

// keepUpHeadroom is how much faster than the writes add the keep-up count
// of replicas drains: at equal rates a backlog never drains, and the rates
// are measured to 0.01/s.
const keepUpHeadroom = 0.1

// tuneSlowest is the slowest of counted replicas whose rates differ: its
// rate, how long it takes to drain the recommended threshold's worth of
// lag, and the threshold it drains within the budget.
type tuneSlowest struct {
	Owner string  `json:"owner"`
	Rate  float64 `json:"drainRate"`
	// Seconds is the recommended threshold / Rate.
	Seconds float64 `json:"secondsForThreshold"`
	// Threshold is floor(Rate × (budget - startup)), at least 1.
	Threshold int64 `json:"changeFeedLagThreshold"`
	// Beyond: Seconds exceeds the budget less the startup.
	Beyond bool `json:"beyondBudget"`
}

// tuneHPA is what the scaler and the HPA make of the last sample's lag
// with one threshold.
type tuneHPA struct {
	Threshold  int64         `json:"changeFeedLagThreshold"`
	Metric     int64         `json:"metric"`
	Arithmetic string        `json:"arithmetic"`
	Active     bool          `json:"active"`
	Replicas   hpamodel.Plan `json:"replicas"`
}

// tuneInput is what the analysis needs besides the samples.
type tuneInput struct {
	budget, startup time.Duration
	// Current is the replicas running now, for the HPA; -1: the owners at
	// the last sample.
	Current int
	hpa     hpamodel.Autoscaler // the ScaledObject's bounds and metric type; Target is set per threshold
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
		if !l.measurable {
			a.Notes = append(a.Notes, fmt.Sprintf("lease %s: its continuation is not an LSN; not measured", l.Token))
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
	a.PerOwner = ownerRows(a.Leases, samples, moved)
	a.Total = totalRow(a.Leases, last, a.PerOwner)
	if never, _ := poll.UncountedLeases(last.Skipped); len(never) > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("lease(s) %s never checkpointed: not counted by the scaler, not measured", strings.Join(never, ", ")))
	}
	drained := slices.ContainsFunc(leases, func(l tuneLease) bool { return l.Drained > 0 || l.movedBack })
	if len(samples) >= 2 && !drained {
		a.Reasons = append(a.Reasons, noCheckpointReason(leases, samples))
	}
	counted, lowerBound := countedOwners(a.PerOwner)
	if drained && len(counted) == 0 && len(a.Reasons) == 0 {
		a.Reasons = append(a.Reasons, "no replica's drain can be attributed: the checkpoints that moved were on leases that changed owner, have none, or are not measured")
	}
	if len(a.Reasons) > 0 {
		a.withholdDrainTimes()
		return a
	}
	a.Recommendation = recommend(counted, lowerBound, last, in, a.Total.Owners, a.Leases, a.Total.WriteRate)
	for _, note := range []string{a.Recommendation.slowestNote(), a.Recommendation.keepUpNote(a.Total.WriteRate), budgetNote(a.Total, a.Recommendation, in.budget)} {
		if note != "" {
			a.Notes = append(a.Notes, note)
		}
	}
	return a
}

// withholdDrainTimes gives no time to drain in a refused run: the rates
// it would come from are not a measurement of the processor.
func (a *tuneAnalysis) withholdDrainTimes() {
	unknown := tuneDrainTime{TimeToDrainUnknown: "no recommendation: the samples do not support a measurement (see the reasons)"}
	for i := range a.Leases {
		a.Leases[i].tuneDrainTime = unknown
	}
	for i := range a.PerOwner {
		a.PerOwner[i].tuneDrainTime = unknown
	}
	a.Total.tuneDrainTime = unknown
}

// trackLeases follows each lease through the samples, and reports what
// makes the samples unfit for a recommendation: leases that appear or
// disappear, stale parents, estimates that met a split, checkpoints that
// moved back between two samples.
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
				l = &tuneLease{Token: ll.Token, measurable: true}
				byToken[ll.Token] = l
				order = append(order, ll.Token)
				if i > 0 {
					appeared = append(appeared, fmt.Sprintf("%s (at %s)", ll.Token, offset(samples, i)))
				}
			}
			if len(l.Owners) == 0 || l.Owners[len(l.Owners)-1] != ll.Owner {
				l.Owners = append(l.Owners, ll.Owner)
			}
			l.Owner, l.Lag = ll.Owner, ll.Lag
			l.lagEver = l.lagEver || ll.Lag > 0
			if ll.StaleParent && !l.StaleParent {
				l.StaleParent = true
				stale = append(stale, fmt.Sprintf("%s (from %s)", ll.Token, offset(samples, i)))
			}
			lsn, ok := continuationLSN(ll.Continuation)
			l.measurable = l.measurable && ok
			p := leasePoint{Sample: i, lsn: lsn, ok: ok, lag: ll.Lag, stale: ll.StaleParent}
			if n := len(l.points); n > 0 && ok && l.points[n-1].ok && lsn < l.points[n-1].lsn && !l.movedBack {
				l.movedBack = true
				changes = append(changes, fmt.Sprintf("lease %s's checkpoint moved back between %s and %s (%d → %d): the processor reset it; a drain across a reset cannot be measured",
					ll.Token, offset(samples, l.points[n-1].Sample), offset(samples, i), l.points[n-1].lsn, lsn))
			}
			l.points = append(l.points, p)
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
			slices.Sort(gone)
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
		measureLease(l, samples)
		l.tuneDrainTime = leaseDrainTime(l, samples)
		leases = append(leases, *l)
	}
	slices.SortStableFunc(leases, func(a, b tuneLease) int { return poll.CompareTokens(a.Token, b.Token) })
	return leases, changes
}

// measureLease sets a lease's checkpoints, drain and write rates from its
// points, or says why a rate is not measured.
func measureLease(l *tuneLease, samples []tuneSample) {
	first, last := l.points[0], l.points[len(l.points)-1]
	l.Seconds = samples[last.Sample].at.Sub(samples[first.Sample].at).Seconds()
	if first.ok {
		l.FirstCheckpoint = &first.lsn
	}
	if last.ok {
		l.LastCheckpoint = &last.lsn
	}
	switch {
	case !l.measurable:
		l.Unmeasured = "its continuation is not an LSN at every sample"
		return
	case len(l.points) < 2 || l.Seconds <= 0:
		l.Unmeasured = "in one sample only"
		return
	case l.movedBack:
		l.Unmeasured = "its checkpoint moved back: the processor reset it"
		return
	}
	l.Drained = last.lsn - first.lsn
	drain := round2(float64(l.Drained) / l.Seconds)
	l.DrainRate = &drain
	// The latest LSN is read as checkpoint + lag, on the samples that read
	// a lag; it only grows.
	var latest []leasePoint
	for _, p := range l.points {
		if !p.stale {
			latest = append(latest, p)
		}
	}
	if len(latest) < len(l.points) {
		l.Unmeasured = "stale parent: no lag could be read at every sample, so its writes are not measured"
		return
	}
	for i := 1; i < len(latest); i++ {
		if latest[i].lsn+latest[i].lag < latest[i-1].lsn+latest[i-1].lag {
			l.Unmeasured = fmt.Sprintf("its latest LSN (checkpoint + lag) moved back between %s and %s, so its writes are not measured",
				offset(samples, latest[i-1].Sample), offset(samples, latest[i].Sample))
			return
		}
	}
	write := round2(float64(last.lsn+last.lag-first.lsn-first.lag) / l.Seconds)
	l.WriteRate = &write
}

// leaseDrainTime is how long a lease's lag at its last sample takes to
// drain. A lease whose lag is no more than it drained since the sample
// before is keeping up: its lag is what arrived since its last checkpoint,
// cleared at the rate of that last interval. A backlog drains at its drain
// rate less its write rate, or never.
func leaseDrainTime(l *tuneLease, samples []tuneSample) tuneDrainTime {
	owner := cli.Or(l.Owner, "none")
	switch {
	case l.StaleParent:
		return tuneDrainTime{TimeToDrainUnknown: fmt.Sprintf("lease %s is a stale parent: no lag could be read", l.Token)}
	case l.Lag <= 0:
		return drainsIn(0)
	case l.Owner == "":
		return tuneDrainTime{NeverDrains: fmt.Sprintf("nobody drains a lease without an owner (lease %s: %d pending)", l.Token, l.Lag)}
	case l.DrainRate == nil:
		return tuneDrainTime{TimeToDrainUnknown: fmt.Sprintf("lease %s is not measured: %s", l.Token, l.Unmeasured)}
	case l.Drained == 0:
		return tuneDrainTime{NeverDrains: fmt.Sprintf("a replica drains nothing while changes are pending (lease %s, owner %s: %d pending, stuck)", l.Token, owner, l.Lag)}
	}
	if n := len(l.points); n >= 2 {
		p, q := l.points[n-2], l.points[n-1]
		step, seconds := q.lsn-p.lsn, samples[q.Sample].at.Sub(samples[p.Sample].at).Seconds()
		if step > 0 && seconds > 0 && l.Lag <= step {
			return drainsIn(max(1, math.Round(float64(l.Lag)*seconds/float64(step))))
		}
	}
	switch {
	case l.WriteRate == nil:
		return tuneDrainTime{TimeToDrainUnknown: fmt.Sprintf("lease %s's writes are not measured: %s", l.Token, l.Unmeasured)}
	case *l.DrainRate > *l.WriteRate:
		return drainsIn(math.Round(float64(l.Lag) / (*l.DrainRate - *l.WriteRate)))
	}
	return tuneDrainTime{NeverDrains: fmt.Sprintf("writes arrive as fast as or faster than the replicas drain them (lease %s, owner %s: %.2f/s written, %.2f/s drained)",
		l.Token, owner, *l.WriteRate, *l.DrainRate)}
}

func drainsIn(seconds float64) tuneDrainTime { return tuneDrainTime{TimeToDrainSeconds: &seconds} }

// slowest is the longest of several times to drain: never when one never
// drains, unknown when one is unknown, else the longest.
func slowest(times []tuneDrainTime) tuneDrainTime {
	out := drainsIn(0)
	for _, t := range times {
		switch {
		case t.NeverDrains != "":
			return t
		case out.TimeToDrainUnknown != "":
		case t.TimeToDrainUnknown != "":
			out = t
		case *t.TimeToDrainSeconds > *out.TimeToDrainSeconds:
			out = t
		}
	}
	return out
}

// continuationLSN is the LSN of a continuation, a quoted LSN like "123".
func continuationLSN(c string) (int64, bool) {
	n, err := strconv.ParseInt(strings.Trim(c, `"`), 10, 64)
	return n, err == nil
}

// ownerRows sums the measured leases by their owner at the last sample,
// takes each owner's slowest lease's time to drain, and says what each
// owner's rate is worth.
func ownerRows(leases []tuneLease, samples []tuneSample, moved map[string]bool) []tuneOwner {
	byOwner := map[string]*tuneOwner{}
	times := map[string][]tuneDrainTime{}
	lagAt := map[string][]int64{}     // an owner's lag at each sample
	drainedAt := map[string][]int64{} // what it drained from each sample to the next
	var names []string
	for _, l := range leases {
		o := byOwner[l.Owner]
		if o == nil {
			o = &tuneOwner{Owner: l.Owner, Leases: []string{}}
			byOwner[l.Owner] = o
			lagAt[l.Owner] = make([]int64, len(samples))
			drainedAt[l.Owner] = make([]int64, len(samples))
			names = append(names, l.Owner)
		}
		o.Leases = append(o.Leases, l.Token)
		times[l.Owner] = append(times[l.Owner], l.tuneDrainTime)
		o.Lag += max(l.Lag, 0)
		o.Drained += l.Drained
		for i, p := range l.points {
			lagAt[l.Owner][p.Sample] += max(p.lag, 0)
			if i+1 < len(l.points) && l.points[i+1].Sample == p.Sample+1 && p.ok && l.points[i+1].ok {
				drainedAt[l.Owner][p.Sample] += l.points[i+1].lsn - p.lsn
			}
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
		held := slices.DeleteFunc(slices.Clone(leases), func(l tuneLease) bool { return l.Owner != name })
		o.DrainRate, o.WriteRate = sumRates(held)
		o.tuneDrainTime = slowest(times[name])
		o.State, o.Note = ownerState(o, held, moved[name], samples, lagAt[name], drainedAt[name])
		o.LowerBound = o.State == ownerCaughtUp
		rows = append(rows, *o)
	}
	return rows
}

// ownerState classifies an owner by what its drain says of a replica. An
// owner is busy, its rate what a replica can do, when it had more work
// than it did: lag at every sample, and at each sample no less lag than it
// drained by the next one.
func ownerState(o *tuneOwner, held []tuneLease, moved bool, samples []tuneSample, lagAt, drainedAt []int64) (state, note string) {
	lagEver := slices.ContainsFunc(lagAt, func(lag int64) bool { return lag > 0 })
	unmeasured := slices.IndexFunc(held, func(l tuneLease) bool { return l.Unmeasured != "" })
	switch {
	case o.Owner == "":
		return ownerNone, "no owner: nobody drains these leases; not a replica"
	case moved:
		return ownerMoved, "held a lease that changed owner: its drain cannot be told apart; not counted"
	case unmeasured >= 0:
		return ownerUnmeasured, fmt.Sprintf("lease %s is not measured (%s); not counted", held[unmeasured].Token, held[unmeasured].Unmeasured)
	case o.Drained <= 0 && lagEver:
		return ownerStuck, "drained nothing while lag was pending: idle or stuck, not slow; not counted"
	case o.Drained <= 0:
		return ownerIdle, "no lag to drain: idle; not counted"
	}
	for i, lag := range lagAt {
		switch {
		case lag <= 0:
			return ownerCaughtUp, fmt.Sprintf("did all it was given (no lag at %s): its rate is a lower bound, not what it can do", offset(samples, i))
		case i+1 < len(lagAt) && lag < drainedAt[i]:
			return ownerCaughtUp, fmt.Sprintf("did all it was given (at %s its lag, %d, was less than it drained by the next sample, %d): its rate is a lower bound, not what it can do",
				offset(samples, i), lag, drainedAt[i])
		}
	}
	return ownerBusy, "its lag never fell below what it drained by the next sample: its rate is what a replica can do"
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

// totalRow sums the measured leases, with the last sample's lag; its time
// to drain is the slowest owner's.
func totalRow(leases []tuneLease, last scalers.AzureCosmosDBEstimate, owners []tuneOwner) tuneTotal {
	t := tuneTotal{Leases: len(leases), Lag: last.TotalLag, ActivePartitions: last.ActivePartitions}
	for _, l := range leases {
		t.Drained += l.Drained
	}
	t.DrainRate, t.WriteRate = sumRates(leases)
	times := make([]tuneDrainTime, 0, len(owners))
	for _, o := range owners {
		if o.Owner != "" {
			t.Owners++
		}
		times = append(times, o.tuneDrainTime)
	}
	t.tuneDrainTime = slowest(times)
	return t
}

// sumRates sums the leases' drain and write rates; a sum is nil when one
// of the rates is not measured.
func sumRates(leases []tuneLease) (drain, write *float64) {
	var d, w float64
	dOK, wOK := true, true
	for _, l := range leases {
		if l.DrainRate == nil {
			dOK = false
		} else {
			d = round2(d + *l.DrainRate)
		}
		if l.WriteRate == nil {
			wOK = false
		} else {
			w = round2(w + *l.WriteRate)
		}
	}
	if dOK {
		drain = &d
	}
	if wOK {
		write = &w
	}
	return drain, write
}

// budgetNote says when the last sample's lag takes longer than the budget
// to drain at the current replica count, and when more replicas could not
// help because the metric is capped by the partitions with lag.
func budgetNote(t tuneTotal, r *tuneRecommendation, budget time.Duration) string {
	if t.Lag <= 0 || t.TimeToDrainUnknown != "" || (t.TimeToDrainSeconds != nil && *t.TimeToDrainSeconds <= budget.Seconds()) {
		return ""
	}
	drains := "does not drain: " + t.NeverDrains
	if t.TimeToDrainSeconds != nil {
		drains = "takes " + poll.FormatAge(int64(*t.TimeToDrainSeconds)) + " to drain"
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

// tuneLowerBoundReason is why a recommendation from replicas that caught
// up is a lower bound.
const tuneLowerBoundReason = "no replica had more work than it did (at some sample each had less lag than it drained by the next), " +
	"so the rate is what the replicas were given, not what they can do: the threshold for the budget is at least this, " +
	"and a higher one (fewer replicas) may meet it too; measure under a backlog (at a peak, or after a pause) for a replica's capacity"

// recommend is the threshold for the budget from the counted owners' mean
// rate, the HPA's decisions with it and with the current threshold, and
// the replicas that keep up with the writes.
func recommend(counted []*tuneOwner, lowerBound bool, last scalers.AzureCosmosDBEstimate, in tuneInput, owners int, leases []tuneLease, writeRate *float64) *tuneRecommendation {
	var sum float64
	names := make([]string, 0, len(counted))
	for _, o := range counted {
		o.Counted = true
		sum += *o.DrainRate
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
	if lowerBound {
		r.LowerBoundReason = tuneLowerBoundReason
	}
	if product < 1 {
		r.Arithmetic += ", raised to 1, the least threshold"
	}
	r.CurrentReplicas, r.CurrentReplicasFrom = in.Current, "flag"
	if in.Current < 0 {
		r.CurrentReplicas, r.CurrentReplicasFrom = owners, "owners"
	}
	r.HPA = hpaWith(in.hpa, last, threshold, r.CurrentReplicas)
	r.CurrentHPA = hpaWith(in.hpa, last, last.Threshold, r.CurrentReplicas)
	var busiest *tuneLease
	for i, l := range leases {
		if l.WriteRate != nil && *l.WriteRate > 0 {
			r.PartitionsWithWrites++
			if busiest == nil || *l.WriteRate > *busiest.WriteRate {
				busiest = &leases[i]
			}
		}
	}
	switch {
	case rate <= 0 || writeRate == nil: // no count: the writes are not measured
	case busiest != nil && *busiest.WriteRate >= rate && !lowerBound:
		// One replica drains a lease at a time: no count of replicas drains
		// a partition faster than one replica does, and at equal rates its
		// backlog never drains.
		than := "more than"
		if *busiest.WriteRate == rate {
			than = "as many as"
		}
		r.CannotKeepUp = fmt.Sprintf("no replica count keeps up: lease %s's partition takes %.2f writes/s, %s a replica drains (%.2f/s), "+
			"and one replica drains a partition at a time", busiest.Token, *busiest.WriteRate, than, rate)
	default:
		n := min(int(math.Ceil(round2(*writeRate*(1+keepUpHeadroom))/rate-1e-9)), r.PartitionsWithWrites)
		r.KeepUpReplicas, r.KeepUpReplicasUpperBound = &n, lowerBound
	}
	r.Slowest = slowestCounted(counted, threshold, useful)
	return r
}

// slowestCounted is the slowest counted replica when the counted
// replicas' rates differ (nil when they do not), with the time it takes
// to drain threshold and the threshold it drains within useful.
func slowestCounted(counted []*tuneOwner, threshold int64, useful time.Duration) *tuneSlowest {
	slowest := counted[0]
	differ := false
	for _, o := range counted[1:] {
		differ = differ || *o.DrainRate != *slowest.DrainRate
		if *o.DrainRate < *slowest.DrainRate {
			slowest = o
		}
	}
	if !differ || *slowest.DrainRate <= 0 {
		return nil
	}
	rate := *slowest.DrainRate
	seconds := math.Round(float64(threshold)/rate*10) / 10
	return &tuneSlowest{Owner: slowest.Owner, Rate: rate, Seconds: seconds,
		Threshold: max(int64(math.Floor(rate*useful.Seconds()+1e-9)), 1), Beyond: seconds > useful.Seconds()}
}

// slowestNote says when the slowest counted replica takes longer than the
// budget leaves after the startup to drain a threshold's worth of lag: the
// threshold is from the replicas' mean.
func (r *tuneRecommendation) slowestNote() string {
	s := r.Slowest
	if s == nil || !s.Beyond {
		return ""
	}
	useful := r.BudgetSeconds - r.StartupSeconds
	return fmt.Sprintf("the counted replicas drain at different rates: the threshold is from their mean, %.2f/s; the slowest, %s at %.2f/s, takes %s to drain "+
		"a threshold's worth (%d), beyond the %s the budget leaves after the startup; changeFeedLagThreshold \"%d\" (floor(%.2f × %s)) meets the budget on the slowest too",
		r.PerReplicaRate, s.Owner, s.Rate, strconv.FormatFloat(s.Seconds, 'f', -1, 64)+"s", r.Threshold,
		strconv.FormatFloat(useful, 'f', -1, 64)+"s", s.Threshold, s.Rate, strconv.FormatFloat(useful, 'f', -1, 64))
}

// keepUpNote says when no replica count keeps up with the writes, or when
// the replicas the HPA would choose with the recommendation drain less
// than the writes add: the lag grows until the HPA scales up, and the
// budget is not met meanwhile.
func (r *tuneRecommendation) keepUpNote(writeRate *float64) string {
	if r.CannotKeepUp != "" {
		return r.CannotKeepUp + "; the lag grows whatever the replica count, until the replicas get faster or the partition splits"
	}
	if r.KeepUpReplicas == nil || r.LowerBound {
		// From a lower bound, the count is the most that keep up: the lag
		// growing is not shown.
		return ""
	}
	desired := int(r.HPA.Replicas.Desired)
	if after := r.HPA.Replicas.AfterWindow; after != nil {
		desired = int(*after)
	}
	if desired >= *r.KeepUpReplicas {
		return ""
	}
	return fmt.Sprintf("the writes (%.2f/s over %d partition(s)) need %d replica(s) at %.2f/s each to keep up with 10 %% headroom; with the %d the HPA would choose for the last sample's lag, the lag grows "+
		"until it scales up (a minReplicaCount of %d keeps up from the start)", *writeRate, r.PartitionsWithWrites, *r.KeepUpReplicas, r.PerReplicaRate, desired, *r.KeepUpReplicas)
}

// hpaWith is the scaler's metric for the last sample with threshold, and
// the replicas KEDA and the HPA would choose from current.
func hpaWith(model hpamodel.Autoscaler, last scalers.AzureCosmosDBEstimate, threshold int64, current int) tuneHPA {
	s := last.Summarize(threshold, last.Activation)
	model.Target = threshold
	return tuneHPA{
		Threshold: threshold, Metric: s.Metric, Active: s.Active,
		Arithmetic: fmt.Sprintf("metric %d = min(total lag %d, %d active partition(s) × %d)", s.Metric, s.TotalLag, s.ActivePartitions, threshold),
		Replicas:   model.Settle(int32(min(current, 1<<30)), s.Metric, s.Active),
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
		out[i] = cli.Or(o, "none")
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

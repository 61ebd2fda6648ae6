// Package sim is the simulated deployment of cosmoslag demo and tune
// --emulator: writers and a change feed processor with its leases on the
// embedded Cosmos DB server, stepped one polling interval at a time.
package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// The simulated deployment: writers insert into a monitored container on the
// embedded server, and a change feed processor with R replicas drains it and
// checkpoints its leases. Time is simulated in whole polling intervals, so a
// run depends only on its flags and seed, not on how fast the machine is.

// phase is a stretch of the timeline, in fractions of the run's duration.
type phase struct {
	from     float64 // start, as a fraction of the duration
	name     string
	rate     float64 // multiple of --write-rate
	hotShare float64 // share of the writes that go to one partition key
}

// timeline: an idle start (the processor sits at 0 replicas), steady
// traffic, a burst with a hot partition key, the hot key alone carrying on,
// then an idle tail in which the processor catches up and scales to zero.
// The hot key's physical range splits during the burst.
var timeline = []phase{
	{0.00, "idle", 0, 0},
	{0.08, "steady writes", 1, 0},
	{0.25, "burst ×4, hot key", 4, 0.3},
	{0.38, "hot key", 1, 0.5},
	{0.55, "idle", 0, 0},
}

const (
	splitAt = 0.33 // fraction of the duration at which the hot range splits
	mergeAt = 0.45 // with --merge: fraction at which two adjacent ranges merge
)

// steadyTimeline is the writers' schedule of a Steady simulation.
var steadyTimeline = []phase{{0, "steady writes", 1, 0}}

// Account names where the simulated deployment lives: the monitored
// container, the lease container and the processor (its leases' prefix,
// and its replicas' names). The zero value is the demo's.
type Account struct {
	Database, Container, LeaseDatabase, LeaseContainer, Processor string
}

var demoAccount = Account{DemoDatabase, DemoContainer, DemoDatabase, DemoLeaseContainer, DemoProcessor}

type Config struct {
	Partitions int
	WriteRate  float64 // items per second at rate ×1
	DrainRate  float64 // items per second one replica processes
	Duration   time.Duration
	Interval   time.Duration
	Seed       uint64
	// AllVersionsAndDeletes runs an all-versions-and-deletes processor, and
	// a fifth of the writes delete earlier items instead of inserting.
	AllVersionsAndDeletes bool
	// Functions runs the processor an Azure Functions app runs when its
	// trigger leaves LeaseContainerPrefix unset: no prefix on its leases.
	Functions bool
	// Merge enables partition merge on the account and merges two
	// adjacent ranges at mergeAt; the processor follows the merge as the
	// .NET SDK does.
	Merge bool
	// Steady (tune --emulator) writes at WriteRate from the first interval
	// on, spread over the ranges, and never splits a range.
	Steady bool
	// Backlog is the number of items written to each range after the
	// processor's leases are checkpointed: pending when the run starts.
	Backlog int
	// Account is where the deployment lives; zero is the demo's.
	Account Account
}

// account is where the simulated deployment lives.
func (c Config) account() Account {
	if c.Account == (Account{}) {
		return demoAccount
	}
	return c.Account
}

// phases is the writers' schedule.
func (c Config) phases() []phase {
	if c.Steady {
		return steadyTimeline
	}
	return timeline
}

// Processor is the simulated processor's name, the prefix of its leases.
func (c Config) Processor() string {
	if c.Functions {
		return ""
	}
	return c.account().Processor
}

// replicaName is the owner name replica (from 1) writes into its leases.
func (c Config) replicaName(replica int) string {
	return fmt.Sprintf("%s-%d", cli.Or(c.account().Processor, "instance"), replica)
}

// Mode is the simulated processor's change feed mode, in the embedded
// server's vocabulary (leasetest.Writer.Mode).
func (c Config) Mode() cosmostest.ChangeFeedMode {
	if c.AllVersionsAndDeletes {
		return cosmostest.AllVersionsAndDeletes
	}
	return cosmostest.LatestVersion
}

type World struct {
	Cfg         Config
	rng         *rand.Rand
	Srv         *cosmostest.Server
	data        *cosmostest.Container
	leaseWriter *leasetest.Writer // writes the processor's leases as the real library would
	epkWriter   *leasetest.Writer // the same processor's EPK (version 1) leases, after a merge
	leaseStore  *cosmostest.Container
	feed        *feedReader // the simulated processor's change feed client
	leases      map[string]*simLease

	hotRange   string // range holding demoHotKey, split at splitStep
	splitStep  int
	mergeStep  int // with Merge: the first step at which two ranges merge
	phase      int
	writeCarry float64

	Written, Processed int64
	SplitInfo          string // "range 2 → 4, 5"
	MergeInfo          string // "ranges 2, 3 → 6"
	MergedAt           int    // the step of the merge, 0 before it
}

func NewWorld(cfg Config) (*World, error) {
	var opts []cosmostest.Option
	if cfg.Merge {
		// The service merges ranges only on accounts with merge enabled,
		// and those refuse clients that do not declare PartitionMerge.
		opts = append(opts, cosmostest.WithPartitionMerge())
	}
	steps := float64(cfg.Duration) / float64(cfg.Interval)
	w := &World{
		Cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x636f736d6f736c67)),
		Srv:       cosmostest.NewServer(opts...),
		leases:    map[string]*simLease{},
		splitStep: int(math.Round(splitAt * steps)),
		phase:     -1,
	}
	w.mergeStep = max(int(math.Round(mergeAt*steps)), w.splitStep+1)
	acct := cfg.account()
	w.data = w.Srv.Account.CreateDatabase(acct.Database).CreateContainer(acct.Container, "/tenant", cfg.Partitions)
	leases := w.Srv.Account.CreateDatabase(acct.LeaseDatabase).CreateContainer(acct.LeaseContainer, "/id", 1)

	// Find the hot key's range by writing one item for it before the
	// processor starts (its leases begin at the current position).
	before := w.lsns()
	if err := w.data.WriteItems(demoHotKey, 1); err != nil {
		w.Close()
		return nil, err
	}
	for id, lsn := range w.lsns() {
		if lsn != before[id] {
			w.hotRange = id
		}
	}

	w.leaseStore = leases
	w.leaseWriter = leasetest.NewWriter(cfg.Processor(), w.data, leases, cosmostest.DotNetV0)
	w.leaseWriter.Mode = cfg.Mode()
	w.epkWriter = leasetest.NewWriter(cfg.Processor(), w.data, leases, cosmostest.DotNetV1)
	w.epkWriter.Mode = cfg.Mode()
	tokens, err := w.leaseWriter.CreateLeases(true)
	if err != nil {
		w.Close()
		return nil, err
	}
	for _, t := range tokens {
		w.leases[t] = &simLease{token: t, rangeID: t, checkpoint: w.data.LSN(t), caughtUp: -1}
		if cfg.Backlog > 0 {
			if err := w.data.WriteItemsToRange(t, cfg.Backlog); err != nil {
				w.Close()
				return nil, err
			}
			w.Written += int64(cfg.Backlog)
		}
	}
	w.feed = newFeedReader(w.Srv, acct, cfg.AllVersionsAndDeletes)
	return w, nil
}

func (w *World) Close() { w.Srv.Close() }

func (w *World) lsns() map[string]int64 {
	out := map[string]int64{}
	for _, r := range w.data.Ranges() {
		out[r.ID] = w.data.LSN(r.ID)
	}
	return out
}

// Step advances the world by one interval ending at poll number k: the
// processor runs with the replicas set at the previous poll, the writers
// write, and at splitStep the hot range splits. It returns what happened.
func (w *World) Step(ctx context.Context, k int, replicas int) ([]string, error) {
	var events []string
	ev, err := w.runConsumer(ctx, replicas)
	if err != nil {
		return nil, err
	}
	events = append(events, ev...)

	elapsed := float64(k-1) * float64(w.Cfg.Interval) / float64(w.Cfg.Duration)
	phases := w.Cfg.phases()
	p := 0
	for i, ph := range phases {
		if elapsed >= ph.from {
			p = i
		}
	}
	if p != w.phase {
		w.phase = p
		events = append(events, "writers: "+phases[p].name)
	}
	if err := w.write(phases[p]); err != nil {
		return nil, err
	}

	if k == w.splitStep && w.SplitInfo == "" && !w.Cfg.Steady {
		left, right, err := w.data.Split(w.hotRange)
		if err != nil {
			return nil, err
		}
		w.leases[w.hotRange].stale = true
		w.SplitInfo = fmt.Sprintf("range %s → %s, %s", w.hotRange, left.ID, right.ID)
		events = append(events, "split: "+w.SplitInfo)
	}
	if w.Cfg.Merge && k >= w.mergeStep && w.MergeInfo == "" {
		ev, err := w.merge(k)
		if err != nil {
			return nil, err
		}
		events = append(events, ev...)
	}
	return events, nil
}

// merge merges the last two adjacent ranges (in EPK order) that both have a
// current range-id lease, as the service merges partitions of an account
// with merge enabled; both leases are then stale. Without such a pair (the
// split's parent lease not yet replaced) it tries again at the next step.
func (w *World) merge(k int) ([]string, error) {
	ranges := w.data.Ranges()
	slices.SortFunc(ranges, func(a, b cosmostest.PartitionKeyRange) int { return strings.Compare(a.MinInclusive, b.MinInclusive) })
	current := func(id string) bool { l := w.leases[id]; return l != nil && !l.stale && !l.epk }
	for i := len(ranges) - 1; i > 0; i-- {
		a, b := ranges[i-1], ranges[i]
		if !current(a.ID) || !current(b.ID) {
			continue
		}
		merged, err := w.data.Merge(a.ID, b.ID)
		if err != nil {
			return nil, err
		}
		for _, id := range []string{a.ID, b.ID} {
			w.leases[id].stale, w.leases[id].mergedInto = true, merged.ID
		}
		w.MergeInfo, w.MergedAt = fmt.Sprintf("ranges %s, %s → %s", a.ID, b.ID, merged.ID), k
		return []string{"merge: " + w.MergeInfo}, nil
	}
	return nil, nil
}

// write inserts this interval's items: a jittered share of the phase's rate
// spread over random ranges, the rest on the hot partition key.
func (w *World) write(ph phase) error {
	want := ph.rate*w.Cfg.WriteRate*w.Cfg.Interval.Seconds()*(0.8+0.4*w.rng.Float64()) + w.writeCarry
	n := int(want)
	w.writeCarry = want - float64(n)
	if n == 0 {
		return nil
	}
	deletes := 0
	if w.Cfg.AllVersionsAndDeletes {
		deletes = n / 5
		n -= deletes
	}
	hot := int(math.Round(float64(n) * ph.hotShare))
	if hot > 0 {
		if err := w.data.WriteItems(demoHotKey, hot); err != nil {
			return err
		}
	}
	ranges := w.data.Ranges()
	perRange := make([]int, len(ranges))
	for range n - hot {
		perRange[w.rng.IntN(len(ranges))]++
	}
	for i, r := range ranges {
		if perRange[i] > 0 {
			if err := w.data.WriteItemsToRange(r.ID, perRange[i]); err != nil {
				return err
			}
		}
	}
	w.Written += int64(n)
	return w.deleteSome(deletes)
}

// deleteSome deletes up to n random items. Only an all-versions-and-deletes
// processor sees deletes, so only its runs delete: each is a change to process.
func (w *World) deleteSome(n int) error {
	if n == 0 {
		return nil
	}
	items := w.data.Items()
	for range min(n, len(items)) {
		i := w.rng.IntN(len(items))
		id, _ := items[i]["id"].(string)
		items[i] = items[len(items)-1]
		items = items[:len(items)-1]
		if w.data.Delete(id) {
			w.Written++
		}
	}
	return nil
}

// Backlog is the number of items written but not processed.
func (w *World) Backlog() int64 { return w.Written - w.Processed }

// Package tune is cosmoslag tune: it measures what the processor's
// replicas drain and recommends changeFeedLagThreshold for a latency budget.
package tune

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/sim"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// exitNoRecommendation is tune's exit status when the samples cannot
// support a recommendation.
const exitNoRecommendation = 3

// tuneSampled, when set (by tests), is called after sample k was taken.
var tuneSampled func(k int)

type tuneOptions struct {
	trigger.Options
	window, interval, budget, startup time.Duration
	// --emulator: the simulated processor and its workload.
	sim      sim.Config
	replicas int
	given    map[string]bool // the flags given on the command line
}

func tuneFlags(o *tuneOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag tune", flag.ContinueOnError)
	trigger.Flags(fs, &o.Options)
	fs.DurationVar(&o.budget, "budget", 0, "latency budget (required): how long a change may wait before it is processed")
	fs.DurationVar(&o.startup, "startup", 0, "how long a new replica takes to start processing (scheduling, image pull, start-up);\nsubtracted from the budget")
	fs.DurationVar(&o.window, "window", 2*time.Minute, "how long to watch the leases")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "time between two samples (estimates); the window must hold at least 2 intervals (3 samples)")
	fs.IntVar(&o.Current, "current-replicas", 0, "replicas running now, for the HPA's decision (default: the lease owners at the last sample)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time limit of each estimate")
	fs.BoolVar(&o.Sample, "emulator", false, "run against an embedded Cosmos DB server on which the simulated processor of cosmoslag demo\ndrains a steady workload, on the simulation's clock, instead of the configured account")
	fs.Float64Var(&o.sim.DrainRate, "drain-rate", 50, "with --emulator: changes per second one simulated replica processes (0: a stopped processor)")
	fs.Float64Var(&o.sim.WriteRate, "write-rate", 100, "with --emulator: changes per second the writers add, spread over the partitions")
	fs.IntVar(&o.replicas, "replicas", 4, "with --emulator: replicas of the simulated processor, each holding one lease")
	fs.IntVar(&o.sim.Partitions, "partitions", 4, "with --emulator: physical partitions of the monitored container, one lease each (1-32)")
	return fs, cli.UsageWith(fs, tuneHelp)
}

// tuneHelp is the help of cosmoslag tune, before its flags.
const tuneHelp = `Usage: cosmoslag tune -f scaledobject.yaml --budget 30s [--startup 20s] [--window 2m] [flags]

Measures what the processor's replicas drain and recommends the trigger's
changeFeedLagThreshold for a latency budget. For --window it polls the
trigger's leases every --interval with the scaler's own reads (the estimate
KEDA's poll makes; nothing is written) and measures, from the first sample
to the last, per lease, per owner (replica) and in total:

  drain rate  how far the checkpoints moved, in LSNs per second (a
              checkpoint is the LSN of the last change processed; the lag
              is counted in the same units, about one per change)
  write rate  how far the partitions' latest LSNs moved per second, read
              as checkpoint + lag (an approximation: see docs/tuning.md)
  lag         at the last sample, and the time to drain it at the current
              replica count: per lease, lag / (drain rate - write rate) for a
              backlog (never when the writes arrive as fast or faster); an
              owner's is its slowest lease's, the total the slowest owner's

and recommends

  changeFeedLagThreshold = floor(per-replica drain rate × (budget - startup))

the lag one replica clears within the budget once it has started, with
the arithmetic, and the replicas KEDA and the HPA would choose with it (and
with the current threshold) for the last sample's lag, bounded by the
ScaledObject's minReplicaCount and maxReplicaCount.

The per-replica rate is the mean over the busy replicas (at every sample
their leases' lag was no less than what they drained by the next): what a
replica can do. A processor that keeps up, its lag only what arrived since
its last checkpoint, is not busy. Replicas that drained nothing are idle
(no lag) or stuck (lag pending), not slow, and are not counted. When no
replica was busy, those that caught up are counted and the rate and the
threshold are lower bounds (marked ≥, and said so). A lease that changed
owner is in the totals, but the replicas that held it are not counted.
When the counted replicas' rates differ and the slowest takes longer than
the budget leaves after the startup to drain a threshold's worth, a note
names it and the threshold it would meet. The replicas that keep up with
the writes drain them with 10 % headroom (at equal rates a backlog never
drains), never more than the partitions with writes (from a lower bound:
at most that many); when a partition takes as many writes as a replica
drains or more, no count keeps up, and tune says so.

No recommendation is made (exit status 3, the reasons in the text and in
JSON's reason and reasons) when the data cannot support one: fewer than 3
samples, no checkpoint moved in the window, a split or merge in the window
(leases appear or disappear, a stale parent, an estimate that met a split),
a checkpoint that moved back, or no replica whose drain can be attributed.
When the first sample finds no document of the processor at all (a
misspelt processorName, or a processor that has not started), tune stops
there, exit status 3, naming the processor names the lease container's ids
start with (JSON: noLeaseMatch).

Measure under real load, with a backlog (at a peak, or after a pause), and
run tune again after every change to the processor's code or dependencies
and whenever the shape of the load changes.

On a terminal a line per sample goes to stderr; on a pipe only the result.
-o json prints one document on every outcome.

--emulator: an embedded server stands in for the account (its settings are
first checked as the scaler checks them, offline), holding the trigger's
database and containers; the simulated processor of cosmoslag demo drains
it: --replicas replicas each holding one lease and processing --drain-rate
changes per second, from a backlog that lasts the window, while writers add
--write-rate changes per second over --partitions partitions. The window
passes on the simulation's clock, as fast as the server answers, so the
measured rate can be checked against --drain-rate.

Exit status: 0 recommendation made, 1 the first estimate failed (the error
printed with secrets redacted), 2 invalid flags, files or trigger
configuration, 3 no recommendation.

Examples:
  cosmoslag tune -f so.yaml --auth ta.yaml --env-file secrets.env --window 5m --budget 30s --startup 20s
  cosmoslag tune -f so.yaml --emulator --drain-rate 80 --budget 30s --startup 20s -o json

Flags:
`

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o tuneOptions
	fs, usage := tuneFlags(&o)
	bad, code, ok := cli.ParseCommand("tune", fs, usage, args, &o.Output, func() string {
		o.given = map[string]bool{}
		fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
		return o.Problem()
	}, stdout, stderr)
	if !ok {
		return code
	}
	var sim *tuneSimulation
	setup, stop, err := trigger.Open("tune", &o.Options, func(meta map[string]string) (*cosmostest.Server, error) {
		s, err := o.startSimulation(ctx, meta)
		if err != nil {
			return nil, err
		}
		sim = s
		return s.w.Srv, nil
	}, stderr)
	if err != nil {
		return bad("%s", err)
	}
	defer stop()

	report := newTuneReport(setup, &o, sim)
	scaler, err := poll.NewScaler(ctx, setup, &report.TriggerReport)
	if err != nil {
		return bad("the trigger is invalid: %s", setup.Secrets.Redact(err.Error()))
	}
	defer scaler.Close(context.Background())

	var clock tuneClock = &wallClock{interval: o.interval}
	if sim != nil {
		clock = sim
	}
	progress := io.Discard
	if cli.IsTerminal(stderr) {
		progress = stderr
	}
	samples, err := takeSamples(ctx, scaler, clock, &o, report, progress)
	if err != nil {
		return reportTuneFailure(stdout, stderr, o.Output, report, setup.Secrets.Redact(err.Error()))
	}
	if report.NoLeaseMatch != nil {
		return writeTuneNoLeaseMatch(stdout, stderr, o.Output, report)
	}
	current := -1
	if o.given["current-replicas"] {
		current = o.Current
	}
	hpa := hpamodel.Autoscaler{Min: setup.Min, Max: setup.Max, MetricType: setup.Config.MetricType, Cooldown: setup.Cooldown, ScaleDownWindow: setup.ScaleDownWindow}
	report.fill(samples, analyzeTune(samples, tuneInput{budget: o.budget, startup: o.startup, Current: current, hpa: hpa}))
	return writeTuneReport(stdout, stderr, o.Output, report)
}

// Problem says what is wrong with the flags' values, or "".
func (o *tuneOptions) Problem() string {
	c := o.Options
	c.Current = max(c.Current, 0) // checked below, with tune's wording
	if msg := c.Problem(); msg != "" {
		return msg
	}
	samples := int64(o.window/max(o.interval, 1)) + 1
	switch {
	case !o.given["budget"]:
		return "--budget is required: the latency budget callers tolerate, e.g. --budget 30s"
	case o.budget <= 0:
		return fmt.Sprintf("--budget must be positive, got %s", o.budget)
	case o.startup < 0:
		return fmt.Sprintf("--startup must not be negative, got %s", o.startup)
	case o.budget <= o.startup:
		return fmt.Sprintf("--budget %s must be longer than --startup %s: a replica that starts after the budget has passed cannot meet it", o.budget, o.startup)
	case o.interval < 100*time.Millisecond:
		return fmt.Sprintf("--interval must be at least 100ms, got %s", o.interval)
	case o.window <= 0 || o.window > 24*time.Hour:
		return fmt.Sprintf("--window must be positive and at most 24h, got %s", o.window)
	case samples < tuneMinSamples:
		return fmt.Sprintf("too few samples: --window %s at --interval %s gives %d; at least %d are needed", o.window, o.interval, samples, tuneMinSamples)
	case o.Current < 0:
		return "--current-replicas must not be negative"
	}
	return o.simulationProblem()
}

// simulationProblem checks the flags of the simulated processor.
func (o *tuneOptions) simulationProblem() string {
	if !o.Sample {
		for _, name := range []string{"drain-rate", "write-rate", "replicas", "partitions"} {
			if o.given[name] {
				return fmt.Sprintf("--%s is a setting of the simulated processor: only with --emulator", name)
			}
		}
		return ""
	}
	s := o.sim
	switch {
	case s.DrainRate < 0 || s.DrainRate > 100000:
		return fmt.Sprintf("--drain-rate must be within [0, 100000] changes per second, got %g", s.DrainRate)
	case s.WriteRate < 0 || s.WriteRate > 10000:
		return fmt.Sprintf("--write-rate must be within [0, 10000] changes per second, got %g", s.WriteRate)
	case s.Partitions < 1 || s.Partitions > 32:
		return fmt.Sprintf("--partitions must be between 1 and 32, got %d", s.Partitions)
	case o.replicas < 1 || o.replicas > 32:
		return fmt.Sprintf("--replicas must be between 1 and 32, got %d", o.replicas)
	case simBacklog(s, o.interval, o.window) > 250000:
		return fmt.Sprintf("--emulator: --drain-rate %g over --window %s needs a backlog of %d changes per partition; at most 250000 (a shorter window or a lower rate)",
			s.DrainRate, o.window, simBacklog(s, o.interval, o.window))
	}
	return ""
}

// tuneClock paces the samples: wait returns when sample k (0 the first)
// is due, and its time.
type tuneClock interface {
	wait(ctx context.Context, k int) (time.Time, error)
	simulated() bool
}

// wallClock takes a sample every interval of real time.
type wallClock struct {
	interval time.Duration
	start    time.Time
}

func (c *wallClock) wait(ctx context.Context, k int) (time.Time, error) {
	if k == 0 {
		c.start = time.Now()
		return c.start, nil
	}
	if !cli.SleepUntil(ctx, c.start.Add(time.Duration(k)*c.interval)) {
		return time.Time{}, ctx.Err()
	}
	return time.Now(), nil
}

func (c *wallClock) simulated() bool { return false }

// takeSamples polls the scaler over the window. A failed first estimate is
// the error; a later one is skipped and counted in the report. When ctx
// ends, the samples so far are returned, and the report says so.
func takeSamples(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, clock tuneClock, o *tuneOptions, report *tuneReport, progress io.Writer) ([]tuneSample, error) {
	n := int(o.window/o.interval) + 1
	var samples []tuneSample
	for k := 0; k < n; k++ {
		at, err := clock.wait(ctx, k)
		switch {
		case err != nil && ctx.Err() == nil:
			return nil, err
		case err != nil:
			report.interrupt(k, n)
			return samples, nil
		}
		e, err := poll.EstimateOnce(ctx, scaler, o.Timeout)
		report.Requests += e.Requests
		report.RequestCharge += e.RequestCharge
		switch {
		case err != nil && ctx.Err() != nil:
			report.interrupt(k, n)
			return samples, nil
		case err != nil && k == 0:
			return nil, err
		case err != nil:
			report.skipped(err)
			fmt.Fprintf(progress, "cosmoslag tune: sample %d/%d failed, skipped: %s\n", k+1, n, report.secrets.Redact(err.Error()))
			continue
		}
		samples = append(samples, tuneSample{at: at, estimate: e})
		if tuneSampled != nil {
			tuneSampled(k)
		}
		if k == 0 && stopWithoutLeases(ctx, scaler, o, report, e) {
			return samples, nil
		}
		printTuneProgress(progress, samples, k, n)
	}
	return samples, nil
}

// tuneSimulation is tune --emulator: the demo's world with a steady
// workload, stepped one interval per sample, on its own clock.
type tuneSimulation struct {
	w        *sim.World
	replicas int
	interval time.Duration
	start    time.Time
}

// simBacklog is the backlog per partition that keeps a replica draining
// at c.DrainRate busy through the window and the interval before it: what
// it drains beyond half its partition's share of the writes (they are
// spread at random), and two intervals' drain to spare.
func simBacklog(c sim.Config, interval, window time.Duration) int {
	beyondWrites := max(c.DrainRate-c.WriteRate/float64(2*max(c.Partitions, 1)), 0)
	return int(math.Ceil(beyondWrites*window.Seconds() + c.DrainRate*2*interval.Seconds()))
}

// startSimulation starts the embedded server with the trigger's database
// and containers and the simulated processor, whose replicas take their
// leases in one interval before the first sample.
func (o *tuneOptions) startSimulation(ctx context.Context, meta map[string]string) (*tuneSimulation, error) {
	acct := sim.Account{Database: meta["databaseId"], Container: meta["containerId"], LeaseDatabase: meta["leaseDatabaseId"],
		LeaseContainer: meta["leaseContainerId"], Processor: meta["processorName"]}
	if acct.Database == "" || acct.Container == "" || acct.LeaseDatabase == "" || acct.LeaseContainer == "" {
		return nil, fmt.Errorf("--emulator needs databaseId, containerId, leaseDatabaseId and leaseContainerId in the trigger metadata")
	}
	if acct.Database == acct.LeaseDatabase && acct.Container == acct.LeaseContainer {
		return nil, fmt.Errorf("--emulator: the lease container must differ from the monitored container")
	}
	cfg := o.sim
	cfg.Account, cfg.Functions, cfg.Steady, cfg.Seed = acct, acct.Processor == "", true, 1
	cfg.Interval, cfg.Duration = o.interval, o.window
	cfg.Backlog = simBacklog(cfg, o.interval, o.window)
	w, err := sim.NewWorld(cfg)
	if err != nil {
		return nil, fmt.Errorf("--emulator: setting up the embedded server: %w", err)
	}
	s := &tuneSimulation{w: w, replicas: o.replicas, interval: o.interval, start: time.Now()}
	if _, err := w.Step(ctx, 1, o.replicas); err != nil {
		w.Close()
		return nil, fmt.Errorf("--emulator: simulation: %w", err)
	}
	return s, nil
}

// wait advances the simulation by one interval per sample after the first.
func (s *tuneSimulation) wait(ctx context.Context, k int) (time.Time, error) {
	if k > 0 {
		if _, err := s.w.Step(ctx, k+1, s.replicas); err != nil {
			if ctx.Err() != nil {
				return time.Time{}, ctx.Err()
			}
			return time.Time{}, fmt.Errorf("simulation: %w", err)
		}
	}
	return s.start.Add(time.Duration(k) * s.interval), nil
}

func (s *tuneSimulation) simulated() bool { return true }

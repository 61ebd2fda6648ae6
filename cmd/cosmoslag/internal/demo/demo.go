// Package demo is cosmoslag demo: the scaler polled against a simulated
// deployment on the embedded Cosmos DB server, with a model of KEDA and
// the HPA setting the replica count.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	v2 "k8s.io/api/autoscaling/v2"

	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/sim"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

type demoOptions struct {
	sim         sim.Config
	threshold   int64
	activation  int64
	maxReplicas int
	Cooldown    time.Duration
	scaleDown   time.Duration // the HPA's scale-down stabilization window
	chart       string
}

// demoPoll is one row of the demo's table.
type demoPoll struct {
	At               time.Duration
	TotalLag         int64
	ActivePartitions int64
	Metric           int64
	Active           bool
	Replicas         int32 // after this poll's scaling decision
	Requests         int64 // HTTP requests of the poll, retries included
	RequestCharge    float64
	StaleParents     bool
	EPKLeases        int // leases over part of a physical range (after a merge)
	EPKActive        int // of those, the lagging ones
	Err              error
	Events           []string
}

func demoFlags(o *demoOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag demo", flag.ContinueOnError)
	fs.IntVar(&o.sim.Partitions, "partitions", 4, "physical partition key ranges of the monitored container (1-32)")
	fs.Int64Var(&o.threshold, "threshold", 100, "trigger changeFeedLagThreshold: target lag per replica")
	fs.Int64Var(&o.activation, "activation", 0, "trigger activationChangeFeedLagThreshold: lag above which 0 replicas activate")
	fs.Float64Var(&o.sim.WriteRate, "write-rate", 60, "base write rate, items per second (the burst writes 4 times as much)")
	fs.Float64Var(&o.sim.DrainRate, "drain-rate", 50, "items per second one processor replica handles")
	fs.DurationVar(&o.sim.Duration, "duration", 24*time.Second, "length of the simulation")
	fs.DurationVar(&o.sim.Interval, "interval", time.Second, "polling interval of the scaler (one table row each)")
	fs.IntVar(&o.maxReplicas, "max-replicas", 10, "ScaledObject maxReplicaCount")
	fs.DurationVar(&o.Cooldown, "cooldown", 3*time.Second, "ScaledObject cooldownPeriod before scaling back to 0")
	fs.DurationVar(&o.scaleDown, "scale-down-stabilization", 5*time.Second, "the HPA's scale-down stabilization window, shortened from its 300s default\nso that scale-downs show within the demo (the header line says so)")
	fs.Uint64Var(&o.sim.Seed, "seed", 1, "seed of the write jitter and placement; equal seeds give equal runs")
	fs.StringVar(&o.chart, "chart", "", "write an SVG chart of lag and replicas over time to this file")
	fs.BoolVar(&o.sim.Functions, "functions", false, "run the processor of an Azure Functions app without LeaseContainerPrefix (leases without a prefix; the trigger's processorName is \"\")")
	fs.BoolVar(&o.sim.Merge, "merge", false, "enable partition merge on the account and merge two adjacent partitions part-way through,\nafter the split; the processor follows the merge as the .NET SDK does (EPK leases over the old ranges)")
	fs.BoolVar(&o.sim.AllVersionsAndDeletes, "all-versions-and-deletes", false, "run an all-versions-and-deletes processor (its leases record the mode; a fifth of the writes are deletes)")
	return fs, cli.UsageWith(fs, demoHelp)
}

// demoHelp is the help of cosmoslag demo, before its flags.
const demoHelp = `Usage: cosmoslag demo [flags]

Runs the azure-cosmosdb scaler against an embedded Cosmos DB server (no
Azure account needed) while simulating a deployment:

  - writers insert into a container with several physical partitions: an
    idle start, steady traffic, a burst with a hot partition key, then idle;
  - the hot key's partition splits part-way through; with --merge, two
    adjacent partitions merge later on (the account has partition merge
    enabled, so every client must declare the PartitionMerge capability);
  - a change feed processor drains at --drain-rate per replica, one lease
    per replica, checkpointing like a real processor, and replaces the split
    partition's lease with its children whenever one replica is running
    (and, as the .NET SDK does, each lease of a merged partition by an EPK
    lease over its old range, read through the merged partition);
  - the real scaler (scalers.NewAzureCosmosDBScaler) is polled every
    --interval and a model of KEDA and the HPA sets the replica count:
    activation from 0, ceil(metric / threshold) replicas, scale-downs held
    by the HPA's stabilization window (--scale-down-stabilization, shortened
    from the HPA's 300s), scale to 0 after --cooldown without lag.

Each poll prints one row: simulated time, the scaler's total lag, active
partitions and metric, whether the trigger is active, the replicas chosen,
and the HTTP requests and request units the poll cost. A summary follows.

Flags:
`

func (o *demoOptions) validate() error {
	var errs []error
	s := o.sim
	if s.Partitions < 1 || s.Partitions > 32 {
		errs = append(errs, fmt.Errorf("--partitions must be between 1 and 32, got %d", s.Partitions))
	}
	if o.threshold <= 0 {
		errs = append(errs, fmt.Errorf("--threshold must be greater than 0, got %d", o.threshold))
	}
	// Below a threshold that is itself refused says nothing more.
	if o.activation < 0 || (o.threshold > 0 && o.activation >= o.threshold) {
		errs = append(errs, fmt.Errorf("--activation must be at least 0 and below --threshold, got %d", o.activation))
	}
	if s.WriteRate < 0 || s.WriteRate > 10000 {
		errs = append(errs, fmt.Errorf("--write-rate must be within [0, 10000] items per second, got %g", s.WriteRate))
	}
	if s.DrainRate <= 0 || s.DrainRate > 100000 {
		errs = append(errs, fmt.Errorf("--drain-rate must be within (0, 100000] items per second, got %g", s.DrainRate))
	}
	if s.Interval < 50*time.Millisecond {
		errs = append(errs, fmt.Errorf("--interval must be at least 50ms, got %s", s.Interval))
	}
	if s.Duration < 2*s.Interval || s.Duration > time.Hour {
		errs = append(errs, fmt.Errorf("--duration must be at least two intervals and at most 1h, got %s", s.Duration))
	}
	if o.maxReplicas < 1 || o.maxReplicas > 1000 {
		errs = append(errs, fmt.Errorf("--max-replicas must be between 1 and 1000, got %d", o.maxReplicas))
	}
	if o.scaleDown < 0 || o.scaleDown > time.Hour {
		errs = append(errs, fmt.Errorf("--scale-down-stabilization must be within [0, 1h], got %s", o.scaleDown))
	}
	if o.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("--cooldown must not be negative, got %s", o.Cooldown))
	}
	if o.chart != "" {
		if err := checkWritable("chart", o.chart); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o demoOptions
	fs, usage := demoFlags(&o)
	var valueErrs []error
	restore := reportFlagValues(fs, &valueErrs)
	code, ok := cli.ParseFlags(fs, func(w io.Writer) { restore(); usage(w) }, args, stdout, stderr)
	restore()
	if !ok {
		return code
	}
	// A rejected value leaves its flag at zero: report only the rejection.
	if len(valueErrs) == 0 {
		valueErrs = append(valueErrs, o.validate())
	}
	if err := errors.Join(valueErrs...); err != nil {
		// One line each, every one with the command's prefix.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "cosmoslag demo: %s\n", line)
		}
		return cli.ExitBadArgs
	}
	polls, err := demo(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "cosmoslag demo: %v\n", err)
		return cli.ExitFailed
	}
	if o.chart != "" && len(polls) > 0 {
		if err := writeChart(o.chart, polls, o); err != nil {
			fmt.Fprintf(stderr, "cosmoslag demo: %v\n", err)
			return cli.ExitFailed
		}
		fmt.Fprintf(stdout, "  chart              %s\n", o.chart)
	}
	return cli.ExitOK
}

// demoSleepUntil paces the demo's polls in real time; the simulation is
// stepped per poll, not by the clock, so tests that check its output
// (docs/usage.md's excerpt) skip the waits.
var demoSleepUntil = cli.SleepUntil

// demo runs the simulation and prints the table and the summary.
func demo(ctx context.Context, o demoOptions, out io.Writer) ([]demoPoll, error) {
	w, err := sim.NewWorld(o.sim)
	if err != nil {
		return nil, fmt.Errorf("setting up the embedded server: %w", err)
	}
	defer w.Close()

	scaler, err := scalers.NewInspectedAzureCosmosDBScaler(demoScalerConfig(o, w.Srv.ConnectionString()))
	if err != nil {
		return nil, fmt.Errorf("creating the scaler: %w", err)
	}
	defer scaler.Close(context.Background())
	metricName := scaler.GetMetricSpecForScaling(ctx)[0].External.Metric.Name
	printDemoHeader(out, o, w.Srv.URL(), metricName)

	var polls []demoPoll
	model := &demoScaling{o: o, hpa: &hpamodel.Autoscaler{Min: 0, Max: int32(o.maxReplicas), Target: o.threshold, MetricType: v2.AverageValueMetricType, Cooldown: o.Cooldown, ScaleDownWindow: o.scaleDown}}
	steps := int(o.sim.Duration / o.sim.Interval)
	start := time.Now()
	for k := 0; k <= steps; k++ {
		var events []string
		if k > 0 {
			if events, err = w.Step(ctx, k, int(model.replicas)); err != nil && ctx.Err() == nil {
				return polls, fmt.Errorf("simulation: %w", err)
			}
		}
		if ctx.Err() != nil || !demoSleepUntil(ctx, start.Add(time.Duration(k)*o.sim.Interval)) {
			fmt.Fprintln(out, "interrupted")
			break
		}
		at := time.Duration(k) * o.sim.Interval
		p := pollScaler(ctx, scaler)
		p.At, p.Events = at, append(events, p.Events...)
		model.decide(&p)
		polls = append(polls, p)
		printPoll(out, p)
	}
	printDemoSummary(out, o, w, polls)
	return polls, nil
}

// demoScalerConfig is the ScaledObject's trigger the demo polls, on the
// embedded account.
func demoScalerConfig(o demoOptions, connection string) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		ScalableObjectName:      sim.DemoProcessor,
		ScalableObjectNamespace: "demo",
		ScalableObjectType:      "ScaledObject",
		TriggerType:             "azure-cosmosdb",
		GlobalHTTPTimeout:       10 * time.Second,
		MetricType:              v2.AverageValueMetricType,
		TriggerMetadata: map[string]string{
			"databaseId":                       sim.DemoDatabase,
			"containerId":                      sim.DemoContainer,
			"leaseDatabaseId":                  sim.DemoDatabase,
			"leaseContainerId":                 sim.DemoLeaseContainer,
			"processorName":                    o.sim.Processor(),
			"changeFeedLagThreshold":           strconv.FormatInt(o.threshold, 10),
			"activationChangeFeedLagThreshold": strconv.FormatInt(o.activation, 10),
		},
		AuthParams: map[string]string{"connection": connection},
	}
}

// demoScaling is the KEDA + HPA model over the demo's polls and what it
// has explained so far.
type demoScaling struct {
	o        demoOptions
	hpa      *hpamodel.Autoscaler
	replicas int32
	// What the last poll's events said: the rule that decided, whether
	// the metric's cap bound and at which count, whether EPK leases were
	// explained.
	lastKind   hpamodel.DecisionKind
	lastCapped bool
	lastCap    int64
	epkShown   bool
}

// decide sets the poll's replica count and adds the events that explain
// it.
func (s *demoScaling) decide(p *demoPoll) {
	if p.Err == nil && p.EPKActive > 0 && !s.epkShown {
		s.epkShown = true
		p.Events = append(p.Events, fmt.Sprintf("scaler: %d EPK lease(s) each read their part of the merged range, %d of them lagging: %d active partition(s)",
			p.EPKLeases, p.EPKActive, p.EPKActive))
	}
	if p.Err == nil {
		// The metric's cap: the HPA asks for no more replicas than
		// there are partitions with lag. Said when it starts to bind
		// or binds at another count.
		if capped := p.Metric < p.TotalLag; capped && (!s.lastCapped || p.ActivePartitions != s.lastCap) {
			p.Events = append(p.Events, fmt.Sprintf("scaler: metric capped at %d active partition(s) × %d = %d < lag %d",
				p.ActivePartitions, s.o.threshold, p.Metric, p.TotalLag))
		}
		s.lastCapped, s.lastCap = p.Metric < p.TotalLag, p.ActivePartitions
		// Every decision is explained when the replica count or the
		// rule that decided it changes (a tolerance or a stabilization
		// hold keeps the count; so does a running cooldown period).
		d := s.hpa.Step(time.Unix(0, 0).Add(p.At), s.replicas, p.Metric, p.Active)
		if d.Replicas != s.replicas || d.Kind != s.lastKind {
			p.Events = append(p.Events, d.Reason)
		}
		s.replicas, s.lastKind = d.Replicas, d.Kind
	} else {
		p.Events = append(p.Events, "poll failed, replicas unchanged: "+p.Err.Error())
	}
	p.Replicas = s.replicas
}

// pollScaler polls the scaler once as KEDA does and shows its estimate.
func pollScaler(ctx context.Context, s *scalers.AzureCosmosDBScaler) demoPoll {
	var p demoPoll
	pollCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	e, err := s.Estimate(pollCtx)
	cancel()
	p.Requests, p.RequestCharge = e.Requests, e.RequestCharge
	if err != nil {
		p.Err = err
		return p
	}
	p.TotalLag, p.ActivePartitions, p.Metric, p.Active = e.TotalLag, e.ActivePartitions, e.Metric, e.Active
	for _, l := range e.Leases {
		if l.EPK {
			p.EPKLeases++
			if l.Lag > 0 {
				p.EPKActive++
			}
		}
	}
	switch {
	case e.StaleParents > 0:
		p.StaleParents = true
		p.Events = append(p.Events, fmt.Sprintf("scaler: %d stale parent lease(s), wakes the processor", e.StaleParents))
	case e.SplitRetried:
		p.Events = append(p.Events, "scaler: split seen, estimate redone")
	}
	return p
}

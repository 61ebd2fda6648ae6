// Package check is cosmoslag check: one estimate of a ScaledObject's
// azure-cosmosdb trigger, lease by lease, and the replicas KEDA and the
// HPA would choose.
package check

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/inspect"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// checkNow is the time pending changes' ages are measured at; tests move it.
var checkNow = time.Now

func checkFlags(o *trigger.Options) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag check", flag.ContinueOnError)
	trigger.Flags(fs, o)
	fs.IntVar(&o.Current, "current-replicas", 0, "replicas running now, for the HPA's decision")
	fs.BoolVar(&o.Sample, "emulator", false, "run against an embedded Cosmos DB server holding the referenced database,\ncontainers and a sample processor, instead of the configured account (whose settings\nare first checked as the scaler checks them, offline)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time limit of the estimate")
	return fs, cli.UsageWith(fs, checkHelp)
}

// checkHelp is the help of cosmoslag check, before its flags.
const checkHelp = `Usage: cosmoslag check -f scaledobject.yaml [--auth triggerauth.yaml] [flags]
       cosmoslag check -n NAMESPACE SCALEDOBJECT [--context CONTEXT] [flags]

Runs one estimate of an azure-cosmosdb trigger exactly as the KEDA scaler
would (scalers.NewAzureCosmosDBScaler, then the scaler's own estimator) and
shows it lease by lease: token, format, owner, continuation, and the lag or
"stale parent" (its partition split or merged and the processor has not
replaced it); when a lease's range merged or split, a RANGE column says
which and names the ranges that hold it now ("merged into 6", "split into
4, 5", "part of merged range 6" for an EPK lease over part of a range).
Then the totals, the metric, whether the trigger is active, and the replicas
KEDA and the HPA would choose from --current-replicas (taken as
minReplicaCount when below it: KEDA never runs fewer), bounded by the
ScaledObject's minReplicaCount and maxReplicaCount. A scale down is held
by the HPA's scale-down stabilization window (the ScaledObject's
advanced.horizontalPodAutoscalerConfig.behavior, 300s by default), taking
--current-replicas as the HPA's recommendation until now; the count after
the window is shown too.

With -n NAMESPACE SCALEDOBJECT the objects are read from the cluster of the
kubeconfig (--kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context,
else its current context), read-only: the ScaledObject, its
TriggerAuthentication or ClusterTriggerAuthentication, the Secrets and
ConfigMaps they name and the scale target's container environment, resolved
in KEDA's order (the authentication's env, then configMapTargetRef, then
secretTargetRef; the container's envFrom, then env); --set still overrides.
--current-replicas defaults to the HPA's current replicas, and KEDA's view
follows the estimate: the ScaledObject's conditions, the HPA's current value
of the metric and its current and desired replicas, and a line saying
whether KEDA and this estimate agree (the same desired replicas, and no
fallback in use). A missing object or a refused read is an error naming it.
Installed as kubectl-cosmoslag on the PATH, it runs as kubectl cosmoslag check.

With -f, nothing is read from a cluster. The manifests are parsed with KEDA's
own API types; values the cluster would supply come from local sources, looked up by
key in this order: --set, --env-file, the process environment.
  secretTargetRef {parameter, name, key}: --set key=…, else a kind: Secret
    document of that name (data or stringData) in the ScaledObject's namespace
    (KEDA's, for a ClusterTriggerAuthentication), else the sources above
  configMapTargetRef {parameter, name, key}: the value of key
  env {parameter, name}, and trigger ...FromEnv: NAME: the value of NAME
Keys, connection strings and client secrets are never printed.
-f - reads standard input; the items of a kind: List are read, and a bare
triggers: fragment is read as a ScaledObject's triggers with KEDA's defaults.

The scaler's warnings (unknown keys, secrets in plain metadata) are shown,
and a warning when no lease, or not every lease, of the processor is
counted (never checkpointed: no continuation) while the ScaledObject can
scale to zero (minReplicaCount 0 or unset): changes on those partitions
would not wake the processor from zero. When no document of the processor
is found at all (a misspelt processorName, or a processor that has not
started), the warning says so instead and names the processor names the
lease container's ids start with (one more paged read of its ids, at most
10,000, counted in the Cost line; JSON: noLeaseMatch). To check manifests offline,
without an estimate, run cosmoslag validate.

Leases whose range merged or split are labelled from the monitored
container's live partition key ranges: those the estimate holds (it reads
them for EPK leases) or, for a range-id lease left a stale parent, read
once more with the scaler's own client, whatever the credential (that read
is counted in the Cost line). The leases not counted (never checkpointed,
or not decodable) are those the estimate skipped.

Each Cosmos DB request try is bounded as in KEDA's operator: by
KEDA_HTTP_DEFAULT_TIMEOUT milliseconds from the environment, 3000 by default.
A server certificate that is refused ends the estimate at the first try
(a retry would meet the same certificate), and the error says how to
trust it: for cosmoslag serve, its --ca-file, named by SSL_CERT_FILE.

Exit status: 0 estimate done, 1 estimate failed (the error is printed with
secrets redacted), 2 invalid flags, files or trigger configuration.

Examples:
  cosmoslag check -f so.yaml --auth ta.yaml --env-file secrets.env --current-replicas 2
  cosmoslag check -f so.yaml --set connection="$COSMOS_CONNECTION" -o json
  cosmoslag check -f so.yaml --emulator

Flags:
`

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o trigger.Options
	var c clusterOptions
	var positional []string
	fs, usage := checkFlags(&o)
	clusterFlags(fs, &c)
	bad, code, ok := cli.ParseCommandArgs("check", fs, usage, args, &positional, &o.Output, func() string {
		return cli.Or(c.problem(&o, positional), o.Problem())
	}, stdout, stderr)
	if !ok {
		return code
	}
	var setup *trigger.Setup
	var view *clusterView
	stop := func() {}
	var err error
	if c.name != "" {
		setup, view, err = openCluster(ctx, &c, &o, stderr)
		if err == nil && !cli.Given(fs, "current-replicas") {
			o.Current = view.currentReplicas()
		}
	} else {
		setup, stop, err = trigger.Open("check", &o, startSample, stderr)
	}
	if err != nil {
		return bad("%s", err)
	}
	defer stop()

	report := newCheckReport(setup, o.Sample)
	scaler, err := inspect.NewScaler(ctx, setup, &report.TriggerReport)
	if err != nil {
		return bad("the trigger is invalid: %s", setup.Secrets.Redact(err.Error()))
	}
	defer scaler.Close(context.Background())
	estimate, err := inspect.EstimateOnce(ctx, scaler, o.Timeout)
	if err != nil {
		if view != nil {
			view.fill(report)
			if o.Output != "json" {
				var b strings.Builder
				writeKEDAView(&b, report)
				fmt.Fprint(stderr, strings.TrimPrefix(b.String(), "\n"))
			}
		}
		return reportEstimateFailure(stdout, stderr, o.Output, report, setup.Secrets.Redact(err.Error()))
	}
	completeReport(ctx, scaler, setup, report, estimate, o.Current, o.Timeout, stderr)
	if view != nil {
		view.fill(report)
	}
	return writeCheckReport(stdout, stderr, o.Output, report)
}

// newCheckReport is the report of the trigger before its estimate.
func newCheckReport(setup *trigger.Setup, sample bool) *checkReport {
	return &checkReport{TriggerReport: inspect.NewTriggerReport(setup, sample)}
}

// reportEstimateFailure prints a failed estimate (msg, redacted): the JSON
// document with -o json, the warnings and the error on stderr.
func reportEstimateFailure(stdout, stderr io.Writer, output string, report *checkReport, msg string) int {
	report.Error, report.ExitCode = msg, cli.ExitFailed
	return cli.ReportFailure("check", stdout, stderr, output, report, report.Warnings, msg)
}

// completeReport adds to the report what follows a successful estimate:
// the lease rows and totals, the leases not counted, the wake-from-zero
// warnings, which leases' ranges merged or split (reading the ranges within
// timeout if the estimate does not hold them) and the HPA's decision from
// current replicas.
func completeReport(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, setup *trigger.Setup, report *checkReport, estimate scalers.AzureCosmosDBEstimate, current int, timeout time.Duration, stderr io.Writer) {
	report.fill(estimate, checkNow())
	cost := inspect.RequestCost{Requests: report.Requests, RequestCharge: report.RequestCharge}
	noMatch := inspect.ReportNoLeaseMatch(ctx, scaler, setup.Secrets, &report.TriggerReport, estimate, timeout, &cost)
	report.Requests, report.RequestCharge = cost.Requests, cost.RequestCharge
	if w := wakeFromZeroWarning(setup, report); w != "" && !noMatch {
		report.Warnings = append(report.Warnings, w)
	}
	if w := partlyCheckpointedWarning(setup, report, report.NeverCheckpointed, report.NotDecodable); w != "" {
		report.Warnings = append(report.Warnings, w)
	}
	rangesCtx, cancel := context.WithTimeout(ctx, timeout)
	labelRanges(rangesCtx, scaler, report, &estimate, func(note string) {
		fmt.Fprintf(stderr, "cosmoslag check: note: %s\n", setup.Secrets.Redact(note))
	})
	cancel()
	hpa := &hpamodel.Autoscaler{Min: setup.Min, Max: setup.Max, Target: estimate.Threshold, MetricType: setup.Config.MetricType, Cooldown: setup.Cooldown, ScaleDownWindow: setup.ScaleDownWindow}
	plan := hpa.Settle(int32(min(current, 1<<30)), report.Metric, report.Active)
	report.Replicas = &plan
}

// writeCheckReport prints the report as a table or a JSON document.
func writeCheckReport(stdout, stderr io.Writer, output string, report *checkReport) int {
	return cli.WriteReport("check", stdout, stderr, output, report, func(w io.Writer) error { return writeCheckTable(w, report) }, cli.ExitOK)
}

// wakeFromZeroWarning says when the trigger can never wake the processor
// from zero replicas: no lease is counted (none written yet, or none ever
// checkpointed: a lease without a continuation is not counted), so the lag
// stays 0 however many changes arrive, and the ScaledObject may scale to
// zero (minReplicaCount absent or 0).
func wakeFromZeroWarning(setup *trigger.Setup, r *checkReport) string {
	if setup.Min > 0 || len(r.Leases) > 0 {
		return ""
	}
	return fmt.Sprintf("no lease of processor %s is counted (leases never checkpointed "+
		"have no continuation and are not counted) and minReplicaCount is %d: the processor will not be woken from zero, "+
		"whatever its backlog, until a running instance checkpoints its leases; set minReplicaCount: 1 (at least until the leases "+
		"are checkpointed)", r.Processor, setup.Min)
}

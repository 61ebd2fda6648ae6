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
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
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
const checkHelp = `Usage: cosmoslag check -f scaledobject.yaml [--auth triggerauth.yaml] [--env-file secrets.env] [flags]
       cosmoslag check -n NAMESPACE SCALEDOBJECT [--context CONTEXT] [flags]

Runs one estimate of an azure-cosmosdb trigger as the KEDA scaler would (its
own constructor and estimator) and prints it lease by lease (token, format,
owner, continuation, lag, merged or split ranges), then the totals, the
metric, whether the trigger is active, and the replicas KEDA and the HPA
would choose from --current-replicas (its scale-down stabilization window
included). The scaler's warnings are shown, and one when leases that are not
counted could keep a processor at zero from being woken.

With -f nothing is read from a cluster: a Secret's or environment variable's
value comes from --set, then a Secret document in the files, then
--env-file, then the environment. With -n NAMESPACE SCALEDOBJECT the objects
are read (get only) from the kubeconfig's cluster, resolved in KEDA's order,
and KEDA's view (conditions, the HPA's metric and replicas) follows, with
whether it agrees. Keys, connection strings and client secrets are never
printed. cosmoslag validate checks manifests without an estimate.

Each request try is bounded as in KEDA's operator, by KEDA_HTTP_DEFAULT_TIMEOUT
milliseconds (3000 by default). A refused server certificate ends the
estimate at once; for cosmoslag serve, trust its --ca-file with SSL_CERT_FILE.

Exit status: 0 estimate done, 1 estimate failed (the error printed with
secrets redacted), 2 invalid flags, files or trigger configuration.
Every detail, with examples of the output: docs/usage.md.

Examples:
  cosmoslag check -f examples/scaledobject.yaml --auth examples/triggerauth.yaml --env-file examples/secrets.env
  cosmoslag check -f so.yaml --set connection="$COSMOS_CONNECTION" -o json
  cosmoslag check -f so.yaml --emulator
  cosmoslag check -n shop order-projector

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
	scaler, err := poll.NewScaler(ctx, setup, &report.TriggerReport)
	if err != nil {
		return bad("the trigger is invalid: %s", setup.Secrets.Redact(err.Error()))
	}
	defer scaler.Close(context.Background())
	estimate, err := poll.EstimateOnce(ctx, scaler, o.Timeout)
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
	return &checkReport{TriggerReport: poll.NewTriggerReport(setup, sample)}
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
	cost := poll.RequestCost{Requests: report.Requests, RequestCharge: report.RequestCharge}
	noMatch := poll.ReportNoLeaseMatch(ctx, scaler, setup.Secrets, &report.TriggerReport, estimate, timeout, &cost)
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

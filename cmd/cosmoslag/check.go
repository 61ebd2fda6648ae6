package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// checkNow is the time pending changes' ages are measured at; tests move it.
var checkNow = time.Now

type checkOptions struct {
	file     string
	auth     listFlag
	trigger  string
	envFiles listFlag
	set      keyValueFlag
	current  int
	output   string
	sample   bool // --emulator: the embedded server's sample account instead of the configured one
	timeout  time.Duration
}

func checkFlags(o *checkOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag check", flag.ContinueOnError)
	triggerFlags(fs, o)
	fs.IntVar(&o.current, "current-replicas", 0, "replicas running now, for the HPA's decision")
	fs.BoolVar(&o.sample, "emulator", false, "run against an embedded Cosmos DB server holding the referenced database,\ncontainers and a sample processor, instead of the configured account (whose settings\nare first checked as the scaler checks them, offline)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "time limit of the estimate")
	return fs, usageWith(fs, checkHelp)
}

// triggerFlags registers the flags by which check and tune find the
// trigger and resolve its parameters, and -o.
func triggerFlags(fs *flag.FlagSet, o *checkOptions) {
	o.set.values = map[string]string{}
	fs.StringVar(&o.file, "f", "", "ScaledObject YAML (required; - for standard input); may also hold the TriggerAuthentication\nand Secrets, as documents, a kind: List, or a bare triggers: fragment")
	fs.Var(&o.auth, "auth", "TriggerAuthentication or ClusterTriggerAuthentication YAML (repeatable)")
	fs.StringVar(&o.trigger, "trigger", "", "index in spec.triggers (or name) of the azure-cosmosdb trigger, when there are several")
	fs.Var(&o.envFiles, "env-file", "KEY=VALUE file with the data of referenced Secrets/ConfigMaps and the\nscale target's environment variables (repeatable; later files win)")
	fs.Var(&o.set, "set", "key=value: a trigger parameter, overriding the manifests (e.g. processorName=x),\nor a Secret key / environment variable the manifests reference (repeatable)")
	fs.StringVar(&o.output, "o", "table", "output format: table or json")
}

// checkHelp is the help of cosmoslag check, before its flags.
const checkHelp = `Usage: cosmoslag check -f scaledobject.yaml [--auth triggerauth.yaml] [flags]

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

Nothing is read from a cluster. The manifests are parsed with KEDA's own API
types; values the cluster would supply come from local sources, looked up by
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

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o checkOptions
	fs, usage := checkFlags(&o)
	bad, code, ok := parseCommand("check", fs, usage, args, &o.output, o.problem, stdout, stderr)
	if !ok {
		return code
	}
	setup, stop, err := openTrigger("check", &o, startSample, stderr)
	if err != nil {
		return bad("%s", err)
	}
	defer stop()

	report := newCheckReport(setup, o.sample)
	scaler, err := newCheckScaler(ctx, setup, &report.triggerReport)
	if err != nil {
		return bad("the trigger is invalid: %s", setup.secrets.Redact(err.Error()))
	}
	defer scaler.Close(context.Background())
	estimate, err := estimateOnce(ctx, scaler, o.timeout)
	if err != nil {
		return reportEstimateFailure(stdout, stderr, o.output, report, setup.secrets.Redact(err.Error()))
	}
	completeReport(ctx, scaler, setup, report, estimate, o.current, o.timeout, stderr)
	return writeCheckReport(stdout, stderr, o.output, report)
}

// problem says what is wrong with the flags' values, or "".
func (o *checkOptions) problem() string {
	switch {
	case o.set.malformed > 0:
		return fmt.Sprintf("--set expects key=value; %d argument(s) had no key= (not shown: they may be secrets)", o.set.malformed)
	case o.file == "":
		return "-f scaledobject.yaml is required (see --help)"
	case o.output != "table" && o.output != "json":
		return fmt.Sprintf("-o must be table or json, got %q", excerpt.Of(o.output))
	case o.current < 0:
		return "--current-replicas must not be negative"
	case o.timeout <= 0:
		return "--timeout must be positive"
	}
	return ""
}

// kedaHTTPTimeout bounds each request try as KEDA's operator does:
// KEDA_HTTP_DEFAULT_TIMEOUT milliseconds, 3000 unless set.
func kedaHTTPTimeout() (time.Duration, error) {
	timeoutMS, err := kedautil.ResolveOsEnvInt("KEDA_HTTP_DEFAULT_TIMEOUT", 3000)
	if err != nil || timeoutMS <= 0 {
		return 0, fmt.Errorf("KEDA_HTTP_DEFAULT_TIMEOUT must be a positive number of milliseconds, got %q", excerpt.Of(os.Getenv("KEDA_HTTP_DEFAULT_TIMEOUT")))
	}
	return time.Duration(timeoutMS) * time.Millisecond, nil
}

// openTrigger reads o's files and resolves the trigger the way KEDA would
// (check and tune), printing its notes on stderr, and with --emulator has
// an embedded server that start makes from the trigger's metadata stand in
// for the account; stop closes it. An error is a bad argument, its secrets
// redacted.
func openTrigger(command string, o *checkOptions, start func(meta map[string]string) (*cosmostest.Server, error), stderr io.Writer) (setup *triggerSetup, stop func(), err error) {
	m, values, err := readInputs(o.envFiles, o.set.values, append([]string{o.file}, o.auth...))
	if err != nil {
		return nil, nil, err
	}
	setup, err = buildTrigger(m, o.trigger, o.set.values, values, o.sample)
	if err != nil {
		return nil, nil, errors.New(values.secrets.Redact(err.Error()))
	}
	if setup.config.GlobalHTTPTimeout, err = kedaHTTPTimeout(); err != nil {
		return nil, nil, err
	}
	for _, n := range setup.notes {
		fmt.Fprintf(stderr, "cosmoslag %s: note: %s\n", command, n)
	}
	if !o.sample {
		return setup, func() {}, nil
	}
	stop, err = useSampleAccount(command, m, o, setup, values, start, stderr)
	if err != nil {
		return nil, nil, err
	}
	return setup, stop, nil
}

// useSampleAccount is --emulator: the real scaler's checks first, on the
// trigger resolved as without --emulator (its parameter, credential and
// cloud rules; a trigger with no account setting has nothing of the kind
// to check), then an embedded server, made by start, stands in for the
// account. stop closes the server.
func useSampleAccount(command string, m *manifests, o *checkOptions, setup *triggerSetup, values *localValues,
	start func(meta map[string]string) (*cosmostest.Server, error), stderr io.Writer) (stop func(), err error) {
	if len(setup.accountSettings()) > 0 {
		if err := checkBeforeSample(command, m, o.trigger, o.set.values, values, stderr); err != nil {
			return nil, err
		}
	}
	srv, err := start(setup.config.TriggerMetadata)
	if err != nil {
		return nil, err
	}
	ignored := setup.useSample(srv.ConnectionString(), srv.Key())
	fmt.Fprintf(stderr, "cosmoslag %s: --emulator: an embedded server at %s stands in for the account; replaced: %s; "+
		"not checked: whether the accounts exist and the credentials are accepted\n", command, srv.URL(), cmpOr(strings.Join(ignored, ", "), "no account parameter was set"))
	return srv.Close, nil
}

// newCheckReport is the report of the trigger before its estimate.
func newCheckReport(setup *triggerSetup, sample bool) *checkReport {
	return &checkReport{triggerReport: newTriggerReport(setup, sample)}
}

// newTriggerReport is what check and tune report of the trigger.
func newTriggerReport(setup *triggerSetup, sample bool) triggerReport {
	md := setup.config.TriggerMetadata
	return triggerReport{
		ScaledObject: setup.scaledObject, TriggerIndex: setup.index, TriggerName: setup.name, SampleAccount: sample,
		Database: md["databaseId"], Container: md["containerId"],
		LeaseDatabase: md["leaseDatabaseId"], LeaseContainer: md["leaseContainerId"],
		Processor: md["processorName"], MetricType: string(setup.config.MetricType),
		Warnings: append([]string{}, setup.warnings...),
	}
}

// newCheckScaler builds the trigger's scaler and fills the report's metric
// name and thresholds from it.
func newCheckScaler(ctx context.Context, setup *triggerSetup, report *triggerReport) (*scalers.AzureCosmosDBScaler, error) {
	scaler, err := scalers.NewInspectedAzureCosmosDBScaler(setup.config)
	if err != nil {
		return nil, err
	}
	if specs := scaler.GetMetricSpecForScaling(ctx); len(specs) > 0 && specs[0].External != nil {
		report.MetricName = specs[0].External.Metric.Name
	}
	report.Threshold, report.Activation = scaler.Trigger.Threshold, scaler.Trigger.Activation
	return scaler, nil
}

// estimateOnce runs one estimate, as KEDA's poll does, within timeout. A
// server certificate that is refused ends it at once (see
// certificateGuard), and the error says how to fix it.
func estimateOnce(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, timeout time.Duration) (scalers.AzureCosmosDBEstimate, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, guard, release := guardCertificates(ctx)
	defer release()
	e, err := scaler.Estimate(ctx)
	if certErr := guard.failed(); err != nil && certErr != nil {
		// The client may report the context the guard ended instead of
		// its cause.
		msg := strings.TrimSuffix(err.Error(), ": "+context.Canceled.Error())
		if !strings.Contains(msg, certErr.Error()) {
			msg += ": " + certErr.Error()
		}
		return e, fmt.Errorf("%s; %s", msg, certificateHint(certErr))
	}
	return e, err
}

// reportEstimateFailure prints a failed estimate (msg, redacted): the JSON
// document with -o json, the warnings and the error on stderr.
func reportEstimateFailure(stdout, stderr io.Writer, output string, report *checkReport, msg string) int {
	report.Error, report.ExitCode = msg, exitFailed
	return reportFailure("check", stdout, stderr, output, report, report.Warnings, msg)
}

// reportFailure prints command's failure: doc, its JSON document holding
// the error, with -o json; the warnings and msg on stderr. Exit status 1.
func reportFailure(command string, stdout, stderr io.Writer, output string, doc any, warnings []string, msg string) int {
	if output == "json" {
		_ = writeJSON(stdout, doc)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "cosmoslag %s: warning: %s\n", command, w)
	}
	fmt.Fprintf(stderr, "cosmoslag %s: %s\n", command, msg)
	return exitFailed
}

// completeReport adds to the report what follows a successful estimate:
// the lease rows and totals, the leases not counted, the wake-from-zero
// warnings, which leases' ranges merged or split (reading the ranges within
// timeout if the estimate does not hold them) and the HPA's decision from
// current replicas.
func completeReport(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, setup *triggerSetup, report *checkReport, estimate scalers.AzureCosmosDBEstimate, current int, timeout time.Duration, stderr io.Writer) {
	report.fill(estimate, checkNow())
	cost := azure.CosmosDBCost{Requests: report.Requests, RequestCharge: report.RequestCharge}
	noMatch := reportNoLeaseMatch(ctx, scaler, setup.secrets, &report.triggerReport, estimate, timeout, &cost)
	report.Requests, report.RequestCharge = cost.Requests, cost.RequestCharge
	if w := wakeFromZeroWarning(setup, report); w != "" && !noMatch {
		report.Warnings = append(report.Warnings, w)
	}
	if w := partlyCheckpointedWarning(setup, report, report.NeverCheckpointed, report.NotDecodable); w != "" {
		report.Warnings = append(report.Warnings, w)
	}
	rangesCtx, cancel := context.WithTimeout(ctx, timeout)
	labelRanges(rangesCtx, scaler, report, &estimate, func(note string) {
		fmt.Fprintf(stderr, "cosmoslag check: note: %s\n", setup.secrets.Redact(note))
	})
	cancel()
	hpa := &autoscaler{Min: setup.min, Max: setup.max, Target: estimate.Threshold, MetricType: setup.config.MetricType, Cooldown: setup.cooldown, ScaleDownWindow: setup.scaleDownWindow}
	plan := hpa.settle(int32(min(current, 1<<30)), report.Metric, report.Active)
	report.Replicas = &plan
}

// writeCheckReport prints the report as a table or a JSON document.
func writeCheckReport(stdout, stderr io.Writer, output string, report *checkReport) int {
	return writeReport("check", stdout, stderr, output, report, func(w io.Writer) error { return writeCheckTable(w, report) }, exitOK)
}

// writeReport prints command's report doc as JSON with -o json, else as
// text writes it, and returns code; a failed write is exit status 1.
func writeReport(command string, stdout, stderr io.Writer, output string, doc any, text func(io.Writer) error, code int) int {
	var err error
	if output == "json" {
		err = writeJSON(stdout, doc)
	} else {
		err = text(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cosmoslag %s: %v\n", command, err)
		return exitFailed
	}
	return code
}

// jsonRequested reports whether the arguments ask for -o json, for a flag
// error that stops parsing before -o is read.
func jsonRequested(args []string) bool {
	for i, a := range args {
		switch a {
		case "-o=json", "--o=json":
			return true
		case "-o", "--o":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		case "--":
			return false
		}
	}
	return false
}

// wakeFromZeroWarning says when the trigger can never wake the processor
// from zero replicas: no lease is counted (none written yet, or none ever
// checkpointed: a lease without a continuation is not counted), so the lag
// stays 0 however many changes arrive, and the ScaledObject may scale to
// zero (minReplicaCount absent or 0).
func wakeFromZeroWarning(setup *triggerSetup, r *checkReport) string {
	if setup.min > 0 || len(r.Leases) > 0 {
		return ""
	}
	return fmt.Sprintf("no lease of processor %s is counted (leases never checkpointed "+
		"have no continuation and are not counted) and minReplicaCount is %d: the processor will not be woken from zero, "+
		"whatever its backlog, until a running instance checkpoints its leases; set minReplicaCount: 1 (at least until the leases "+
		"are checkpointed)", r.Processor, setup.min)
}

// checkBeforeSample applies the real scaler's validation (its constructor,
// which makes no request) to the trigger resolved as without --emulator.
// When the referenced values cannot be resolved here, it says what was
// not checked and returns nil.
func checkBeforeSample(command string, m *manifests, selector string, set map[string]string, values *localValues, stderr io.Writer) error {
	real, err := buildTrigger(m, selector, set, values, false)
	if err != nil {
		fmt.Fprintf(stderr, "cosmoslag %s: note: --emulator: the account settings were not checked: %s\n", command, values.secrets.Redact(err.Error()))
		return nil
	}
	s, err := scalers.NewAzureCosmosDBScaler(real.config)
	if err != nil {
		return fmt.Errorf("the trigger is invalid (checked before --emulator replaces the account): %s", real.secrets.Redact(err.Error()))
	}
	return s.Close(context.Background())
}

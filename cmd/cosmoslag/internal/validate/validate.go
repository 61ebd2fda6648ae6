// Package validate is cosmoslag validate: every azure-cosmosdb trigger of
// the manifests checked offline with the scaler's own constructor.
package validate

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

type validateOptions struct {
	files    cli.ListFlag
	EnvFiles cli.ListFlag
	Set      cli.KeyValueFlag
	Output   string
}

// validateReport is validate's result as JSON (-o json): exactly one
// document on every outcome, as check's, with error and exitCode.
type validateReport struct {
	Triggers []validateResult `json:"triggers"`
	Checked  int              `json:"checked"`
	Invalid  int              `json:"invalid"`
	// Notes on the files as a whole (a bare triggers: fragment, …).
	Notes    []string `json:"notes"`
	Error    string   `json:"error,omitempty"`
	ExitCode int      `json:"exitCode"`
}

// validateResult is one azure-cosmosdb trigger's verdict.
type validateResult struct {
	Kind         string `json:"kind"` // ScaledObject or ScaledJob
	Name         string `json:"name"` // namespace/name
	TriggerIndex int    `json:"triggerIndex"`
	TriggerName  string `json:"triggerName,omitempty"`
	Valid        bool   `json:"valid"`
	// Problems are every problem of the trigger, each naming its parameter
	// or key (always an array; empty when valid); Error is them joined with
	// "; ". Redacted.
	Problems []string `json:"problems"`
	Error    string   `json:"error,omitempty"`
	// Warnings are the scaler's warnings (key names only), Notes what the
	// resolution of the trigger noted; both always arrays.
	Warnings []string `json:"warnings"`
	Notes    []string `json:"notes"`
}

func validateFlags(o *validateOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag validate", flag.ContinueOnError)
	o.Set.Values = map[string]string{}
	fs.Var(&o.files, "f", "YAML file (repeatable; - for standard input): ScaledObjects, ScaledJobs,\nTriggerAuthentications and Secrets, as documents, a kind: List, or a bare triggers: fragment")
	fs.Var(&o.EnvFiles, "env-file", "KEY=VALUE file with the data of referenced Secrets/ConfigMaps and the\nscale target's environment variables (repeatable; later files win)")
	fs.Var(&o.Set, "set", "key=value: a trigger parameter, overriding the manifests,\nor a Secret key / environment variable the manifests reference (repeatable)")
	fs.StringVar(&o.Output, "o", "table", "output format: table (one line per trigger) or json (one document, as check -o json)")
	return fs, cli.UsageWith(fs, validateHelp)
}

// validateHelp is the help of cosmoslag validate, before its flags.
const validateHelp = `Usage: cosmoslag validate -f manifests.yaml [-f more.yaml …] [flags]

Checks every azure-cosmosdb trigger of the ScaledObjects and ScaledJobs in
the files offline: its parameters are resolved as check resolves them (the
referenced TriggerAuthentication, its Secrets, --env-file and --set values)
and given to the scaler's own constructor, scalers.NewAzureCosmosDBScaler,
which applies every parameter, credential and cloud rule of the real scaler
and makes no request. No account is contacted. Every problem of a trigger is
reported: a metadata key or TriggerAuthentication parameter the trigger does
not know (KEDA would ignore it) with the nearest parameter's name, each value
that has no local value, each error of the constructor. The scaler's warnings
(secrets in plain metadata) are printed too. Keys, connection strings and
client secrets are never printed.

With -o json, standard output holds exactly one JSON document whatever
the outcome: "triggers" (kind, name, triggerIndex, valid, problems, error,
warnings, notes), "checked", "invalid", and "error" and "exitCode" as in
check's.

Exit status: 0 every trigger is valid, 2 a trigger is invalid (or the flags
or files are, or the files hold no azure-cosmosdb trigger), 1 the JSON
output could not be written.

Example:
  cosmoslag validate -f examples/typo-scaledobject.yaml -f examples/triggerauth.yaml --env-file examples/secrets.env

Flags:
`

func Run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var o validateOptions
	fs, usage := validateFlags(&o)
	if code, ok := cli.ParseFlagsJSON(fs, usage, args, stdout, stderr); !ok {
		return code
	}
	report := validateReport{Triggers: []validateResult{}, Notes: []string{}}
	bad := cli.BadArgs("validate", &o.Output, stdout, stderr, func(msg string) any {
		report.Error, report.ExitCode = msg, cli.ExitBadArgs
		return report
	})
	switch {
	case o.Output != "table" && o.Output != "json":
		o.Output = "table"
		return bad("-o must be table or json, got %q", excerpt.Of(fs.Lookup("o").Value.String()))
	case o.Set.Malformed > 0:
		return bad("--set expects key=value; %d argument(s) had no key= (not shown: they may be secrets)", o.Set.Malformed)
	case len(o.files) == 0:
		return bad("-f manifests.yaml is required (see --help)")
	}
	m, values, err := trigger.ReadInputs(o.EnvFiles, o.Set.Values, o.files)
	if err != nil {
		return bad("%v", err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(stderr, "cosmoslag validate: note: %s\n", n)
	}
	report.Notes = append(report.Notes, m.Notes...)
	validateAll(m, &report, o.Set.Values, values, stdout, o.Output == "table")
	if report.Checked == 0 {
		return bad("the files hold no ScaledObject or ScaledJob with an azure-cosmosdb trigger (found %d ScaledObject(s), %d ScaledJob(s))", len(m.ScaledObjects), len(m.ScaledJobs))
	}
	if report.Invalid > 0 {
		report.ExitCode = cli.ExitBadArgs
	}
	if o.Output == "json" {
		if err := cli.WriteJSON(stdout, report); err != nil {
			fmt.Fprintf(stderr, "cosmoslag validate: %v\n", err)
			return cli.ExitFailed
		}
		return report.ExitCode
	}
	fmt.Fprintf(stdout, "%d trigger(s) checked, %d invalid\n", report.Checked, report.Invalid)
	return report.ExitCode
}

// validateAll validates every azure-cosmosdb trigger of the ScaledObjects,
// then of the ScaledJobs, into the report; with table, each result is
// printed as it comes.
func validateAll(m *trigger.Manifests, report *validateReport, set map[string]string, values *trigger.LocalValues, stdout io.Writer, table bool) {
	var targets []trigger.Scalable
	for i := range m.ScaledObjects {
		targets = append(targets, trigger.ScaledObjectTarget(&m.ScaledObjects[i]))
	}
	for i := range m.ScaledJobs {
		targets = append(targets, trigger.ScaledJobTarget(&m.ScaledJobs[i]))
	}
	for _, target := range targets {
		for index, t := range target.Triggers {
			if t.Type != trigger.Type {
				continue
			}
			r := validateTrigger(m, target, index, set, values)
			report.Checked++
			if !r.Valid {
				report.Invalid++
			}
			report.Triggers = append(report.Triggers, r)
			if table {
				printValidateResult(stdout, r)
			}
		}
	}
}

// printValidateResult prints one trigger's lines: its warnings and notes,
// then valid or invalid with the error.
func printValidateResult(w io.Writer, r validateResult) {
	label := fmt.Sprintf("%s %s trigger %d", r.Kind, r.Name, r.TriggerIndex)
	if r.TriggerName != "" {
		label += " (" + r.TriggerName + ")"
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", label, warning)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "%s: note: %s\n", label, n)
	}
	switch {
	case r.Valid:
		fmt.Fprintf(w, "%s: valid\n", label)
	case len(r.Problems) == 1:
		fmt.Fprintf(w, "%s: invalid: %s\n", label, r.Problems[0])
	default:
		fmt.Fprintf(w, "%s: invalid, %d problems:\n", label, len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}

// validateTrigger resolves the trigger as check does and builds the scaler
// with its constructor, which validates and makes no request. Every problem
// is reported: the keys that are no parameter, the values that cannot be
// resolved, and each error of the constructor (a value's problem that only
// a missing value causes is left to that value's). Redacted.
func validateTrigger(m *trigger.Manifests, target trigger.Scalable, index int, set map[string]string, values *trigger.LocalValues) validateResult {
	r := validateResult{Kind: target.Kind, Name: target.Namespace + "/" + target.Name, TriggerIndex: index,
		TriggerName: target.Triggers[index].Name, Warnings: []string{}, Notes: []string{}, Problems: []string{}}
	setup := trigger.SetupTriggerAll(m, target, index, set, values)
	r.Warnings = append(r.Warnings, setup.OtherWarnings()...) // an unknown key is a problem here
	r.Notes = append(r.Notes, setup.Notes[len(m.Notes):]...)
	r.Problems = append(r.Problems, setup.Unknown...)
	r.Problems = append(r.Problems, setup.Unresolved...)
	scaler, err := scalers.NewAzureCosmosDBScaler(setup.Config)
	if err == nil {
		_ = scaler.Close(context.Background())
	} else {
		msg := strings.TrimPrefix(err.Error(), "error parsing azure-cosmosdb metadata: ")
		for line := range strings.SplitSeq(msg, "\n") {
			if line = strings.TrimSpace(line); line != "" && !namesAny(line, setup.UnresolvedParams) {
				r.Problems = append(r.Problems, line)
			}
		}
	}
	for i, p := range r.Problems {
		r.Problems[i] = setup.Secrets.Redact(p)
	}
	r.Valid = len(r.Problems) == 0
	r.Error = strings.Join(r.Problems, "; ")
	return r
}

// namesAny reports whether an error line names one of the parameters (a
// whole word), as the constructor's complaint about a credential that is
// only missing because its value could not be resolved does.
func namesAny(line string, params []string) bool {
	for _, p := range params {
		for i := strings.Index(line, p); i >= 0; {
			end := i + len(p)
			before := i == 0 || !isWordByte(line[i-1])
			after := end == len(line) || !isWordByte(line[end])
			if before && after {
				return true
			}
			next := strings.Index(line[i+1:], p)
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

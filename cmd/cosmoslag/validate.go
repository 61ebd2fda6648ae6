package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

type validateOptions struct {
	files    listFlag
	envFiles listFlag
	set      keyValueFlag
}

func validateFlags(o *validateOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag validate", flag.ContinueOnError)
	o.set.values = map[string]string{}
	fs.Var(&o.files, "f", "YAML file (repeatable; - for standard input): ScaledObjects, ScaledJobs,\nTriggerAuthentications and Secrets, as documents, a kind: List, or a bare triggers: fragment")
	fs.Var(&o.envFiles, "env-file", "KEY=VALUE file with the data of referenced Secrets/ConfigMaps and the\nscale target's environment variables (repeatable; later files win)")
	fs.Var(&o.set, "set", "key=value: a trigger parameter, overriding the manifests,\nor a Secret key / environment variable the manifests reference (repeatable)")
	usage := func(w io.Writer) {
		fmt.Fprint(w, `Usage: cosmoslag validate -f manifests.yaml [-f more.yaml …] [flags]

Checks every azure-cosmosdb trigger of the ScaledObjects and ScaledJobs in
the files offline: its parameters are resolved as check resolves them (the
referenced TriggerAuthentication, its Secrets, --env-file and --set values)
and given to the scaler's own constructor, scalers.NewAzureCosmosDBScaler,
which applies every parameter, credential and cloud rule of the real scaler
and makes no request. No account is contacted. The scaler's warnings
(unknown keys, secrets in plain metadata) are printed too. Keys, connection
strings and client secrets are never printed.

Exit status: 0 every trigger is valid, 2 a trigger is invalid (or the flags
or files are, or the files hold no azure-cosmosdb trigger).

Flags:
`)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	return fs, usage
}

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var o validateOptions
	fs, usage := validateFlags(&o)
	if code, ok := parseFlags(fs, usage, args, stdout, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "cosmoslag validate: %s\n", fmt.Sprintf(format, a...))
		return exitBadArgs
	}
	switch {
	case o.set.malformed > 0:
		return bad("--set expects key=value; %d argument(s) had no key= (not shown: they may be secrets)", o.set.malformed)
	case len(o.files) == 0:
		return bad("-f manifests.yaml is required (see --help)")
	}
	values := newLocalValues()
	for _, f := range o.envFiles {
		if err := values.readEnvFile(f); err != nil {
			return bad("--env-file: %v", err)
		}
	}
	values.set = o.set.values
	var m manifests
	for _, f := range o.files {
		if err := readManifests(&m, f); err != nil {
			return bad("%v", err)
		}
	}
	for _, sec := range m.secrets {
		for _, v := range sec.Data {
			values.secrets.Add(string(v))
		}
		for _, v := range sec.StringData {
			values.secrets.Add(v)
		}
	}
	for _, n := range m.notes {
		fmt.Fprintf(stderr, "cosmoslag validate: note: %s\n", n)
	}

	var targets []scalable
	for i := range m.scaledObjects {
		targets = append(targets, scaledObjectTarget(&m.scaledObjects[i]))
	}
	for i := range m.scaledJobs {
		targets = append(targets, scaledJobTarget(&m.scaledJobs[i]))
	}
	checked, invalid := 0, 0
	for _, target := range targets {
		for index, t := range target.triggers {
			if t.Type != triggerType {
				continue
			}
			checked++
			label := fmt.Sprintf("%s %s/%s trigger %d", target.kind, target.namespace, target.name, index)
			if t.Name != "" {
				label += " (" + t.Name + ")"
			}
			err := validateTrigger(&m, target, index, o.set.values, values, stdout, label)
			if err != nil {
				invalid++
				fmt.Fprintf(stdout, "%s: invalid: %s\n", label, err)
			}
		}
	}
	if checked == 0 {
		return bad("the files hold no ScaledObject or ScaledJob with an azure-cosmosdb trigger (found %d ScaledObject(s), %d ScaledJob(s))", len(m.scaledObjects), len(m.scaledJobs))
	}
	fmt.Fprintf(stdout, "%d trigger(s) checked, %d invalid\n", checked, invalid)
	if invalid > 0 {
		return exitBadArgs
	}
	return exitOK
}

// validateTrigger resolves the trigger as check does and builds the scaler
// with its constructor, which validates and makes no request. The error is
// redacted.
func validateTrigger(m *manifests, target scalable, index int, set map[string]string, values *localValues, stdout io.Writer, label string) error {
	setup, err := setupTrigger(m, target, index, set, values, false)
	if err != nil {
		return fmt.Errorf("%s", values.secrets.Redact(err.Error()))
	}
	for _, w := range setup.warnings {
		fmt.Fprintf(stdout, "%s: warning: %s\n", label, w)
	}
	for _, n := range setup.notes[len(m.notes):] {
		fmt.Fprintf(stdout, "%s: note: %s\n", label, n)
	}
	scaler, err := scalers.NewAzureCosmosDBScaler(setup.config)
	if err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(setup.secrets.Redact(err.Error()), "error parsing azure-cosmosdb metadata: "))
	}
	_ = scaler.Close(context.Background())
	fmt.Fprintf(stdout, "%s: valid\n", label)
	return nil
}

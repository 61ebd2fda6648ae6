package trigger

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

type Options struct {
	File     string
	Auth     cli.ListFlag
	Trigger  string
	EnvFiles cli.ListFlag
	Set      cli.KeyValueFlag
	Current  int
	Output   string
	Sample   bool // --emulator: the embedded server's sample account instead of the configured one
	Timeout  time.Duration
}

// Flags registers the flags by which check and tune find the
// trigger and resolve its parameters, and -o.
func Flags(fs *flag.FlagSet, o *Options) {
	o.Set.Values = map[string]string{}
	fs.StringVar(&o.File, "f", "", "ScaledObject YAML (required; - for standard input); may also hold the TriggerAuthentication\nand Secrets, as documents, a kind: List, or a bare triggers: fragment")
	fs.Var(&o.Auth, "auth", "TriggerAuthentication or ClusterTriggerAuthentication YAML (repeatable)")
	fs.StringVar(&o.Trigger, "trigger", "", "index in spec.triggers (or name) of the azure-cosmosdb trigger, when there are several")
	fs.Var(&o.EnvFiles, "env-file", "KEY=VALUE file with the data of referenced Secrets/ConfigMaps and the\nscale target's environment variables (repeatable; later files win)")
	fs.Var(&o.Set, "set", "key=value: a trigger parameter, overriding the manifests (e.g. processorName=x),\nor a Secret key / environment variable the manifests reference (repeatable)")
	fs.StringVar(&o.Output, "o", "table", "output format: table or json")
}

// Problem says what is wrong with the flags' values, or "".
func (o *Options) Problem() string {
	switch {
	case o.Set.Malformed > 0:
		return fmt.Sprintf("--set expects key=value; %d argument(s) had no key= (not shown: they may be secrets)", o.Set.Malformed)
	case o.File == "":
		return "-f scaledobject.yaml is required (see --help)"
	case o.Output != "table" && o.Output != "json":
		return fmt.Sprintf("-o must be table or json, got %q", excerpt.Of(o.Output))
	case o.Current < 0:
		return "--current-replicas must not be negative"
	case o.Timeout <= 0:
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

// Open reads o's files and resolves the trigger the way KEDA would
// (check and tune), printing its notes on stderr, and with --emulator has
// an embedded server that start makes from the trigger's metadata stand in
// for the account; stop closes it. An error is a bad argument, its secrets
// redacted.
func Open(command string, o *Options, start func(meta map[string]string) (*cosmostest.Server, error), stderr io.Writer) (setup *Setup, stop func(), err error) {
	m, values, err := ReadInputs(o.EnvFiles, o.Set.Values, append([]string{o.File}, o.Auth...))
	if err != nil {
		return nil, nil, err
	}
	setup, err = buildTrigger(m, o.Trigger, o.Set.Values, values, o.Sample)
	if err != nil {
		return nil, nil, errors.New(values.Secrets.Redact(err.Error()))
	}
	if setup.Config.GlobalHTTPTimeout, err = kedaHTTPTimeout(); err != nil {
		return nil, nil, err
	}
	for _, n := range setup.Notes {
		fmt.Fprintf(stderr, "cosmoslag %s: note: %s\n", command, n)
	}
	if !o.Sample {
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
func useSampleAccount(command string, m *Manifests, o *Options, setup *Setup, values *LocalValues,
	start func(meta map[string]string) (*cosmostest.Server, error), stderr io.Writer) (stop func(), err error) {
	if len(setup.accountSettings()) > 0 {
		if err := checkBeforeSample(command, m, o.Trigger, o.Set.Values, values, stderr); err != nil {
			return nil, err
		}
	}
	srv, err := start(setup.Config.TriggerMetadata)
	if err != nil {
		return nil, err
	}
	ignored := setup.useSample(srv.ConnectionString(), srv.Key())
	fmt.Fprintf(stderr, "cosmoslag %s: --emulator: an embedded server at %s stands in for the account; replaced: %s; "+
		"not checked: whether the accounts exist and the credentials are accepted\n", command, srv.URL(), cli.Or(strings.Join(ignored, ", "), "no account parameter was set"))
	return srv.Close, nil
}

// checkBeforeSample applies the real scaler's validation (its constructor,
// which makes no request) to the trigger resolved as without --emulator.
// When the referenced values cannot be resolved here, it says what was
// not checked and returns nil.
func checkBeforeSample(command string, m *Manifests, selector string, set map[string]string, values *LocalValues, stderr io.Writer) error {
	real, err := buildTrigger(m, selector, set, values, false)
	if err != nil {
		fmt.Fprintf(stderr, "cosmoslag %s: note: --emulator: the account settings were not checked: %s\n", command, values.Secrets.Redact(err.Error()))
		return nil
	}
	s, err := scalers.NewAzureCosmosDBScaler(real.Config)
	if err != nil {
		return fmt.Errorf("the trigger is invalid (checked before --emulator replaces the account): %s", real.Secrets.Redact(err.Error()))
	}
	return s.Close(context.Background())
}

// FromManifests resolves the trigger of objects already read (from the
// cluster: ReadCluster) as Open does, printing its notes on stderr. An
// error is a bad argument, its secrets redacted.
func FromManifests(command string, m *Manifests, selector string, values *LocalValues, stderr io.Writer) (*Setup, error) {
	setup, err := buildTrigger(m, selector, values.Set, values, false)
	if err != nil {
		return nil, errors.New(values.Secrets.Redact(err.Error()))
	}
	if setup.Config.GlobalHTTPTimeout, err = kedaHTTPTimeout(); err != nil {
		return nil, err
	}
	for _, n := range setup.Notes {
		fmt.Fprintf(stderr, "cosmoslag %s: note: %s\n", command, n)
	}
	return setup, nil
}

package demo

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
)

// reportedValue wraps a flag's value so that a rejected argument is reported
// after parsing by cosmoslag itself, naming the flag and an excerpt of the
// value: the flag package would quote the whole argument and say only
// "parse error".
type reportedValue struct {
	flag.Value
	name string
	errs *[]error
}

func (v reportedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (v reportedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		*v.errs = append(*v.errs, flagValueError(v.name, v.Value, s))
	}
	return nil
}

func flagValueError(name string, value flag.Value, s string) error {
	prefix := fmt.Sprintf("--%s %q", name, excerpt.Of(s))
	var kind any
	if g, ok := value.(flag.Getter); ok {
		kind = g.Get()
	}
	switch kind.(type) {
	case time.Duration:
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return fmt.Errorf("%s: a duration needs a unit (did you mean %ss?)", prefix, s)
		}
		return fmt.Errorf("%s: not a duration (use a unit: 500ms, 30s, 2m)", prefix)
	case int, int64:
		return fmt.Errorf("%s: not a whole number", prefix)
	case uint64:
		return fmt.Errorf("%s: not a non-negative whole number", prefix)
	case float64:
		return fmt.Errorf("%s: not a number", prefix)
	case bool:
		return fmt.Errorf("%s: not true or false", prefix)
	}
	return fmt.Errorf("%s: invalid value", prefix)
}

// reportFlagValues makes every flag of fs report its bad values into errs
// while parsing. restore puts the original values back, for the flag
// package's help, which shows types and defaults by the values' types.
func reportFlagValues(fs *flag.FlagSet, errs *[]error) (restore func()) {
	originals := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		originals[f] = f.Value
		f.Value = reportedValue{Value: f.Value, name: f.Name, errs: errs}
	})
	return func() {
		for f, v := range originals {
			f.Value = v
		}
	}
}

// checkWritable refuses a file that cannot be written, before a run whose
// result would be lost; a file it had to create is removed again.
func checkWritable(flagName, path string) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("--%s %q: cannot write the file: %v", flagName, excerpt.Of(path), err)
	}
	f.Close()
	if os.IsNotExist(statErr) {
		os.Remove(path)
	}
	return nil
}

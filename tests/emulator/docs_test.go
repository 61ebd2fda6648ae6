package emulator

import (
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// cosmosDBTagParam is one parameter as the keda: tags declare it.
type cosmosDBTagParam struct {
	name         string
	authFirst    bool // the TriggerAuthentication is looked at first
	fromEnv      bool // also nameFromEnv
	defaultValue string
	hasDefault   bool
}

func cosmosDBTagParams(t reflect.Type) []cosmosDBTagParam {
	var params []cosmosDBTagParam
	for field := range t.Fields() {
		tag, ok := field.Tag.Lookup("keda")
		if !ok {
			continue
		}
		var p cosmosDBTagParam
		for part := range strings.SplitSeq(tag, ",") {
			key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch key {
			case "name":
				p.name = value
			case "order":
				p.authFirst = strings.HasPrefix(value, "authParams")
				p.fromEnv = strings.Contains(value, "resolvedEnv")
			case "default":
				p.defaultValue, p.hasDefault = value, true
			}
		}
		if p.name == "" {
			nested := field.Type
			if nested.Kind() == reflect.Pointer {
				nested = nested.Elem()
			}
			params = append(params, cosmosDBTagParams(nested)...)
			continue
		}
		params = append(params, p)
	}
	return params
}

// scalerMetadataType is the type of the scaler's metadata, whose keda: tags
// declare its parameters (the type NewAzureCosmosDBScaler parses into).
func scalerMetadataType(t *testing.T) reflect.Type {
	t.Helper()
	typ := reflect.TypeFor[scalers.AzureCosmosDBMetadata]()
	if typ.Kind() != reflect.Struct {
		t.Fatalf("%v is not a struct: the test must learn where the keda: tags are now", typ)
	}
	return typ
}

// requiredParam reports whether the scaler refuses trigger metadata
// without name, naming it. (The tag alone cannot tell: processorName is
// optional in its tag, so that an empty value parses, and its presence is
// checked by the scaler.)
func requiredParam(t *testing.T, name string) bool {
	t.Helper()
	_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata(name, ""), canaryAuth()))
	return err != nil && strings.Contains(err.Error(), name)
}

// cosmosDBDocumentedParams returns the "- `name` - text" entries of the
// documentation between two headings.
func cosmosDBDocumentedParams(t *testing.T, doc, from, to string) map[string]string {
	t.Helper()
	start := strings.Index(doc, from)
	end := strings.Index(doc, to)
	if start < 0 || end < start {
		t.Fatalf("docs/azure-cosmosdb.md: no section between %q and %q", from, to)
	}
	entries := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^- `([a-zA-Z]+)` - (.*)$").FindAllStringSubmatch(doc[start:end], -1) {
		entries[m[1]] = m[2]
	}
	return entries
}

// The reference page documents exactly the parameters the keda: tags
// accept, with the tags' defaults and optionality: those a
// TriggerAuthentication supplies first under Authentication Parameters, the
// others (and every ...FromEnv form) in the Parameter list.
func TestDocsMatchTheKedaTags(t *testing.T) {
	raw, err := os.ReadFile("../../docs/azure-cosmosdb.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	metadataDocs := cosmosDBDocumentedParams(t, doc, "**Parameter list:**", "### Authentication Parameters")
	authDocs := cosmosDBDocumentedParams(t, doc, "### Authentication Parameters", "#### How credentials are chosen")

	wantMetadata, wantAuth := map[string]bool{}, map[string]bool{}
	for _, p := range cosmosDBTagParams(scalerMetadataType(t)) {
		if p.authFirst {
			wantAuth[p.name] = true
		} else {
			wantMetadata[p.name] = true
		}
		if p.fromEnv {
			wantMetadata[p.name+"FromEnv"] = true
		}
		text, documented := metadataDocs[p.name]
		if !documented {
			text = authDocs[p.name]
		}
		if p.hasDefault && !strings.Contains(text, "Default: `"+p.defaultValue+"`") {
			t.Errorf("%s: the tag's default is %q; the docs say: %s", p.name, p.defaultValue, text)
		}
		if optional := !requiredParam(t, p.name); !p.authFirst && optional != strings.Contains(text, "Optional") {
			t.Errorf("%s: optional=%v for the scaler; the docs say: %s", p.name, optional, text)
		}
	}
	for section, pair := range map[string][2]map[string]bool{
		"Parameter list":            {wantMetadata, keysOf(metadataDocs)},
		"Authentication Parameters": {wantAuth, keysOf(authDocs)},
	} {
		want, got := pair[0], pair[1]
		for name := range want {
			if !got[name] {
				t.Errorf("%s: %s is accepted by the scaler but not documented there", section, name)
			}
		}
		for name := range got {
			if !want[name] {
				t.Errorf("%s: %s is documented there but the scaler does not read it from there", section, name)
			}
		}
	}

	// docs/configuration.md's table (once the README's) lists the same trigger metadata.
	configuration, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(configuration), "## Trigger parameters")
	end := strings.Index(string(configuration), "### Choosing credentials")
	if start < 0 || end < start {
		t.Fatal("docs/configuration.md: no Trigger parameters section")
	}
	var tableNames []string
	for _, row := range regexp.MustCompile("(?m)^\\| ([^|]*`[^|]*) \\|").FindAllStringSubmatch(string(configuration[start:end]), -1) {
		for _, name := range regexp.MustCompile("`([a-zA-Z]+)`").FindAllStringSubmatch(row[1], -1) {
			tableNames = append(tableNames, name[1])
		}
	}
	slices.Sort(tableNames)
	if docNames := slices.Sorted(maps.Keys(wantMetadata)); !slices.Equal(tableNames, docNames) {
		t.Errorf("docs/configuration.md's trigger parameter table lists %v, the scaler reads %v", tableNames, docNames)
	}
}

func keysOf(m map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
}

// The statuses the reference page says are retried are exactly those a poll
// survives when one change feed read answers with them once.
func TestDocsListTheRetriedStatusesExactly(t *testing.T) {
	raw, err := os.ReadFile("../../docs/azure-cosmosdb.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`exactly these statuses — ([^.]*)\.`).FindStringSubmatch(strings.Join(strings.Fields(string(raw)), " "))
	if m == nil {
		t.Fatal("docs/azure-cosmosdb.md: no sentence listing 'exactly these statuses — …'")
	}
	documented := map[int]bool{}
	for _, code := range regexp.MustCompile("`(\\d{3})`").FindAllStringSubmatch(m[1], -1) {
		n, _ := strconv.Atoi(code[1])
		documented[n] = true
	}
	env := newCosmosEnv(t, 1, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	for _, status := range []int{400, 403, 404, 408, 409, 412, 429, 449, 500, 501, 502, 503, 504, 505} {
		remove := env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, Status: status, RetryAfter: time.Millisecond, Times: 1})
		_, _, err := s.GetMetricsAndActivity(t.Context(), "s0-metric")
		remove()
		if retried := err == nil; retried != documented[status] {
			t.Errorf("HTTP %d: retried=%v, documented as retried=%v", status, retried, documented[status])
		}
	}
}

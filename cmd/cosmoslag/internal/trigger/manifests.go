package trigger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
)

// Manifests are the KEDA objects read from -f and --auth files.
type Manifests struct {
	ScaledObjects []kedav1alpha1.ScaledObject
	ScaledJobs    []kedav1alpha1.ScaledJob
	auths         []namedAuth
	Secrets       []corev1.Secret
	Notes         []string // what was read in an unusual way, for stderr
	// Cluster holds what KEDA resolves from the cluster, when the objects
	// were read from one (check -n NAMESPACE SCALEDOBJECT): the trigger's
	// values come from there and --set, never from local sources.
	Cluster *ClusterValues
}

// namedAuth is a TriggerAuthentication or ClusterTriggerAuthentication.
type namedAuth struct {
	Kind, name, Namespace string
	spec                  kedav1alpha1.TriggerAuthenticationSpec
}

// secretValue looks key up in the Secret documents named name in
// namespace (a document without a namespace counts as in every
// namespace, as kubectl apply -n would place it). found says whether such
// a Secret exists; elsewhere lists the namespaces holding a Secret of that
// name when none is in namespace.
func (m *Manifests) secretValue(namespace, name, key string) (value string, found, hasKey bool, elsewhere []string) {
	for _, sec := range m.Secrets {
		if sec.Name != name {
			continue
		}
		if sec.Namespace != "" && sec.Namespace != namespace {
			elsewhere = append(elsewhere, sec.Namespace)
			continue
		}
		found = true
		// As the API server does: stringData is merged over data.
		if v, ok := sec.StringData[key]; ok {
			return v, true, true, nil
		}
		if v, ok := sec.Data[key]; ok {
			return string(v), true, true, nil
		}
	}
	return "", found, false, elsewhere
}

// Stdin is what -f - reads; tests replace it.
var Stdin io.Reader = os.Stdin

// readManifests parses every YAML document of the file (documents are
// separated by "---" lines; "-" is standard input) into KEDA's API types,
// the items of a kind: List (what kubectl get -o yaml prints) included.
// Other kinds are skipped. A bare trigger fragment, a YAML list of
// triggers or a mapping with triggers: and no kind, is read as the
// triggers of a ScaledObject with KEDA's defaults, with a note.
func readManifests(m *Manifests, path string) error {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(Stdin)
		path = "standard input"
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	for i, doc := range splitYAML(raw) {
		if err := m.addDocument(doc, fmt.Sprintf("%s: document %d", path, i+1), path); err != nil {
			return err
		}
	}
	return nil
}

// addDocument reads one YAML document; where names it in errors.
func (m *Manifests) addDocument(doc []byte, where, path string) error {
	var anyDoc any
	if err := yaml.Unmarshal(doc, &anyDoc); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if list, ok := anyDoc.([]any); ok {
		return m.addFragment(list, where, path)
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
		Triggers   []any             `json:"triggers"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch {
	case head.Kind == "" && head.APIVersion == "" && head.Triggers != nil:
		return m.addFragment(head.Triggers, where, path)
	case head.Kind == "List" && (head.APIVersion == "v1" || head.APIVersion == ""):
		for j, item := range head.Items {
			if err := m.addDocument(item, fmt.Sprintf("%s: item %d", where, j+1), path); err != nil {
				return err
			}
		}
		return nil
	case head.Kind == "Secret" && head.APIVersion == "v1":
		var sec corev1.Secret
		if err := yaml.Unmarshal(doc, &sec); err != nil {
			// The error may quote the document: name only the place.
			return fmt.Errorf("%s: Secret %q: invalid (data values must be base64)", where, excerpt.Of(sec.Name))
		}
		m.Secrets = append(m.Secrets, sec)
		return nil
	case head.Kind != "" && !strings.HasPrefix(head.APIVersion, "keda.sh/"):
		return nil
	}
	switch head.Kind {
	case "ScaledObject":
		var so kedav1alpha1.ScaledObject
		if err := yaml.Unmarshal(doc, &so); err != nil {
			return fmt.Errorf("%s: ScaledObject: %w", path, err)
		}
		m.ScaledObjects = append(m.ScaledObjects, so)
	case "ScaledJob":
		var sj kedav1alpha1.ScaledJob
		if err := yaml.Unmarshal(doc, &sj); err != nil {
			return fmt.Errorf("%s: ScaledJob: %w", path, err)
		}
		m.ScaledJobs = append(m.ScaledJobs, sj)
	case "TriggerAuthentication", "ClusterTriggerAuthentication":
		var ta kedav1alpha1.TriggerAuthentication // both kinds share the spec
		if err := yaml.Unmarshal(doc, &ta); err != nil {
			return fmt.Errorf("%s: %s: %w", path, head.Kind, err)
		}
		m.auths = append(m.auths, namedAuth{Kind: head.Kind, name: ta.Name, Namespace: ta.Namespace, spec: ta.Spec})
	}
	return nil
}

// FragmentName is the name of the ScaledObject a bare trigger fragment is
// read into.
const FragmentName = "fragment"

// addFragment reads a bare list of triggers (the docs' examples show
// them so) as the triggers of a ScaledObject with KEDA's defaults.
func (m *Manifests) addFragment(triggers []any, where, path string) error {
	raw, err := json.Marshal(map[string]any{"triggers": triggers})
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var so kedav1alpha1.ScaledObject
	if err := json.Unmarshal(raw, &so.Spec); err != nil {
		return fmt.Errorf("%s: triggers: %w", where, err)
	}
	so.Name = FragmentName
	m.ScaledObjects = append(m.ScaledObjects, so)
	m.Notes = append(m.Notes, fmt.Sprintf("%s is a bare triggers: fragment, not a ScaledObject: read as the triggers of ScaledObject default/%s "+
		"with KEDA's defaults (minReplicaCount 0, maxReplicaCount 100, no advanced settings)", where, FragmentName))
	return nil
}

var yamlSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// ReadInputs reads what check and validate resolve a trigger from: the
// --env-file files (later ones win), the --set values, and the manifest
// files, whose Secrets' values are recorded for redaction.
func ReadInputs(envFiles []string, set map[string]string, files []string) (*Manifests, *LocalValues, error) {
	values := newLocalValues()
	for _, f := range envFiles {
		if err := values.readEnvFile(f); err != nil {
			return nil, nil, fmt.Errorf("--env-file: %w", err)
		}
	}
	values.Set = set
	var m Manifests
	for _, f := range files {
		if err := readManifests(&m, f); err != nil {
			return nil, nil, err
		}
	}
	for _, sec := range m.Secrets {
		for _, v := range sec.Data {
			values.Secrets.Add(string(v))
		}
		for _, v := range sec.StringData {
			values.Secrets.Add(v)
		}
	}
	return &m, values, nil
}

func splitYAML(raw []byte) [][]byte {
	var docs [][]byte
	for _, d := range yamlSeparator.Split(string(raw), -1) {
		if len(bytes.TrimSpace([]byte(d))) > 0 {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// LocalValues stands in for what the cluster would supply: the data of the
// Secrets and ConfigMaps a TriggerAuthentication references and the
// environment of the scale target's containers. A key is looked up in the
// --set values, then the --env-file files (later files win), then the
// process environment.
type LocalValues struct {
	Set     map[string]string
	files   map[string]string
	Secrets *redact.Secrets // values that must never be printed
	// noProcessEnv: the process environment is not looked up (the
	// cluster's objects supply the values).
	noProcessEnv bool
}

func newLocalValues() *LocalValues {
	return &LocalValues{Set: map[string]string{}, files: map[string]string{}, Secrets: &redact.Secrets{}}
}

func (l *LocalValues) lookup(key string) (string, bool) {
	if v, ok := l.Set[key]; ok {
		return v, true
	}
	if v, ok := l.files[key]; ok {
		return v, true
	}
	if redact.IsEnvVarName(key) && !l.noProcessEnv {
		return os.LookupEnv(key)
	}
	return "", false
}

// readEnvFile reads KEY=VALUE lines as written for
// "kubectl create secret generic --from-env-file": blank lines and lines
// starting with # are skipped; an optional "export " prefix and one pair of
// surrounding quotes are removed. Every value is treated as a secret.
func (l *LocalValues) readEnvFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return fmt.Errorf("%s:%d: expected KEY=VALUE", path, n)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			if value[0] == '"' {
				if uq, err := strconv.Unquote(value); err == nil {
					value = uq
				} else {
					value = value[1 : len(value)-1]
				}
			} else {
				value = value[1 : len(value)-1]
			}
		}
		l.files[key] = value
		l.Secrets.Add(value)
	}
	return sc.Err()
}

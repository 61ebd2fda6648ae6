package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

const triggerType = "azure-cosmosdb"

// The trigger's parameters, as the scaler's keda: tags declare them:
//   - secretParams hold keys, connection strings or client secrets; their
//     values are never printed;
//   - accountParams (with their ...FromEnv forms) choose the accounts and
//     credentials; --emulator replaces them;
//   - knownParams (with their ...FromEnv forms) may be set with --set.
var secretParams, accountParams, knownParams = triggerParams()

func triggerParams() (secret, account, known []string) {
	for _, p := range scalers.AzureCosmosDBParameters() {
		names := []string{p.Name}
		if p.FromEnv {
			names = append(names, p.Name+"FromEnv")
		}
		known = append(known, names...)
		if p.Account {
			account = append(account, names...)
		}
		if p.Secret {
			secret = append(secret, p.Name)
		}
	}
	return secret, account, known
}

// triggerSetup is everything check derived from the manifests.
type triggerSetup struct {
	scaledObject string // namespace/name
	index        int
	name         string
	config       *scalersconfig.ScalerConfig
	min, max     int32
	cooldown     time.Duration
	// scaleDownWindow is the HPA's scale-down stabilization window: the
	// ScaledObject's advanced.horizontalPodAutoscalerConfig.behavior, or
	// the HPA's default.
	scaleDownWindow time.Duration
	secrets         *redact.Secrets // values to redact from every output
	notes           []string        // warnings for stderr
	// warnings are the scaler's own warnings on the trigger's metadata as
	// written in the manifest (unknown keys, secrets in plain metadata):
	// key names only, never a value.
	warnings []string
	// authRefParams (check --emulator) are the parameters the
	// TriggerAuthentication supplies, left unresolved.
	authRefParams []string
}

// scalable is a ScaledObject or a ScaledJob, as far as its triggers go.
type scalable struct {
	kind, name, namespace string
	triggers              []kedav1alpha1.ScaleTriggers
	object                runtime.Object
	so                    *kedav1alpha1.ScaledObject // nil for a ScaledJob
}

func scaledObjectTarget(so *kedav1alpha1.ScaledObject) scalable {
	return scalable{kind: "ScaledObject", name: so.Name, namespace: cmpOr(so.Namespace, "default"), triggers: so.Spec.Triggers, object: so, so: so}
}

func scaledJobTarget(sj *kedav1alpha1.ScaledJob) scalable {
	return scalable{kind: "ScaledJob", name: sj.Name, namespace: cmpOr(sj.Namespace, "default"), triggers: sj.Spec.Triggers, object: sj}
}

// buildTrigger selects the ScaledObject's azure-cosmosdb trigger and
// resolves its parameters the way KEDA would, from local values instead of
// the cluster. With sample (check --emulator), account parameters need not resolve.
func buildTrigger(m *manifests, selector string, set map[string]string, values *localValues, sample bool) (*triggerSetup, error) {
	if len(m.scaledObjects) == 0 && len(m.scaledJobs) > 0 {
		var names []string
		for _, sj := range m.scaledJobs {
			names = append(names, sj.Name)
		}
		return nil, fmt.Errorf("-f holds ScaledJob %s: check estimates the trigger of a ScaledObject and models its HPA; a ScaledJob has no HPA (its trigger parameters are the same: copy them into a ScaledObject to check them, or run cosmoslag validate)", strings.Join(names, ", "))
	}
	if len(m.scaledObjects) != 1 {
		return nil, fmt.Errorf("-f must hold exactly one keda.sh ScaledObject, found %d", len(m.scaledObjects))
	}
	target := scaledObjectTarget(&m.scaledObjects[0])
	index, err := selectTrigger(target, selector)
	if err != nil {
		return nil, err
	}
	return setupTrigger(m, target, index, set, values, sample)
}

// setupTrigger resolves the parameters of trigger index of target the way
// KEDA would, from local values instead of the cluster (check and validate).
func setupTrigger(m *manifests, target scalable, index int, set map[string]string, values *localValues, sample bool) (*triggerSetup, error) {
	trigger := target.triggers[index]
	s := &triggerSetup{
		scaledObject: target.namespace + "/" + target.name,
		index:        index,
		name:         trigger.Name,
		min:          defaultMinReplicas,
		max:          defaultMaxReplicas,
		cooldown:     defaultCooldown,
		secrets:      values.secrets.Clone(),
		notes:        slices.Clone(m.notes),
	}
	s.scaleDownWindow = defaultScaleDownWindow
	if target.so != nil {
		s.readScaledObject(target.so)
	}
	cfg := newScalerConfig(target, index)
	s.config = cfg
	// From the manifest's metadata, before --set adds parameters to it
	// (a credential given with --set is not in plain metadata).
	s.warnings = scalers.AzureCosmosDBWarnings(trigger.Metadata)
	s.warnings = append(s.warnings, unknownSetWarnings(m, set, s.warnings)...)

	// A trigger parameter given with --set wins over the manifests whatever
	// its lookup order, so it goes into the metadata and the auth params,
	// and the sources it overrides are not looked up.
	overridden := map[string]string{}
	for k, v := range set {
		if slices.Contains(knownParams, k) {
			overridden[k] = v
			cfg.TriggerMetadata[k] = v
		}
	}
	if err := s.resolveAuth(m, trigger.AuthenticationRef, values, overridden, sample); err != nil {
		return nil, err
	}
	if !sample {
		if err := s.resolveEnv(values, overridden); err != nil {
			return nil, err
		}
	}
	maps.Copy(cfg.AuthParams, overridden)
	for _, p := range secretParams {
		s.secrets.Add(cfg.AuthParams[p], cfg.TriggerMetadata[p])
	}
	for _, v := range cfg.ResolvedEnv {
		s.secrets.Add(v)
	}
	return s, nil
}

// unknownSetWarnings gives a --set key that is neither a trigger parameter
// nor a key the manifests reference (a Secret, ConfigMap or environment
// variable of a TriggerAuthentication, a ...FromEnv variable) the
// scaler's unknown-key warning, as the key would draw in the trigger's
// metadata; keys already warned of are not repeated. Key names only.
func unknownSetWarnings(m *manifests, set map[string]string, warned []string) []string {
	referenced := m.referencedKeys()
	unknown := map[string]string{}
	for k := range set {
		if !slices.Contains(knownParams, k) && !referenced[k] {
			unknown[k] = ""
		}
	}
	var warnings []string
	for _, w := range scalers.AzureCosmosDBWarnings(unknown) {
		if !slices.Contains(warned, w) {
			warnings = append(warnings, w)
		}
	}
	return warnings
}

// referencedKeys are the local value keys the manifests may look up: the
// keys of every TriggerAuthentication's secret, config map and environment
// references, and the variables every ...FromEnv trigger parameter names.
func (m *manifests) referencedKeys() map[string]bool {
	keys := map[string]bool{}
	for _, a := range m.auths {
		for _, r := range authRefs(&a.spec) {
			keys[r.key] = true
		}
	}
	var triggers []kedav1alpha1.ScaleTriggers
	for _, so := range m.scaledObjects {
		triggers = append(triggers, so.Spec.Triggers...)
	}
	for _, sj := range m.scaledJobs {
		triggers = append(triggers, sj.Spec.Triggers...)
	}
	for _, t := range triggers {
		for k, v := range t.Metadata {
			if strings.HasSuffix(k, "FromEnv") {
				keys[v] = true
			}
		}
	}
	return keys
}

// readScaledObject takes the replica bounds, the cooldown period and the
// HPA's scale-down stabilization window from the ScaledObject.
func (s *triggerSetup) readScaledObject(so *kedav1alpha1.ScaledObject) {
	s.min = derefOr(so.Spec.MinReplicaCount, defaultMinReplicas)
	s.max = derefOr(so.Spec.MaxReplicaCount, defaultMaxReplicas)
	s.cooldown = time.Duration(derefOr(so.Spec.CooldownPeriod, int32(defaultCooldown/time.Second))) * time.Second
	if a := so.Spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil && a.HorizontalPodAutoscalerConfig.Behavior != nil &&
		a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown != nil && a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds != nil {
		s.scaleDownWindow = time.Duration(*a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds) * time.Second
	}
	if so.Spec.IdleReplicaCount != nil {
		s.notes = append(s.notes, "idleReplicaCount is not modelled: replicas are computed as if it were unset")
	}
}

// newScalerConfig is KEDA's scaler config of trigger index of target,
// before its parameters are resolved.
func newScalerConfig(target scalable, index int) *scalersconfig.ScalerConfig {
	trigger := target.triggers[index]
	metricType := trigger.MetricType
	if metricType == "" {
		metricType = v2.AverageValueMetricType
	}
	cfg := &scalersconfig.ScalerConfig{
		ScalableObjectName:      target.name,
		ScalableObjectNamespace: target.namespace,
		ScalableObjectType:      target.kind,
		TriggerName:             trigger.Name,
		TriggerType:             trigger.Type,
		TriggerIndex:            index,
		TriggerMetadata:         maps.Clone(trigger.Metadata),
		AuthParams:              map[string]string{},
		ResolvedEnv:             map[string]string{},
		MetricType:              metricType,
		GlobalHTTPTimeout:       10 * time.Second,
		ScaledObject:            target.object,
	}
	if cfg.TriggerMetadata == nil {
		cfg.TriggerMetadata = map[string]string{}
	}
	return cfg
}

func selectTrigger(target scalable, selector string) (int, error) {
	var candidates []string
	var indexes []int
	for i, t := range target.triggers {
		if t.Type == triggerType {
			indexes = append(indexes, i)
			c := strconv.Itoa(i)
			if t.Name != "" {
				c += " (" + t.Name + ")"
			}
			candidates = append(candidates, c)
		}
	}
	if selector != "" {
		for _, i := range indexes {
			if strconv.Itoa(i) == selector || target.triggers[i].Name == selector {
				return i, nil
			}
		}
		return 0, fmt.Errorf("--trigger %q: %s %s has no azure-cosmosdb trigger with that index or name (azure-cosmosdb triggers: %s)",
			excerpt.Of(selector), target.kind, target.name, cmpOr(strings.Join(candidates, ", "), "none"))
	}
	switch len(indexes) {
	case 0:
		return 0, fmt.Errorf("%s %s has no trigger of type %s", target.kind, target.name, triggerType)
	case 1:
		return indexes[0], nil
	}
	return 0, fmt.Errorf("%s %s has %d azure-cosmosdb triggers; choose one with --trigger N (index in spec.triggers): %s",
		target.kind, target.name, len(indexes), strings.Join(candidates, ", "))
}

// resolveAuth fills AuthParams and PodIdentity from the referenced
// TriggerAuthentication, with secret, config map and environment values
// taken from the local values.
func (s *triggerSetup) resolveAuth(m *manifests, ref *kedav1alpha1.AuthenticationRef, values *localValues, overridden map[string]string, sample bool) error {
	if ref == nil {
		if len(m.auths) > 0 {
			s.notes = append(s.notes, "the trigger has no authenticationRef, so KEDA would not use the TriggerAuthentication given; it is ignored")
		}
		return nil
	}
	kind := cmpOr(ref.Kind, "TriggerAuthentication")
	namespace := s.config.ScalableObjectNamespace
	auth, notFound := findAuth(m, kind, ref.Name, namespace)
	// KEDA reads a ClusterTriggerAuthentication's Secrets in its own
	// namespace, KEDA_CLUSTER_OBJECT_NAMESPACE ("keda" by default).
	secretNamespace := namespace
	if kind == "ClusterTriggerAuthentication" {
		secretNamespace = cmpOr(os.Getenv("KEDA_CLUSTER_OBJECT_NAMESPACE"), "keda")
	}
	if auth == nil {
		if sample {
			return nil
		}
		return s.withoutAuth(kind, ref.Name, notFound, overridden)
	}
	spec := auth.spec
	if spec.PodIdentity != nil {
		s.config.PodIdentity = *spec.PodIdentity
	}
	s.noteUnreadSources(kind, ref.Name, &spec)
	refs := authRefs(&spec)
	if sample {
		// Not resolved: --emulator replaces them. Recorded for its banner.
		for _, r := range refs {
			s.authRefParams = append(s.authRefParams, r.param)
		}
		return nil
	}
	for _, r := range refs {
		if _, ok := overridden[r.param]; ok {
			continue
		}
		v, err := lookupAuthRef(m, values, kind, ref.Name, secretNamespace, r)
		if err != nil {
			return err
		}
		s.config.AuthParams[r.param] = v
		if r.what == "secret" {
			s.secrets.Add(v)
		}
	}
	return nil
}

// findAuth finds the kind named name that KEDA would use for a
// ScaledObject in namespace; when it is not found, notFound says where
// same-named ones are that KEDA would not find ("" when none).
func findAuth(m *manifests, kind, name, namespace string) (auth *namedAuth, notFound string) {
	var elsewhere []string // namespaces of same-named TriggerAuthentications KEDA would not find
	for i := range m.auths {
		a := &m.auths[i]
		if a.kind != kind || a.name != name {
			continue
		}
		if kind == "TriggerAuthentication" && a.namespace != "" && a.namespace != namespace {
			elsewhere = append(elsewhere, a.namespace)
			continue
		}
		auth = a
	}
	if len(elsewhere) > 0 {
		notFound = fmt.Sprintf(" (the one given is in namespace %s, not the ScaledObject's namespace %s: KEDA looks it up in the ScaledObject's namespace and would not find it)",
			strings.Join(elsewhere, ", "), namespace)
	}
	return auth, notFound
}

// withoutAuth is a referenced TriggerAuthentication that was not given:
// the docs' examples all use an authenticationRef, and a user who gives
// the account's parameters with --set need not write it out.
func (s *triggerSetup) withoutAuth(kind, name, notFound string, overridden map[string]string) error {
	var given []string
	for _, p := range accountParams {
		if _, ok := overridden[p]; ok {
			given = append(given, p)
		}
	}
	if len(given) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%s %s was not given (--auth)%s; the account parameters come from --set: %s",
			kind, name, notFound, strings.Join(given, ", ")))
		return nil
	}
	return fmt.Errorf("the trigger uses %s %q%s: pass a file holding it with --auth, or give its parameters with --set (e.g. --set connection=…)", kind, excerpt.Of(name), notFound)
}

// noteUnreadSources notes each of the TriggerAuthentication's sources that
// cannot be read from here.
func (s *triggerSetup) noteUnreadSources(kind, name string, spec *kedav1alpha1.TriggerAuthenticationSpec) {
	for _, src := range []struct {
		name    string
		present bool
	}{
		{"hashiCorpVault", spec.HashiCorpVault != nil}, {"azureKeyVault", spec.AzureKeyVault != nil},
		{"gcpSecretManager", spec.GCPSecretManager != nil}, {"awsSecretManager", spec.AwsSecretManager != nil},
		{"boundServiceAccountToken", len(spec.BoundServiceAccountToken) > 0}, {"oauth2", spec.OAuth2 != nil},
		{"azureServicePrincipal", spec.AzureServicePrincipal != nil}, {"filePath", spec.FilePath != ""},
	} {
		if src.present {
			s.notes = append(s.notes, fmt.Sprintf("%s %s: %s cannot be read from here and is ignored; supply its parameters with --set", kind, name, src.name))
		}
	}
}

// authRef is one parameter a TriggerAuthentication takes from a secret, a
// config map or an environment variable (name is "" for the last).
type authRef struct{ what, name, key, param string }

// authRefs lists the TriggerAuthentication's secret, config map and
// environment references, in that order.
func authRefs(spec *kedav1alpha1.TriggerAuthenticationSpec) []authRef {
	var refs []authRef
	for _, r := range spec.SecretTargetRef {
		refs = append(refs, authRef{"secret", r.Name, r.Key, r.Parameter})
	}
	for _, r := range spec.ConfigMapTargetRef {
		refs = append(refs, authRef{"configMap", r.Name, r.Key, r.Parameter})
	}
	for _, r := range spec.Env {
		refs = append(refs, authRef{"environment variable", "", r.Name, r.Parameter})
	}
	return refs
}

// lookupAuthRef is the local value of one reference of TriggerAuthentication
// kind name: --set first; for a secret, a Secret document of that name in
// the namespace KEDA reads decides; then --env-file and the environment.
func lookupAuthRef(m *manifests, values *localValues, kind, name, secretNamespace string, r authRef) (string, error) {
	v, ok := values.set[r.key]
	var elsewhere, secretOption string
	if !ok && r.what == "secret" {
		// A Secret document of that name in the namespace KEDA reads
		// decides; only without one do local values stand in.
		var found bool
		var namespaces []string
		v, found, ok, namespaces = m.secretValue(secretNamespace, r.name, r.key)
		if found && !ok {
			return "", fmt.Errorf("%s %s: parameter %s comes from Secret %s/%s, which has no key %q", kind, name, r.param, secretNamespace, r.name, r.key)
		}
		if len(namespaces) > 0 {
			elsewhere = fmt.Sprintf(" (Secret %s is given in namespace %s; KEDA reads it in namespace %s)", r.name, strings.Join(namespaces, ", "), secretNamespace)
		}
		secretOption = fmt.Sprintf(", a kind: Secret document (namespace %s) in the -f or --auth files", secretNamespace)
	}
	if !ok {
		v, ok = values.lookup(r.key)
	}
	if !ok {
		where := fmt.Sprintf("%s %q", r.what, r.key)
		if r.name != "" {
			where = fmt.Sprintf("%s %q key %q", r.what, r.name, r.key)
		}
		return "", fmt.Errorf("%s %s: parameter %s comes from %s, which has no local value%s: pass --set %s=…%s, an --env-file with %s=…, or set it in the environment",
			kind, name, r.param, where, elsewhere, r.key, secretOption, r.key)
	}
	return v, nil
}

// resolveEnv fills ResolvedEnv, the scale target's environment, for every
// ...FromEnv parameter of the trigger.
func (s *triggerSetup) resolveEnv(values *localValues, overridden map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(s.config.TriggerMetadata)) {
		name := s.config.TriggerMetadata[k]
		if !strings.HasSuffix(k, "FromEnv") || name == "" {
			continue
		}
		if _, ok := overridden[strings.TrimSuffix(k, "FromEnv")]; ok {
			continue
		}
		v, ok := values.lookup(name)
		if !ok {
			return fmt.Errorf("trigger parameter %s names the environment variable %s, which has no local value: set it in the environment, in an --env-file or with --set %s=…", k, name, name)
		}
		s.config.ResolvedEnv[name] = v
	}
	return nil
}

// accountSettings lists the trigger's account settings (parameters from the
// metadata, --set or the TriggerAuthentication, and its podIdentity).
func (s *triggerSetup) accountSettings() []string {
	var set []string
	for _, p := range accountParams {
		if s.config.AuthParams[p] != "" || s.config.TriggerMetadata[p] != "" || slices.Contains(s.authRefParams, p) {
			set = append(set, p)
		}
	}
	if s.config.PodIdentity.Provider != "" {
		set = append(set, "podIdentity")
	}
	return set
}

// useSample points the trigger at the embedded server's sample account.
// It returns the account settings the trigger had, which are now ignored.
func (s *triggerSetup) useSample(connection, key string) (ignored []string) {
	ignored = s.accountSettings()
	for _, p := range accountParams {
		delete(s.config.AuthParams, p)
		delete(s.config.TriggerMetadata, p)
	}
	s.config.ResolvedEnv = map[string]string{}
	s.config.PodIdentity = kedav1alpha1.AuthPodIdentity{}
	s.config.AuthParams["connection"] = connection
	s.secrets.Add(connection, key)
	return ignored
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func derefOr(p *int32, fallback int32) int32 {
	if p == nil {
		return fallback
	}
	return *p
}

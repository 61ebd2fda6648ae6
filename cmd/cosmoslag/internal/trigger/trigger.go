// Package trigger loads an azure-cosmosdb trigger from KEDA's objects (a
// ScaledObject or ScaledJob, its TriggerAuthentication, the Secrets and
// values they name) and resolves its parameters the way KEDA does, into
// the scaler config scalers.NewAzureCosmosDBScaler takes. check, tune and
// validate load their triggers through it.
package trigger

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

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

const Type = "azure-cosmosdb"

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

// Setup is everything check derived from the manifests.
type Setup struct {
	ScaledObject string // namespace/name
	Index        int
	Name         string
	Config       *scalersconfig.ScalerConfig
	Min, Max     int32
	Cooldown     time.Duration
	// ScaleDownWindow is the HPA's scale-down stabilization window: the
	// ScaledObject's advanced.horizontalPodAutoscalerConfig.behavior, or
	// the HPA's default.
	ScaleDownWindow time.Duration
	Secrets         *redact.Secrets // values to redact from every output
	Notes           []string        // warnings for stderr
	// Warnings are the scaler's own warnings on the trigger's metadata as
	// written in the manifest (unknown keys, with the nearest known name,
	// and secrets in plain metadata): key names only, never a value.
	Warnings []string
	// Unknown are the trigger's metadata keys and its TriggerAuthentication's
	// parameters that are no azure-cosmosdb parameter, each with the nearest
	// known name (validate reports them as errors; check warns of the
	// metadata keys). Key names only.
	Unknown []string
	// Unresolved (SetupTriggerAll only) are the values that could not be
	// resolved locally (a Secret key, an environment variable, a missing
	// TriggerAuthentication); those parameters are left unset.
	Unresolved []string
	// UnresolvedParams are the parameters Unresolved left unset.
	UnresolvedParams []string
	// authRefParams (check --emulator) are the parameters the
	// TriggerAuthentication supplies, left unresolved.
	authRefParams []string
	// collect: record what cannot be resolved instead of failing.
	collect bool
	// metadataKeys are the trigger's metadata as written in the manifest.
	metadataKeys map[string]string
}

// unresolved records a value that cannot be resolved (with collect) or
// returns it as the error.
func (s *Setup) unresolved(param string, err error) error {
	if !s.collect {
		return err
	}
	s.Unresolved = append(s.Unresolved, err.Error())
	s.UnresolvedParams = append(s.UnresolvedParams, param)
	return nil
}

// Scalable is a ScaledObject or a ScaledJob, as far as its triggers go.
type Scalable struct {
	Kind, Name, Namespace string
	Triggers              []kedav1alpha1.ScaleTriggers
	object                runtime.Object
	so                    *kedav1alpha1.ScaledObject // nil for a ScaledJob
}

func ScaledObjectTarget(so *kedav1alpha1.ScaledObject) Scalable {
	return Scalable{Kind: "ScaledObject", Name: so.Name, Namespace: cli.Or(so.Namespace, "default"), Triggers: so.Spec.Triggers, object: so, so: so}
}

func ScaledJobTarget(sj *kedav1alpha1.ScaledJob) Scalable {
	return Scalable{Kind: "ScaledJob", Name: sj.Name, Namespace: cli.Or(sj.Namespace, "default"), Triggers: sj.Spec.Triggers, object: sj}
}

// buildTrigger selects the ScaledObject's azure-cosmosdb trigger and
// resolves its parameters the way KEDA would, from local values instead of
// the cluster. With sample (check --emulator), account parameters need not resolve.
func buildTrigger(m *Manifests, selector string, set map[string]string, values *LocalValues, sample bool) (*Setup, error) {
	if len(m.ScaledObjects) == 0 && len(m.ScaledJobs) > 0 {
		var names []string
		for _, sj := range m.ScaledJobs {
			names = append(names, sj.Name)
		}
		return nil, fmt.Errorf("-f holds ScaledJob %s: check estimates the trigger of a ScaledObject and models its HPA; a ScaledJob has no HPA (its trigger parameters are the same: copy them into a ScaledObject to check them, or run cosmoslag validate)", strings.Join(names, ", "))
	}
	if len(m.ScaledObjects) != 1 {
		return nil, fmt.Errorf("-f must hold exactly one keda.sh ScaledObject, found %d", len(m.ScaledObjects))
	}
	target := ScaledObjectTarget(&m.ScaledObjects[0])
	index, err := selectTrigger(target, selector)
	if err != nil {
		return nil, err
	}
	return SetupTrigger(m, target, index, set, values, sample)
}

// SetupTrigger resolves the parameters of trigger index of target the way
// KEDA would, from local values instead of the cluster (check and tune). It
// stops at the first value it cannot resolve.
func SetupTrigger(m *Manifests, target Scalable, index int, set map[string]string, values *LocalValues, sample bool) (*Setup, error) {
	return setupTrigger(m, target, index, set, values, sample, false)
}

// SetupTriggerAll resolves as SetupTrigger does, but a value it cannot
// resolve is recorded in Unresolved and its parameter left unset, so that
// the scaler's constructor still checks everything else (validate).
func SetupTriggerAll(m *Manifests, target Scalable, index int, set map[string]string, values *LocalValues) *Setup {
	s, _ := setupTrigger(m, target, index, set, values, false, true)
	return s
}

func setupTrigger(m *Manifests, target Scalable, index int, set map[string]string, values *LocalValues, sample, collect bool) (*Setup, error) {
	trigger := target.Triggers[index]
	s := &Setup{
		ScaledObject: target.Namespace + "/" + target.Name,
		Index:        index,
		Name:         trigger.Name,
		Min:          hpamodel.DefaultMinReplicas,
		Max:          hpamodel.DefaultMaxReplicas,
		Cooldown:     hpamodel.DefaultCooldown,
		Secrets:      values.Secrets.Clone(),
		Notes:        slices.Clone(m.Notes),
	}
	s.ScaleDownWindow = hpamodel.DefaultScaleDownWindow
	if target.so != nil {
		s.readScaledObject(target.so)
	}
	cfg := newScalerConfig(target, index)
	s.Config = cfg
	// From the manifest's metadata, before --set adds parameters to it
	// (a credential given with --set is not in plain metadata).
	s.Warnings = scalers.AzureCosmosDBWarnings(trigger.Metadata)
	s.Warnings = append(s.Warnings, unknownSetWarnings(m, set, s.Warnings)...)
	for i, w := range s.Warnings {
		s.Warnings[i] = withSuggestion(w)
	}
	s.Unknown = unknownMetadataKeys(trigger.Metadata)
	s.collect, s.metadataKeys = collect, trigger.Metadata

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
		if err := s.resolveEnv(m, values, overridden); err != nil {
			return nil, err
		}
	}
	maps.Copy(cfg.AuthParams, overridden)
	for _, p := range secretParams {
		s.Secrets.Add(cfg.AuthParams[p], cfg.TriggerMetadata[p])
	}
	for _, v := range cfg.ResolvedEnv {
		s.Secrets.Add(v)
	}
	return s, nil
}

// unknownSetWarnings gives a --set key that is neither a trigger parameter
// nor a key the manifests reference (a Secret, ConfigMap or environment
// variable of a TriggerAuthentication, a ...FromEnv variable) the
// scaler's unknown-key warning, as the key would draw in the trigger's
// metadata; keys already warned of are not repeated. Key names only.
func unknownSetWarnings(m *Manifests, set map[string]string, warned []string) []string {
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
func (m *Manifests) referencedKeys() map[string]bool {
	keys := map[string]bool{}
	for _, a := range m.auths {
		for _, r := range authRefs(&a.spec) {
			keys[r.key] = true
		}
	}
	var triggers []kedav1alpha1.ScaleTriggers
	for _, so := range m.ScaledObjects {
		triggers = append(triggers, so.Spec.Triggers...)
	}
	for _, sj := range m.ScaledJobs {
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
func (s *Setup) readScaledObject(so *kedav1alpha1.ScaledObject) {
	s.Min = derefOr(so.Spec.MinReplicaCount, hpamodel.DefaultMinReplicas)
	s.Max = derefOr(so.Spec.MaxReplicaCount, hpamodel.DefaultMaxReplicas)
	s.Cooldown = time.Duration(derefOr(so.Spec.CooldownPeriod, int32(hpamodel.DefaultCooldown/time.Second))) * time.Second
	if a := so.Spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil && a.HorizontalPodAutoscalerConfig.Behavior != nil &&
		a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown != nil && a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds != nil {
		s.ScaleDownWindow = time.Duration(*a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds) * time.Second
	}
	if so.Spec.IdleReplicaCount != nil {
		s.Notes = append(s.Notes, "idleReplicaCount is not modelled: replicas are computed as if it were unset")
	}
}

// newScalerConfig is KEDA's scaler config of trigger index of target,
// before its parameters are resolved.
func newScalerConfig(target Scalable, index int) *scalersconfig.ScalerConfig {
	trigger := target.Triggers[index]
	metricType := trigger.MetricType
	if metricType == "" {
		metricType = v2.AverageValueMetricType
	}
	cfg := &scalersconfig.ScalerConfig{
		ScalableObjectName:      target.Name,
		ScalableObjectNamespace: target.Namespace,
		ScalableObjectType:      target.Kind,
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

func selectTrigger(target Scalable, selector string) (int, error) {
	var candidates []string
	var indexes []int
	for i, t := range target.Triggers {
		if t.Type == Type {
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
			if strconv.Itoa(i) == selector || target.Triggers[i].Name == selector {
				return i, nil
			}
		}
		return 0, fmt.Errorf("--trigger %q: %s %s has no azure-cosmosdb trigger with that index or name (azure-cosmosdb triggers: %s)",
			excerpt.Of(selector), target.Kind, target.Name, cli.Or(strings.Join(candidates, ", "), "none"))
	}
	switch len(indexes) {
	case 0:
		return 0, fmt.Errorf("%s %s has no trigger of type %s", target.Kind, target.Name, Type)
	case 1:
		return indexes[0], nil
	}
	return 0, fmt.Errorf("%s %s has %d azure-cosmosdb triggers; choose one with --trigger N (index in spec.triggers): %s",
		target.Kind, target.Name, len(indexes), strings.Join(candidates, ", "))
}

// resolveAuth fills AuthParams and PodIdentity from the referenced
// TriggerAuthentication, with secret, config map and environment values
// taken from the local values.
func (s *Setup) resolveAuth(m *Manifests, ref *kedav1alpha1.AuthenticationRef, values *LocalValues, overridden map[string]string, sample bool) error {
	if ref == nil {
		if len(m.auths) > 0 {
			s.Notes = append(s.Notes, "the trigger has no authenticationRef, so KEDA would not use the TriggerAuthentication given; it is ignored")
		}
		return nil
	}
	kind := cli.Or(ref.Kind, "TriggerAuthentication")
	namespace := s.Config.ScalableObjectNamespace
	auth, notFound := findAuth(m, kind, ref.Name, namespace)
	// KEDA reads a ClusterTriggerAuthentication's Secrets in its own
	// namespace, KEDA_CLUSTER_OBJECT_NAMESPACE ("keda" by default).
	secretNamespace := namespace
	if kind == "ClusterTriggerAuthentication" {
		secretNamespace = cli.Or(os.Getenv("KEDA_CLUSTER_OBJECT_NAMESPACE"), "keda")
	}
	if auth == nil {
		if sample {
			return nil
		}
		return s.withoutAuth(kind, ref.Name, notFound, overridden)
	}
	spec := auth.spec
	s.Unknown = append(s.Unknown, unknownAuthParams(kind, ref.Name, &spec)...)
	if spec.PodIdentity != nil {
		s.Config.PodIdentity = *spec.PodIdentity
	}
	s.noteUnreadSources(kind, ref.Name, &spec)
	refs := winningAuthRefs(&spec)
	if sample {
		// Not resolved: --emulator replaces them. Recorded for its banner.
		for _, r := range refs {
			s.authRefParams = append(s.authRefParams, r.param)
		}
		return nil
	}
	if m.Cluster != nil {
		// Resolved from the cluster in KEDA's order (ReadCluster).
		for p, v := range m.Cluster.AuthParams {
			if _, ok := overridden[p]; !ok {
				s.Config.AuthParams[p] = v
			}
		}
		return nil
	}
	for _, r := range refs {
		if _, ok := overridden[r.param]; ok {
			continue
		}
		if s.collect && !slices.Contains(knownParams, r.param) {
			continue // reported in Unknown; the scaler never reads it
		}
		v, err := lookupAuthRef(m, values, kind, ref.Name, secretNamespace, r)
		if err != nil {
			if err := s.unresolved(r.param, err); err != nil {
				return err
			}
			continue
		}
		s.Config.AuthParams[r.param] = v
		if r.what == "secret" {
			s.Secrets.Add(v)
		}
	}
	return nil
}

// findAuth finds the kind named name that KEDA would use for a
// ScaledObject in namespace; when it is not found, notFound says where
// same-named ones are that KEDA would not find ("" when none).
func findAuth(m *Manifests, kind, name, namespace string) (auth *namedAuth, notFound string) {
	var elsewhere []string // namespaces of same-named TriggerAuthentications KEDA would not find
	for i := range m.auths {
		a := &m.auths[i]
		if a.Kind != kind || a.name != name {
			continue
		}
		if kind == "TriggerAuthentication" && a.Namespace != "" && a.Namespace != namespace {
			elsewhere = append(elsewhere, a.Namespace)
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
func (s *Setup) withoutAuth(kind, name, notFound string, overridden map[string]string) error {
	var given []string
	for _, p := range accountParams {
		if _, ok := overridden[p]; ok {
			given = append(given, p)
		}
	}
	if len(given) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s was not given (--auth)%s; the account parameters come from --set: %s",
			kind, name, notFound, strings.Join(given, ", ")))
		return nil
	}
	return s.unresolved("authenticationRef", fmt.Errorf("the trigger uses %s %q%s: pass a file holding it with --auth, or give its parameters with --set (e.g. --set connection=…)", kind, excerpt.Of(name), notFound))
}

// noteUnreadSources notes each of the TriggerAuthentication's sources that
// cannot be read from here.
func (s *Setup) noteUnreadSources(kind, name string, spec *kedav1alpha1.TriggerAuthenticationSpec) {
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
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: %s cannot be read from here and is ignored; supply its parameters with --set", kind, name, src.name))
		}
	}
}

// authRef is one parameter a TriggerAuthentication takes from a secret, a
// config map or an environment variable (name is "" for the last, and
// container the env entry's containerName).
type authRef struct{ what, name, key, param, container string }

// authRefs lists the TriggerAuthentication's environment, config map and
// secret references in the order KEDA's resolver (resolveAuthRef in
// pkg/scaling/resolver) assigns them: env, then configMapTargetRef, then
// secretTargetRef, each in its list's order.
func authRefs(spec *kedav1alpha1.TriggerAuthenticationSpec) []authRef {
	var refs []authRef
	for _, r := range spec.Env {
		refs = append(refs, authRef{"environment variable", "", r.Name, r.Parameter, r.ContainerName})
	}
	for _, r := range spec.ConfigMapTargetRef {
		refs = append(refs, authRef{"configMap", r.Name, r.Key, r.Parameter, ""})
	}
	for _, r := range spec.SecretTargetRef {
		refs = append(refs, authRef{"secret", r.Name, r.Key, r.Parameter, ""})
	}
	return refs
}

// winningAuthRefs is the reference whose value each parameter ends with:
// KEDA assigns them in authRefs' order into one map, so the last one for a
// parameter wins (a secretTargetRef over a configMapTargetRef over an env).
// The ones it overwrites are left out: what they hold, or whether they can
// be read, changes nothing KEDA passes to the scaler.
func winningAuthRefs(spec *kedav1alpha1.TriggerAuthenticationSpec) []authRef {
	refs := authRefs(spec)
	last := map[string]int{}
	for i, r := range refs {
		last[r.param] = i
	}
	var winners []authRef
	for i, r := range refs {
		if last[r.param] == i {
			winners = append(winners, r)
		}
	}
	return winners
}

// lookupAuthRef is the local value of one reference of TriggerAuthentication
// kind name: --set first; for a secret, a Secret document of that name in
// the namespace KEDA reads decides; then --env-file and the environment.
func lookupAuthRef(m *Manifests, values *LocalValues, kind, name, secretNamespace string, r authRef) (string, error) {
	v, ok := values.Set[r.key]
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
		secretOption = fmt.Sprintf(", or a Secret document (namespace %s) with -f", secretNamespace)
	}
	if !ok {
		v, ok = values.lookup(r.key)
	}
	if !ok {
		where := fmt.Sprintf("%s %q", r.what, r.key)
		if r.name != "" {
			where = fmt.Sprintf("%s %q key %q", r.what, r.name, r.key)
		}
		return "", fmt.Errorf("%s %s: parameter %s comes from %s, which has no local value%s: add %s=… to an --env-file or the environment, pass --set %s=…%s",
			kind, name, r.param, where, elsewhere, r.key, r.key, secretOption)
	}
	return v, nil
}

// resolveEnv fills ResolvedEnv, the scale target's environment, for every
// ...FromEnv parameter of the trigger.
func (s *Setup) resolveEnv(m *Manifests, values *LocalValues, overridden map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(s.Config.TriggerMetadata)) {
		name := s.Config.TriggerMetadata[k]
		if !strings.HasSuffix(k, "FromEnv") || name == "" {
			continue
		}
		if _, ok := overridden[strings.TrimSuffix(k, "FromEnv")]; ok {
			continue
		}
		if m != nil && m.Cluster != nil {
			v, ok := values.Set[name]
			if !ok {
				v, ok = m.Cluster.Env[name]
			}
			if !ok {
				return fmt.Errorf("trigger parameter %s names the environment variable %s, which %s does not set", k, name, m.Cluster.Target)
			}
			s.Config.ResolvedEnv[name] = v
			continue
		}
		v, ok := values.lookup(name)
		if !ok {
			if err := s.unresolved(k, fmt.Errorf("trigger parameter %s names the environment variable %s, which has no local value: set it in the environment, in an --env-file or with --set %s=…", k, name, name)); err != nil {
				return err
			}
			continue
		}
		s.Config.ResolvedEnv[name] = v
	}
	return nil
}

// accountSettings lists the trigger's account settings (parameters from the
// metadata, --set or the TriggerAuthentication, and its podIdentity).
func (s *Setup) accountSettings() []string {
	var set []string
	for _, p := range accountParams {
		if s.Config.AuthParams[p] != "" || s.Config.TriggerMetadata[p] != "" || slices.Contains(s.authRefParams, p) {
			set = append(set, p)
		}
	}
	if s.Config.PodIdentity.Provider != "" {
		set = append(set, "podIdentity")
	}
	return set
}

// useSample points the trigger at the embedded server's sample account.
// It returns the account settings the trigger had, which are now ignored.
func (s *Setup) useSample(connection, key string) (ignored []string) {
	ignored = s.accountSettings()
	for _, p := range accountParams {
		delete(s.Config.AuthParams, p)
		delete(s.Config.TriggerMetadata, p)
	}
	s.Config.ResolvedEnv = map[string]string{}
	s.Config.PodIdentity = kedav1alpha1.AuthPodIdentity{}
	s.Config.AuthParams["connection"] = connection
	s.Secrets.Add(connection, key)
	return ignored
}

func derefOr(p *int32, fallback int32) int32 {
	if p == nil {
		return fallback
	}
	return *p
}

package trigger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// KEDA's resources, read with the dynamic client.
var (
	ScaledObjectsResource                 = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	TriggerAuthenticationsResource        = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "triggerauthentications"}
	ClusterTriggerAuthenticationsResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "clustertriggerauthentications"}
)

// Cluster reads a ScaledObject and what its trigger takes from the cluster,
// read-only: get on scaledobjects, (cluster)triggerauthentications, the
// scale target, and the Secrets and ConfigMaps they name.
type Cluster struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// ClusterValues are what KEDA's resolver makes of the cluster for one
// trigger: the TriggerAuthentication's parameters (env, then configMap,
// then secret references, later ones winning, in the namespace KEDA reads
// them in) and the scale target container's environment, for the
// trigger's ...FromEnv parameters.
type ClusterValues struct {
	AuthParams map[string]string
	Env        map[string]string
	// Target names the scale target and its container, for errors.
	Target string
}

// clusterRead is one read's state: the objects read, for errors that name
// them, and the values of every Secret read, for redaction.
type clusterRead struct {
	c               *Cluster
	ctx             context.Context
	secrets         *redact.Secrets
	targetNamespace string // the ScaledObject's
}

// ReadCluster reads ScaledObject namespace/name, the (Cluster)Trigger-
// Authentication of its azure-cosmosdb trigger (selector as --trigger),
// the Secrets, ConfigMaps and scale target they name, and resolves them
// as KEDA does. A missing object or a refused read is an error naming the
// object. The ScaledObject is returned too, for its status.
func (c *Cluster) ReadCluster(ctx context.Context, namespace, name, selector string) (*Manifests, *LocalValues, *kedav1alpha1.ScaledObject, error) {
	r := &clusterRead{c: c, ctx: ctx, secrets: &redact.Secrets{}}
	so := &kedav1alpha1.ScaledObject{}
	if err := r.getCustom(ScaledObjectsResource, namespace, name, "ScaledObject", so); err != nil {
		return nil, nil, nil, err
	}
	m := &Manifests{ScaledObjects: []kedav1alpha1.ScaledObject{*so}}
	target := ScaledObjectTarget(so)
	index, err := selectTrigger(target, selector)
	if err != nil {
		return nil, nil, nil, err
	}
	values := newLocalValues()
	values.noProcessEnv = true
	cv := &ClusterValues{AuthParams: map[string]string{}}
	podSpec, targetName, err := r.podSpec(so)
	if err != nil {
		return nil, nil, nil, err
	}
	cv.Target = targetName
	trig := so.Spec.Triggers[index]
	if ref := trig.AuthenticationRef; ref != nil {
		auth, secretNamespace, err := r.auth(ref, namespace)
		if err != nil {
			return nil, nil, nil, err
		}
		m.auths = append(m.auths, *auth)
		if err := r.resolveAuth(auth, secretNamespace, podSpec, targetName, cv); err != nil {
			return nil, nil, nil, err
		}
	}
	// KEDA resolves the scale target's environment before each trigger
	// (ResolveContainerEnv in buildScalers), whether the trigger reads it
	// or not, and fails the trigger when it cannot.
	if podSpec != nil {
		container, err := pickContainer(podSpec, so.Spec.ScaleTargetRef.EnvSourceContainerName, targetName)
		if err != nil {
			return nil, nil, nil, err
		}
		cv.Target = fmt.Sprintf("container %s of %s", container.Name, targetName)
		if cv.Env, err = r.containerEnv(container, namespace); err != nil {
			return nil, nil, nil, fmt.Errorf("%s (KEDA resolves its environment for every trigger and fails the trigger when it cannot): %w", cv.Target, err)
		}
	} else if needsEnv(trig.Metadata) {
		return nil, nil, nil, fmt.Errorf("the trigger takes parameters from the environment (...FromEnv), and %s has no containers", targetName)
	}
	m.Cluster = cv
	values.Secrets = r.secrets
	return m, values, so, nil
}

// needsEnv reports whether a trigger's metadata names environment
// variables (its ...FromEnv parameters).
func needsEnv(metadata map[string]string) bool {
	for k, v := range metadata {
		if strings.HasSuffix(k, "FromEnv") && v != "" {
			return true
		}
	}
	return false
}

// readError says which object could not be read, and why, in a line.
func readError(kind, namespace, name string, err error) error {
	object := kind + " " + name
	if namespace != "" {
		object = kind + " " + namespace + "/" + name
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found", object)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("reading %s is forbidden: the Role cosmoslag check runs with must allow get on it (see the README's Role)", object)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("reading %s: the cluster refused the credentials of the kubeconfig (unauthorized)", object)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("reading %s: %s", object, status.Status().Message)
	}
	return fmt.Errorf("reading %s: %w", object, err)
}

// getCustom reads one of KEDA's objects into out.
func (r *clusterRead) getCustom(resource schema.GroupVersionResource, namespace, name, kind string, out any) error {
	var get dynamic.ResourceInterface = r.c.Dynamic.Resource(resource)
	if namespace != "" {
		get = r.c.Dynamic.Resource(resource).Namespace(namespace)
	}
	u, err := get.Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return readError(kind, namespace, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return nil
}

// auth reads the TriggerAuthentication (in the ScaledObject's namespace)
// or ClusterTriggerAuthentication ref names, and the namespace KEDA reads
// its Secrets and ConfigMaps in.
func (r *clusterRead) auth(ref *kedav1alpha1.AuthenticationRef, namespace string) (*namedAuth, string, error) {
	kind := cli.Or(ref.Kind, "TriggerAuthentication")
	ta := &kedav1alpha1.TriggerAuthentication{}
	switch kind {
	case "TriggerAuthentication":
		if err := r.getCustom(TriggerAuthenticationsResource, namespace, ref.Name, kind, ta); err != nil {
			return nil, "", err
		}
	case "ClusterTriggerAuthentication":
		if err := r.getCustom(ClusterTriggerAuthenticationsResource, "", ref.Name, kind, ta); err != nil {
			return nil, "", err
		}
		namespace = cli.Or(os.Getenv("KEDA_CLUSTER_OBJECT_NAMESPACE"), "keda")
	default:
		return nil, "", fmt.Errorf("authenticationRef kind %q is not TriggerAuthentication or ClusterTriggerAuthentication", ref.Kind)
	}
	return &namedAuth{Kind: kind, name: ta.Name, Namespace: ta.Namespace, spec: ta.Spec}, namespace, nil
}

// resolveAuth resolves the TriggerAuthentication's references in KEDA's
// order (winningAuthRefs): env (each from its containerName, or the first
// container), then configMapTargetRef, then secretTargetRef, a later one
// winning. Only the winning reference of each parameter is read.
func (r *clusterRead) resolveAuth(auth *namedAuth, namespace string, podSpec *corev1.PodSpec, targetName string, cv *ClusterValues) error {
	for _, ref := range winningAuthRefs(&auth.spec) {
		switch ref.what {
		case "environment variable":
			if podSpec == nil {
				return fmt.Errorf("%s %s: parameter %s comes from environment variable %s, and %s has no containers", auth.Kind, auth.name, ref.param, ref.key, targetName)
			}
			container, err := pickContainer(podSpec, ref.container, targetName)
			if err != nil {
				return fmt.Errorf("%s %s: parameter %s: %w", auth.Kind, auth.name, ref.param, err)
			}
			env, err := r.containerEnv(container, r.scaledNamespace(auth, namespace))
			if err != nil {
				return err
			}
			v, ok := env[ref.key]
			if !ok {
				return fmt.Errorf("%s %s: parameter %s comes from environment variable %s, which container %s of %s does not set", auth.Kind, auth.name, ref.param, ref.key, container.Name, targetName)
			}
			cv.AuthParams[ref.param] = v
		case "configMap":
			cm, err := r.c.Kube.CoreV1().ConfigMaps(namespace).Get(r.ctx, ref.name, metav1.GetOptions{})
			if err != nil {
				return readError("ConfigMap", namespace, ref.name, err)
			}
			v, ok := cm.Data[ref.key]
			if !ok {
				return fmt.Errorf("%s %s: parameter %s comes from ConfigMap %s/%s, which has no key %q", auth.Kind, auth.name, ref.param, namespace, ref.name, ref.key)
			}
			cv.AuthParams[ref.param] = v
		case "secret":
			sec, err := r.secret(namespace, ref.name)
			if err != nil {
				return readError("Secret", namespace, ref.name, err)
			}
			v, ok := sec.Data[ref.key]
			if !ok {
				return fmt.Errorf("%s %s: parameter %s comes from Secret %s/%s, which has no key %q", auth.Kind, auth.name, ref.param, namespace, ref.name, ref.key)
			}
			cv.AuthParams[ref.param] = string(v)
		}
	}
	return nil
}

// scaledNamespace is the namespace of the scale target's containers: the
// ScaledObject's, whatever the kind of the authentication.
func (r *clusterRead) scaledNamespace(auth *namedAuth, namespace string) string {
	if auth.Kind == "ClusterTriggerAuthentication" {
		return r.targetNamespace
	}
	return namespace
}

// secret reads a Secret and records its values for redaction; an error
// is the API's (readError names the Secret).
func (r *clusterRead) secret(namespace, name string) (*corev1.Secret, error) {
	sec, err := r.c.Kube.CoreV1().Secrets(namespace).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, v := range sec.Data {
		r.secrets.Add(string(v))
	}
	return sec, nil
}

// podSpec reads the ScaledObject's scale target and returns its pod
// template's spec (nil when it has no containers) and its name: a
// Deployment or StatefulSet with the typed client, another kind through
// the dynamic client, read as a duck type with spec.template.
func (r *clusterRead) podSpec(so *kedav1alpha1.ScaledObject) (*corev1.PodSpec, string, error) {
	ref := so.Spec.ScaleTargetRef
	if ref == nil {
		return nil, "", fmt.Errorf("ScaledObject %s/%s has no scaleTargetRef", so.Namespace, so.Name)
	}
	r.targetNamespace = so.Namespace
	gv, err := schema.ParseGroupVersion(cli.Or(ref.APIVersion, "apps/v1"))
	if err != nil {
		return nil, "", fmt.Errorf("ScaledObject %s/%s: scaleTargetRef.apiVersion: %w", so.Namespace, so.Name, err)
	}
	kind := cli.Or(ref.Kind, "Deployment")
	name := fmt.Sprintf("%s %s/%s", kind, so.Namespace, ref.Name)
	var spec corev1.PodSpec
	switch {
	case gv.Group == "apps" && kind == "Deployment":
		d, err := r.c.Kube.AppsV1().Deployments(so.Namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", readError(kind, so.Namespace, ref.Name, err)
		}
		spec = d.Spec.Template.Spec
	case gv.Group == "apps" && kind == "StatefulSet":
		s, err := r.c.Kube.AppsV1().StatefulSets(so.Namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", readError(kind, so.Namespace, ref.Name, err)
		}
		spec = s.Spec.Template.Spec
	default:
		resource := schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: strings.ToLower(kind) + "s"}
		var withPods struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := r.getCustom(resource, so.Namespace, ref.Name, kind, &withPods); err != nil {
			return nil, "", err
		}
		spec = withPods.Spec.Template.Spec
	}
	if len(spec.Containers) == 0 {
		return nil, name, nil
	}
	return &spec, name, nil
}

// pickContainer is the container named name, or the first when name is "".
func pickContainer(spec *corev1.PodSpec, name, targetName string) (*corev1.Container, error) {
	if name == "" {
		return &spec.Containers[0], nil
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("%s has no container %q", targetName, name)
}

// containerEnv resolves a container's environment as KEDA does: envFrom
// (ConfigMaps and Secrets, with their prefix) first, then env, whose
// values may refer to earlier ones as $(NAME); fieldRef and
// resourceFieldRef values are skipped, as KEDA skips them.
func (r *clusterRead) containerEnv(c *corev1.Container, namespace string) (map[string]string, error) {
	env := map[string]string{}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			cm, err := r.c.Kube.CoreV1().ConfigMaps(namespace).Get(r.ctx, src.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if isOptional(src.ConfigMapRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, readError("ConfigMap", namespace, src.ConfigMapRef.Name, err)
			}
			for k, v := range cm.Data {
				env[src.Prefix+k] = v
			}
		case src.SecretRef != nil:
			sec, err := r.secret(namespace, src.SecretRef.Name)
			if err != nil {
				if isOptional(src.SecretRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, readError("Secret", namespace, src.SecretRef.Name, err)
			}
			for k, v := range sec.Data {
				env[src.Prefix+k] = string(v)
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandEnv(e.Value, env)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			sec, err := r.secret(namespace, ref.Name)
			if err != nil {
				if isOptional(ref.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, readError("Secret", namespace, ref.Name, err)
			}
			env[e.Name] = string(sec.Data[ref.Key])
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := r.c.Kube.CoreV1().ConfigMaps(namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				if isOptional(ref.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return nil, readError("ConfigMap", namespace, ref.Name, err)
			}
			env[e.Name] = cm.Data[ref.Key]
		}
	}
	return env, nil
}

func isOptional(optional *bool) bool { return optional != nil && *optional }

// expandEnv expands $(NAME) in an env value from the variables defined
// before it as KEDA's resolver does (resolveEnvValue in
// pkg/scaling/resolver, v2.21.0), which is close to the kubelet's rule but
// not the same: $$ is a literal $ and a reference to an unknown variable
// is left as written, but a $ with fewer than three characters after it is
// taken as written ("a$$" stays "a$$"), and after an unclosed "$(" the
// rest is still scanned.
func expandEnv(value string, env map[string]string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(value); cursor++ {
		if value[cursor] != '$' || cursor+3 >= len(value) {
			continue
		}
		b.WriteString(value[checkpoint:cursor])
		content, length := "$"+string(value[cursor+1]), 1
		switch value[cursor+1] {
		case '$':
			content = "$"
		case '(':
			content = "$("
			if end := strings.IndexByte(value[cursor+2:], ')'); end >= 0 {
				name := value[cursor+2 : cursor+2+end]
				content = "$(" + name + ")"
				if v, ok := env[name]; ok {
					content = v
				}
				length = end + 2
			}
		}
		b.WriteString(content)
		cursor += length
		checkpoint = cursor + 1
	}
	return b.String() + value[checkpoint:]
}

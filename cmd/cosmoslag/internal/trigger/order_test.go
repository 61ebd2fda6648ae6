package trigger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// A TriggerAuthentication that names three parameters more than once, and
// one env entry whose variable no container (and no local value) sets.
// KEDA v2.21.0's resolveAuthRef assigns env, then configMapTargetRef, then
// secretTargetRef into one map, so the secret wins over the env, the
// config map over the env, and an env entry overwritten later is never
// needed.
var orderAuth = kedav1alpha1.TriggerAuthenticationSpec{
	Env: []kedav1alpha1.AuthEnvironment{
		{Parameter: "connection", Name: "CONN"},
		{Parameter: "endpoint", Name: "ENDPOINT"},
		{Parameter: "cosmosDBKey", Name: "COSMOSLAG_ORDER_TEST_UNSET"},
		{Parameter: "cloud", Name: "CLOUD"},
	},
	ConfigMapTargetRef: []kedav1alpha1.AuthConfigMapTargetRef{{Parameter: "endpoint", Name: "settings", Key: "endpoint"}},
	SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{
		{Parameter: "connection", Name: "keys", Key: "connection"},
		{Parameter: "cosmosDBKey", Name: "keys", Key: "primary"},
	},
}

var orderWant = map[string]string{
	"connection":  "secret-connection",  // secretTargetRef over env
	"endpoint":    "configmap-endpoint", // configMapTargetRef over env
	"cosmosDBKey": "secret-key",         // secretTargetRef; the env entry it overwrites is not read
	"cloud":       "AzurePublicCloud",   // env only
}

func orderScaledObject() *kedav1alpha1.ScaledObject {
	return &kedav1alpha1.ScaledObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef: &kedav1alpha1.ScaleTarget{Name: "orders"},
			Triggers: []kedav1alpha1.ScaleTriggers{{Type: Type, Metadata: map[string]string{"databaseId": "shop"},
				AuthenticationRef: &kedav1alpha1.AuthenticationRef{Name: "auth"}}},
		},
	}
}

// Both forms of check (the files and the cluster) resolve a
// TriggerAuthentication in KEDA's order, and agree.
func TestBothFormsResolveAuthenticationInKEDAsOrder(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		var docs []byte
		for _, obj := range []any{
			orderScaledObject(),
			&kedav1alpha1.TriggerAuthentication{TypeMeta: metav1.TypeMeta{APIVersion: "keda.sh/v1alpha1", Kind: "TriggerAuthentication"},
				ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "shop"}, Spec: orderAuth},
			&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "shop"},
				StringData: map[string]string{"connection": "secret-connection", "primary": "secret-key"}},
		} {
			b, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(append(docs, b...), "---\n"...)
		}
		files := filepath.Join(dir, "all.yaml")
		envFile := filepath.Join(dir, "values.env")
		if err := os.WriteFile(files, docs, 0o600); err != nil {
			t.Fatal(err)
		}
		// The local values stand in for the container's environment and the
		// ConfigMap's key.
		if err := os.WriteFile(envFile, []byte("CONN=env-connection\nENDPOINT=env-endpoint\nendpoint=configmap-endpoint\nCLOUD=AzurePublicCloud\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m, values, err := ReadInputs([]string{envFile}, map[string]string{}, []string{files})
		if err != nil {
			t.Fatal(err)
		}
		setup, err := buildTrigger(m, "", values.Set, values, false)
		if err != nil {
			t.Fatal(err)
		}
		assertParams(t, setup.Config.AuthParams)
	})

	t.Run("cluster", func(t *testing.T) {
		so := orderScaledObject()
		ta := &kedav1alpha1.TriggerAuthentication{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "shop"}, Spec: orderAuth}
		kube := kubefake.NewSimpleClientset(
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "processor", Env: []corev1.EnvVar{
					{Name: "CONN", Value: "env-connection"}, {Name: "ENDPOINT", Value: "env-endpoint"}, {Name: "CLOUD", Value: "AzurePublicCloud"}}}}}}}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"endpoint": "configmap-endpoint"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "shop"}, Data: map[string][]byte{"connection": []byte("secret-connection"), "primary": []byte("secret-key")}})
		m, values, _, err := (&Cluster{Kube: kube, Dynamic: fakeKEDA(t, so, ta)}).ReadCluster(context.Background(), "shop", "orders", "")
		if err != nil {
			t.Fatal(err)
		}
		values.Set = map[string]string{}
		setup, err := buildTrigger(m, "", values.Set, values, false)
		if err != nil {
			t.Fatal(err)
		}
		assertParams(t, setup.Config.AuthParams)
	})
}

func assertParams(t *testing.T, got map[string]string) {
	t.Helper()
	for param, want := range orderWant {
		if got[param] != want {
			t.Errorf("%s = %q, want %q (KEDA's order: env, configMapTargetRef, secretTargetRef, the last one winning)", param, got[param], want)
		}
	}
}

// fakeKEDA is a dynamic client holding KEDA's objects.
func fakeKEDA(t *testing.T, so *kedav1alpha1.ScaledObject, tas ...*kedav1alpha1.TriggerAuthentication) *dynamicfake.FakeDynamicClient {
	t.Helper()
	objects := []runtime.Object{unstructuredOf(t, so, "ScaledObject")}
	for _, ta := range tas {
		objects = append(objects, unstructuredOf(t, ta, "TriggerAuthentication"))
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ScaledObjectsResource: "ScaledObjectList", TriggerAuthenticationsResource: "TriggerAuthenticationList", ClusterTriggerAuthenticationsResource: "ClusterTriggerAuthenticationList",
	}, objects...)
}

// The scale target's env values expand $(NAME) as KEDA's resolveEnvValue
// does, which differs from the kubelet where a $ has fewer than three
// characters after it and after an unclosed "$(".
func TestExpandEnvAsKEDA(t *testing.T) {
	env := map[string]string{"A": "1"}
	for value, want := range map[string]string{
		"$(A)-$(B)": "1-$(B)",   // an unknown name is left as written
		"$$(A)":     "$(A)",     // $$ is a literal $
		"a$$":       "a$$",      // fewer than three characters after the $: as written (the kubelet: "a$")
		"x$(A)":     "x1",       // ...but a closed reference of one letter is read
		"$(x$$yz":   "$(x$yz",   // after an unclosed $( the rest is scanned: $$ is $
		"$x and $":  "$x and $", // any other $ is kept
		"":          "",
	} {
		if got := expandEnv(value, env); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", value, got, want)
		}
	}
}

// KEDA resolves the scale target's environment (envSourceContainerName,
// else the first container) before every trigger, whether or not the
// trigger reads it, and fails the trigger when a ConfigMap or Secret it
// names (not optional) is missing; check fails the same way, naming it.
func TestReadClusterResolvesTheTargetsEnvironmentAsKEDA(t *testing.T) {
	so := orderScaledObject()
	so.Spec.Triggers[0].AuthenticationRef = nil
	optional := true
	deploy := func(optional *bool) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "processor", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: optional}}}}}}}}}
	}
	_, _, _, err := (&Cluster{Kube: kubefake.NewSimpleClientset(deploy(nil)), Dynamic: fakeKEDA(t, so)}).ReadCluster(context.Background(), "shop", "orders", "")
	if want := "container processor of Deployment shop/orders (KEDA resolves its environment for every trigger and fails the trigger when it cannot): ConfigMap shop/absent not found"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, _, _, err := (&Cluster{Kube: kubefake.NewSimpleClientset(deploy(&optional)), Dynamic: fakeKEDA(t, so)}).ReadCluster(context.Background(), "shop", "orders", ""); err != nil {
		t.Errorf("an optional ConfigMap that is missing: %v", err)
	}
}

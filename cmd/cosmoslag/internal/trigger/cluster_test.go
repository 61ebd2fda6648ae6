package trigger

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

func unstructuredOf(t *testing.T, obj any, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("keda.sh/v1alpha1")
	u.SetKind(kind)
	return u
}

// ReadCluster resolves the TriggerAuthentication as KEDA's resolver does:
// env, then configMapTargetRef, then secretTargetRef, a later one winning
// for the same parameter; the container's envFrom (with its prefix), then
// env, whose $(NAME) refers to earlier variables; an env reference from
// its containerName, else the first container; the trigger's ...FromEnv
// from the scale target's envSourceContainerName. The Secrets' values are
// recorded for redaction.
func TestReadClusterResolvesInKEDAsOrder(t *testing.T) {
	so := &kedav1alpha1.ScaledObject{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef: &kedav1alpha1.ScaleTarget{Name: "orders", EnvSourceContainerName: "sidecar"},
			Triggers: []kedav1alpha1.ScaleTriggers{{Type: Type, Metadata: map[string]string{"connectionFromEnv": "COSMOS"},
				AuthenticationRef: &kedav1alpha1.AuthenticationRef{Name: "auth"}}},
		},
	}
	ta := &kedav1alpha1.TriggerAuthentication{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "shop"}, Spec: kedav1alpha1.TriggerAuthenticationSpec{
		Env: []kedav1alpha1.AuthEnvironment{{Parameter: "cosmosDBKey", Name: "KEY"}, {Parameter: "endpoint", Name: "ENDPOINT"}, {Parameter: "cloud", Name: "CLOUD", ContainerName: "sidecar"},
			{Parameter: "leaseEndpoint", Name: "ENDPOINT"}, {Parameter: "literal", Name: "LITERAL"}},
		ConfigMapTargetRef: []kedav1alpha1.AuthConfigMapTargetRef{{Parameter: "endpoint", Name: "settings", Key: "endpoint"}},
		SecretTargetRef:    []kedav1alpha1.AuthSecretTargetRef{{Parameter: "cosmosDBKey", Name: "keys", Key: "primary"}},
	}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "processor",
			EnvFrom: []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			Env: []corev1.EnvVar{
				{Name: "KEY", Value: "env-key"}, {Name: "ENDPOINT", Value: "$(APP_endpoint)"},
				{Name: "COSMOS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "connection"}}},
				{Name: "LITERAL", Value: "$$(APP_endpoint) $(UNKNOWN)"},
			}},
		{Name: "sidecar", Env: []corev1.EnvVar{{Name: "CLOUD", Value: "AzurePublicCloud"}, {Name: "COSMOS", Value: "from-the-sidecar"}}},
	}}}}}
	kube := kubefake.NewSimpleClientset(deploy,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"endpoint": "https://shop.documents.azure.com:443/"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "shop"}, Data: map[string][]byte{"primary": []byte("secret-key"), "connection": []byte("AccountEndpoint=https://x/;AccountKey=k;")}})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ScaledObjectsResource: "ScaledObjectList", TriggerAuthenticationsResource: "TriggerAuthenticationList", ClusterTriggerAuthenticationsResource: "ClusterTriggerAuthenticationList",
	}, unstructuredOf(t, so, "ScaledObject"), unstructuredOf(t, ta, "TriggerAuthentication"))

	m, values, _, err := (&Cluster{Kube: kube, Dynamic: dyn}).ReadCluster(context.Background(), "shop", "orders", "")
	if err != nil {
		t.Fatal(err)
	}
	for param, want := range map[string]string{
		"cosmosDBKey":   "secret-key",                            // secretTargetRef over env
		"endpoint":      "https://shop.documents.azure.com:443/", // configMapTargetRef over env
		"cloud":         "AzurePublicCloud",                      // env, from the container it names
		"leaseEndpoint": "https://shop.documents.azure.com:443/", // $(APP_endpoint): envFrom with its prefix
		"literal":       "$(APP_endpoint) $(UNKNOWN)",            // $$ is $, an unknown name is kept
	} {
		if got := m.Cluster.AuthParams[param]; got != want {
			t.Errorf("%s = %q, want %q", param, got, want)
		}
	}
	if got := m.Cluster.Env["COSMOS"]; got != "from-the-sidecar" {
		t.Errorf("COSMOS = %q, want the envSourceContainerName's", got)
	}
	if got := values.Secrets.Redact("key secret-key"); strings.Contains(got, "secret-key") {
		t.Errorf("a Secret's value is not redacted: %q", got)
	}
	values.Set = map[string]string{}
	setup, err := buildTrigger(m, "", values.Set, values, false)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Config.ResolvedEnv["COSMOS"] != "from-the-sidecar" || setup.Config.AuthParams["cosmosDBKey"] != "secret-key" {
		t.Errorf("resolvedEnv %v, authParams %v", setup.Config.ResolvedEnv, setup.Config.AuthParams)
	}

	// The environment the trigger names must be set there: the error names
	// the container.
	so.Spec.Triggers[0].Metadata["connectionFromEnv"] = "MISSING"
	if err := dyn.Tracker().Update(ScaledObjectsResource, unstructuredOf(t, so, "ScaledObject"), "shop"); err != nil {
		t.Fatal(err)
	}
	m, values, _, err = (&Cluster{Kube: kube, Dynamic: dyn}).ReadCluster(context.Background(), "shop", "orders", "")
	if err != nil {
		t.Fatal(err)
	}
	values.Set = map[string]string{}
	_, err = buildTrigger(m, "", values.Set, values, false)
	if want := "trigger parameter connectionFromEnv names the environment variable MISSING, which container sidecar of Deployment shop/orders does not set"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

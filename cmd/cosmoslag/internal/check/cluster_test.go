package check

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// A cluster of fake clientsets holding shop/order-projector: its
// ScaledObject (trigger 1, azure-cosmosdb, threshold 50, the account's
// connection from TriggerAuthentication cosmos-auth's env reference: the
// scale target container's COSMOS_CONNECTION, from a Secret), the
// Deployment, the Secret and KEDA's HPA.
type fakeCluster struct {
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	so   *kedav1alpha1.ScaledObject
	hpa  *autoscalingv2.HorizontalPodAutoscaler
}

func toUnstructured(t *testing.T, obj any, kind string) *unstructured.Unstructured {
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

func newFakeCluster(t *testing.T, connection string) *fakeCluster {
	t.Helper()
	threshold := "50"
	so := &kedav1alpha1.ScaledObject{
		ObjectMeta: metav1.ObjectMeta{Name: "order-projector", Namespace: "shop"},
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef: &kedav1alpha1.ScaleTarget{Name: "order-projector"},
			Triggers: []kedav1alpha1.ScaleTriggers{
				{Type: "cpu", MetricType: autoscalingv2.UtilizationMetricType, Metadata: map[string]string{"value": "60"}},
				{Type: "azure-cosmosdb", Name: "orders", Metadata: map[string]string{
					"databaseId": "shop", "containerId": "orders", "leaseDatabaseId": "shop", "leaseContainerId": "leases",
					"processorName": "order-projector", "changeFeedLagThreshold": threshold,
				}, AuthenticationRef: &kedav1alpha1.AuthenticationRef{Name: "cosmos-auth"}},
			},
		},
		Status: kedav1alpha1.ScaledObjectStatus{HpaName: "keda-hpa-order-projector", Conditions: kedav1alpha1.Conditions{
			{Type: kedav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ScaledObjectReady", Message: "ScaledObject is defined correctly and is ready for scaling"},
			{Type: kedav1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: "ScalerActive", Message: "Scaling is performed because triggers are active"},
			{Type: kedav1alpha1.ConditionFallback, Status: metav1.ConditionFalse, Reason: "NoFallbackFound", Message: "No fallbacks are active on this scaled object"},
		}},
	}
	ta := &kedav1alpha1.TriggerAuthentication{ObjectMeta: metav1.ObjectMeta{Name: "cosmos-auth", Namespace: "shop"},
		Spec: kedav1alpha1.TriggerAuthenticationSpec{Env: []kedav1alpha1.AuthEnvironment{{Parameter: "connection", Name: "COSMOS_CONNECTION"}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "order-projector", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "processor", Env: []corev1.EnvVar{{Name: "COSMOS_CONNECTION", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cosmos-secrets"}, Key: "connectionString"}}}},
		}}}}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosmos-secrets", Namespace: "shop"}, Data: map[string][]byte{"connectionString": []byte(connection)}}
	metric := resource.MustParse("3500m") // the metric, 7, over 2 replicas
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "keda-hpa-order-projector", Namespace: "shop"},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
				Metric:  autoscalingv2.MetricIdentifier{Name: "s1-azure-cosmosdb-leases-order-projector"},
				Current: autoscalingv2.MetricValueStatus{AverageValue: &metric},
			},
		}}}}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		trigger.ScaledObjectsResource: "ScaledObjectList", trigger.TriggerAuthenticationsResource: "TriggerAuthenticationList",
		trigger.ClusterTriggerAuthenticationsResource: "ClusterTriggerAuthenticationList",
	}, toUnstructured(t, so, "ScaledObject"), toUnstructured(t, ta, "TriggerAuthentication"))
	f := &fakeCluster{kube: kubefake.NewSimpleClientset(deploy, secret, hpa), dyn: dyn, so: so, hpa: hpa}
	connectCluster = func(kubeconfig, context string) (*trigger.Cluster, string, error) {
		return &trigger.Cluster{Kube: f.kube, Dynamic: f.dyn}, "default", nil
	}
	t.Cleanup(func() { connectCluster = defaultConnectCluster })
	return f
}

var defaultConnectCluster = connectCluster

// check -n NAMESPACE SCALEDOBJECT reads the ScaledObject, its
// TriggerAuthentication, the Secret it names and the scale target's
// environment from the cluster, runs the estimate, and shows KEDA's view
// beside it: here the HPA's 2 desired replicas are this estimate's too.
func TestCheckFromTheClusterAgreesWithKEDA(t *testing.T) {
	srv := clitest.NewTestAccount(t) // lag 7 on range 0, a stale parent on range 1: metric 7
	// KEDA v2.21.0 leaves the reason and message of Paused False empty on
	// a ScaledObject that was never paused.
	f := newFakeCluster(t, srv.ConnectionString())
	f.so.Status.Conditions = append(f.so.Status.Conditions, kedav1alpha1.Condition{Type: kedav1alpha1.ConditionPaused, Status: metav1.ConditionFalse})
	if err := f.dyn.Tracker().Update(trigger.ScaledObjectsResource, toUnstructured(t, f.so, "ScaledObject"), "shop"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "check", "-n", "shop", "order-projector")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ScaledObject  shop/order-projector, trigger 1 (orders)",
		"\n  Paused     False\n",
		"Processor     order-projector: monitors shop/orders, leases in shop/leases",
		"Replicas           2 → 2:",
		"KEDA's view\n  Ready      True    ScaledObjectReady: ScaledObject is defined correctly and is ready for scaling\n",
		"  Fallback   False   NoFallbackFound: No fallbacks are active on this scaled object\n",
		"  HPA        keda-hpa-order-projector: metric 3500m (average), replicas 2 current, 2 desired\n",
		"KEDA and this estimate: they agree: 2 desired replica(s); metric 7 here, 7 in the HPA (3500m average × 2 replica(s))\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)

	code, stdout, _ = runCmd(t, "check", "order-projector", "--namespace", "shop", "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK || r.KEDA == nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, stdout)
	}
	if !r.KEDA.Agree || r.KEDA.HPA != "keda-hpa-order-projector" || *r.KEDA.HPAMetricTotal != 7 || len(r.KEDA.Conditions) != 4 {
		t.Errorf("keda %+v", r.KEDA)
	}
}

// KEDA on its fallback (its scaler's polls fail, a wrong key in its
// Secret): the verdict says they disagree and why, while --set gives this
// estimate the right connection.
func TestCheckFromTheClusterSaysKEDAIsOnItsFallback(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	// A key but the emulator's goes over HTTPS only.
	f := newFakeCluster(t, "AccountEndpoint="+clitest.OverTLS(t, srv)+";AccountKey=d3Jvbmcta2V5LXdyb25nLWtleQ==;")
	f.so.Status.Conditions[2] = kedav1alpha1.Condition{Type: kedav1alpha1.ConditionFallback, Status: metav1.ConditionTrue, Reason: "FallbackExists", Message: "At least one trigger is falling back on this scaled object"}
	if err := f.dyn.Tracker().Update(trigger.ScaledObjectsResource, toUnstructured(t, f.so, "ScaledObject"), "shop"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "check", "-n", "shop", "order-projector", "--set", "connection="+srv.ConnectionString())
	want := "KEDA and this estimate: they disagree: KEDA is using the ScaledObject's fallback (At least one trigger is falling back on this scaled object), not this trigger's metric; this estimate reads metric 7\n"
	if code != cli.ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d; stdout lacks %q:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}

	// Without --set, the estimate fails as KEDA's polls do; KEDA's view is
	// still shown, on stderr.
	code, stdout, stderr = runCmd(t, "check", "-n", "shop", "order-projector")
	if code != cli.ExitFailed || !strings.Contains(stderr, "  Fallback   True    FallbackExists:") || !strings.Contains(stderr, "not compared: the estimate failed") {
		t.Errorf("wrong key: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
}

// A missing object or a refused read is one line naming the object,
// exit status 2.
func TestCheckFromTheClusterNamesWhatItCannotRead(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	f := newFakeCluster(t, srv.ConnectionString())
	code, _, stderr := runCmd(t, "check", "-n", "shop", "payments")
	if code != cli.ExitBadArgs || stderr != "cosmoslag check: ScaledObject shop/payments not found\n" {
		t.Errorf("missing ScaledObject: exit %d, stderr %q", code, stderr)
	}
	f.kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "cosmos-secrets", nil)
	})
	code, _, stderr = runCmd(t, "check", "-n", "shop", "order-projector")
	if want := "cosmoslag check: reading Secret shop/cosmos-secrets is forbidden: the Role cosmoslag check runs with must allow get on it (see the README's Role)\n"; code != cli.ExitBadArgs || stderr != want {
		t.Errorf("forbidden Secret: exit %d, stderr %q, want %q", code, stderr, want)
	}
	if err := f.dyn.Tracker().Delete(trigger.TriggerAuthenticationsResource, "shop", "cosmos-auth"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "check", "-n", "shop", "order-projector")
	if want := "cosmoslag check: TriggerAuthentication shop/cosmos-auth not found\n"; code != cli.ExitBadArgs || stderr != want {
		t.Errorf("missing TriggerAuthentication: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, _, stderr = runCmd(t, "check", "-n", "shop", "order-projector", "-f", "so.yaml")
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "give either -f FILE or a ScaledObject name") {
		t.Errorf("-f and a name: exit %d, stderr %q", code, stderr)
	}
}

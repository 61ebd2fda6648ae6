package check

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// clusterExampleOutput runs the cluster form's example of the README and
// docs/usage.md on fake clientsets holding what make e2e-local's
// TestCosmoslagCheckReadsTheClusterBesideKEDA makes on a real control plane
// (tests/local), which checks the same example against KEDA: ScaledObject
// shop/order-projector, one azure-cosmosdb trigger (threshold 50, max 10
// replicas) on processor order-projector's 4 leases, 120 and 35 behind on
// the two that one replica owns; KEDA v2.21.0's conditions as it sets
// them, its HPA at 2 replicas reading 50 on average.
func clusterExampleOutput(t *testing.T, args []string) string {
	t.Helper()
	srv, data, proc := clitest.NewShopAccount(t, 4, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	for rangeID, n := range map[string]int{"0": 120, "1": 35} {
		if err := data.WriteItemsToRange(rangeID, n); err != nil {
			t.Fatal(err)
		}
		if err := proc.SetOwner(rangeID, "order-projector-7d9f-x2k4q"); err != nil {
			t.Fatal(err)
		}
	}
	f := newFakeCluster(t, srv.ConnectionString())
	max := int32(10)
	f.so.Spec.MaxReplicaCount = &max
	f.so.Spec.Triggers = f.so.Spec.Triggers[1:]
	f.so.Spec.Triggers[0].Name = ""
	f.so.Status.Conditions = kedav1alpha1.Conditions{
		{Type: kedav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ScaledObjectReady", Message: "ScaledObject is defined correctly and is ready for scaling"},
		{Type: kedav1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: "ScalerActive", Message: "Scaling is performed because triggers are active"},
		{Type: kedav1alpha1.ConditionFallback, Status: metav1.ConditionFalse, Reason: "NoFallbackFound", Message: "No fallbacks are active on this scaled object"},
		{Type: kedav1alpha1.ConditionPaused, Status: metav1.ConditionFalse},
		{Type: "HPAActive", Status: metav1.ConditionTrue, Reason: "HPAActive", Message: "HPA is actively scaling"},
	}
	if err := f.dyn.Tracker().Update(trigger.ScaledObjectsResource, toUnstructured(t, f.so, "ScaledObject"), "shop"); err != nil {
		t.Fatal(err)
	}
	metric := resource.MustParse("50")
	f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 2, 2
	f.hpa.Status.CurrentMetrics[0].External.Metric.Name = "s0-azure-cosmosdb-leases-order-projector"
	f.hpa.Status.CurrentMetrics[0].External.Current = autoscalingv2.MetricValueStatus{AverageValue: &metric}
	if err := f.kube.Tracker().Update(autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), f.hpa, "shop"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	return stdout
}

// The README's and docs/usage.md's cluster form example is the command's
// output, what varies from run to run aside (see clusterExampleOutput).
func TestClusterExampleInTheDocsIsTheCommandsOutput(t *testing.T) {
	for _, page := range []string{"README.md", "docs/usage.md"} {
		block := testhelp.DocsBlock(t, page, "the objects from the cluster")
		command, ok := strings.CutPrefix(block[0], "$ cosmoslag ")
		if !ok {
			t.Fatalf("%s's cluster example does not start with the command: %q", page, block[0])
		}
		got := clusterExampleOutput(t, strings.Fields(command))
		if want := strings.Join(block[1:], "\n"); testhelp.NormalizeCheckOutput(got) != testhelp.NormalizeCheckOutput(want) {
			t.Errorf("%s's cluster example differs from the output:\n%s\nwant (the docs):\n%s", page, got, want)
		}
	}
}

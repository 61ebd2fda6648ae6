package check

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// clusterExampleOutput runs the cluster form's example of the README and
// docs/usage.md: shop/order-projector's processor 120 and 35 changes
// behind on two partitions, one replica running, KEDA's HPA at metric 100
// wanting 2.
func clusterExampleOutput(t *testing.T, args []string) string {
	t.Helper()
	srv, data, proc := clitest.NewShopAccount(t, 2, "dotnet-v0")
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
	metric := resource.MustParse("100")
	f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 1, 2
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

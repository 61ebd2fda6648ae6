package tune

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// tune with a misspelt processorName stops after its first sample (exit
// status 3), naming the prefixes the lease container holds, instead of
// waiting its window to say no checkpoint moved.
func TestTuneStopsWhenNoLeaseMatches(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("0", 20); err != nil {
		t.Fatal(err)
	}
	samples := 0
	tuneSampled = func(int) { samples++ }
	t.Cleanup(func() { tuneSampled = nil })
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", strings.Replace(tuneScaledObject, "processorName: order-projector", "processorName: orderprojector", 1))
	args := []string{"tune", "-f", so, "--set", "connection=" + srv.ConnectionString(), "--window", "1500ms", "--interval", "300ms", "--budget", "30s"}

	code, stdout, stderr := runCmd(t, append(args, "-o", "json")...)
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
	doc, raw := decodeTune(t, stdout)
	if code != exitNoRecommendation || doc.Samples != 1 || samples != 1 {
		t.Fatalf("exit %d, %d sample(s) reported, %d taken; want 3 and 1 sample\n%s\nstderr:\n%s", code, doc.Samples, samples, stdout, stderr)
	}
	reasons, _ := raw["reasons"].([]any)
	wantReason := `no lease document matches processorName "orderprojector": lease container shop/leases holds 4 document(s), none a lease of this processor for shop/orders; ids start with other processor names: "order-projector" (4)`
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0].(string), wantReason) {
		t.Errorf("reasons %q; want one starting %q", reasons, wantReason)
	}
	m, _ := raw["noLeaseMatch"].(map[string]any)
	if m == nil || m["leaseDocuments"] != float64(4) || len(m["otherPrefixes"].([]any)) != 1 {
		t.Errorf("noLeaseMatch: %v", raw["noLeaseMatch"])
	}

	samples = 0
	code, stdout, stderr = runCmd(t, args...)
	if code != exitNoRecommendation || samples != 1 || !strings.Contains(stderr, "cosmoslag tune: no recommendation: "+wantReason) ||
		!strings.Contains(stdout, `WARNING  `+wantReason) || strings.Contains(stdout, "never checkpointed") || strings.Contains(stdout, "measure under load") {
		t.Errorf("text: exit %d, %d sample(s)\nstdout:\n%s\nstderr:\n%s", code, samples, stdout, stderr)
	}
	t.Log("\n" + stdout)
}

//go:build e2elocal

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// The objects of the cluster form's example in the README and
// docs/usage.md: ScaledObject shop/order-projector on processor
// order-projector's leases in database shop.
const (
	checkNamespace = "shop"
	checkProcessor = "order-projector"
	checkOwner     = "order-projector-7d9f-x2k4q"
	checkThreshold = 50
)

// checkReportKEDA is the part of check's JSON document this test reads.
type checkReportKEDA struct {
	Metric   int64 `json:"metric"`
	Replicas *struct {
		Desired int32 `json:"desired"`
	} `json:"replicas"`
	KEDA *struct {
		Agree           bool     `json:"agree"`
		Verdict         string   `json:"verdict"`
		HPA             string   `json:"hpa"`
		HPAMetric       string   `json:"hpaMetric"`
		HPAMetricTotal  *float64 `json:"hpaMetricTotal"`
		CurrentReplicas *int32   `json:"currentReplicas"`
		DesiredReplicas *int32   `json:"desiredReplicas"`
		Conditions      []struct {
			Type, Status string
		} `json:"conditions"`
	} `json:"keda"`
	Error string `json:"error"`
}

// kubectlCosmoslag runs "kubectl cosmoslag check ARGS" with cosmoslag built
// as the kubectl plugin kubectl-cosmoslag, trusting the served account's
// CA, with the test's kubeconfig.
func kubectlCosmoslag(t *testing.T, plugin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"cosmoslag", "check"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+os.Getenv("PATH"), "SSL_CERT_FILE="+os.Getenv("COSMOS_CA_FILE"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("kubectl cosmoslag check: %v", err)
	}
	return 0, out.String(), errOut.String()
}

// cosmoslag check -n NAMESPACE SCALEDOBJECT against the real control plane,
// as a kubectl plugin: where KEDA reads the account as check does, KEDA's
// view and the estimate agree; where KEDA's key is wrong, KEDA is on its
// fallback and check says they disagree (and, without the right key,
// fails as KEDA's polls do, showing KEDA's view).
func TestCosmoslagCheckReadsTheClusterBesideKEDA(t *testing.T) {
	account, k := setUp(t, "intree")
	ctx := context.Background()
	plugin := filepath.Join(t.TempDir(), "kubectl-cosmoslag")
	if out, err := exec.Command("go", "build", "-o", plugin, "../../cmd/cosmoslag").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cosmoslag: %v\n%s", err, out)
	}

	// Processor order-projector's 4 leases, owned by one replica, 120 and
	// 35 behind on two partitions: metric min(155, 2 × 50) = 100, 2
	// replicas.
	items, _ := firstStart(ctx, t, account, checkNamespace)
	proc := startProcessor(ctx, t, account, checkNamespace, checkProcessor)
	for i, n := range []int{120, 35} {
		if err := account.writeItems(ctx, checkNamespace, monitored, items.Ranges[i].ID, n); err != nil {
			t.Fatal(err)
		}
		if err := proc.setOwner(ctx, items.Ranges[i].ID, checkOwner); err != nil {
			t.Fatal(err)
		}
	}
	// Two ScaledObjects of the main test's manifests on that processor:
	// "order-projector" reads the account with its connection string,
	// "order-projector-badkey" with a wrong key (its Deployment starts at one
	// replica, so the HPA is running when KEDA's fallback applies).
	k.apply(t, manifests, manifestData{
		Namespace: checkNamespace, Connection: account.connectionString(), Endpoint: account.endpoint,
		Key: account.key, WrongKey: strings.Repeat("A", 86) + "==",
		Database: checkNamespace, Monitored: monitored, Leases: leases, Processor: checkProcessor,
		LagThreshold: checkThreshold, ActivationLagThreshold: 0,
		MaxReplicas: maxReplicas, FallbackReplicas: fallbackReplicas,
		Targets: []scaleTarget{{Name: "order-projector", Auth: "cosmosdb-connection"}, {Name: "order-projector-badkey", Replicas: 1, Auth: "cosmosdb-wrong-key"}},
	})

	t.Run("KEDA and the estimate agree", func(t *testing.T) {
		k.waitReplicas(t, checkNamespace, "order-projector", 2, scaleTimeout)
		var r checkReportKEDA
		eventually(t, scaleTimeout, "the HPA reads this estimate's metric at 2 replicas and check agrees", func() error {
			code, stdout, stderr := kubectlCosmoslag(t, plugin, "-n", checkNamespace, "order-projector", "-o", "json")
			r = checkReportKEDA{}
			if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || r.KEDA == nil || !r.KEDA.Agree ||
				r.KEDA.CurrentReplicas == nil || *r.KEDA.CurrentReplicas != 2 || r.KEDA.HPAMetricTotal == nil || *r.KEDA.HPAMetricTotal != float64(r.Metric) {
				return fmt.Errorf("exit %d, %v: %s\nstderr: %s", code, err, stdout, stderr)
			}
			return nil
		})
		if r.Metric != 2*checkThreshold || r.KEDA.HPA != "keda-hpa-order-projector" || r.Replicas.Desired != 2 || *r.KEDA.DesiredReplicas != 2 {
			t.Errorf("metric %d, desired %d, KEDA %+v; want metric %d, 2 replicas both", r.Metric, r.Replicas.Desired, r.KEDA, 2*checkThreshold)
		}
		code, table, stderr := kubectlCosmoslag(t, plugin, "-n", checkNamespace, "order-projector")
		if code != 0 || !strings.Contains(table, "KEDA's view\n") || !strings.Contains(table, "KEDA and this estimate: they agree: 2 desired replica(s)") {
			t.Errorf("table: exit %d\n%s\nstderr: %s", code, table, stderr)
		}
		if strings.Contains(table+stderr, account.key) {
			t.Error("the account key was printed")
		}
		if dir := os.Getenv("E2E_LOCAL_LOGS"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, "cosmoslag-check.txt"), []byte(table), 0o644)
		}
		// The README's and docs/usage.md's example is this output, what
		// varies from run to run aside (the same example the check
		// package's test renders from fake clientsets).
		// KEDA's view settles over a few syncs (its HPAActive condition, the
		// HPA's average over the replicas it has just made), so the output
		// is compared until it settles or the time is up.
		for _, page := range []string{"README.md", "docs/usage.md"} {
			block := testhelp.DocsBlock(t, page, "the objects from the cluster")
			args, ok := strings.CutPrefix(block[0], "$ cosmoslag check ")
			if !ok {
				t.Fatalf("%s's cluster example does not start with the command: %q", page, block[0])
			}
			want := strings.Join(block[1:], "\n")
			eventually(t, scaleTimeout, page+"'s cluster example is the output against the real control plane", func() error {
				_, out, _ := kubectlCosmoslag(t, plugin, strings.Fields(args)...)
				if testhelp.NormalizeCheckOutput(out) != testhelp.NormalizeCheckOutput(want) {
					return fmt.Errorf("the output:\n%s\nwant (the docs):\n%s", out, want)
				}
				return nil
			})
		}
	})

	t.Run("KEDA on its fallback: a wrong key", func(t *testing.T) {
		k.waitReplicas(t, checkNamespace, "order-projector-badkey", fallbackReplicas, scaleTimeout)
		eventually(t, scaleTimeout, "the Fallback condition", func() error {
			status, _, _, err := k.condition(ctx, checkNamespace, "order-projector-badkey", "Fallback")
			if err != nil || status != "True" {
				return fmt.Errorf("Fallback %q, %v", status, err)
			}
			return nil
		})
		// With the right key, the estimate reads the lag KEDA cannot.
		code, stdout, stderr := kubectlCosmoslag(t, plugin, "-n", checkNamespace, "order-projector-badkey", "-o", "json", "--set", "cosmosDBKey="+account.key)
		var r checkReportKEDA
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || r.KEDA == nil {
			t.Fatalf("exit %d, %v: %s\nstderr: %s", code, err, stdout, stderr)
		}
		if r.KEDA.Agree || !strings.Contains(r.KEDA.Verdict, "they disagree: KEDA is using the ScaledObject's fallback") || r.Metric != 2*checkThreshold {
			t.Errorf("verdict %q (agree %v), metric %d; want a disagreement naming the fallback, metric %d", r.KEDA.Verdict, r.KEDA.Agree, r.Metric, 2*checkThreshold)
		}
		// With the cluster's wrong key, the estimate fails as KEDA's polls
		// do; KEDA's view is shown on stderr.
		code, stdout, stderr = kubectlCosmoslag(t, plugin, "-n", checkNamespace, "order-projector-badkey")
		if code != 1 || !strings.Contains(stderr, "  Fallback   True") || !strings.Contains(stderr, "401") {
			t.Errorf("wrong key: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, account.key) || strings.Contains(stdout+stderr, strings.Repeat("A", 86)) {
			t.Error("a key was printed")
		}
	})

	t.Run("a missing ScaledObject is named", func(t *testing.T) {
		code, _, stderr := kubectlCosmoslag(t, plugin, "-n", checkNamespace, "no-such-object")
		if want := "cosmoslag check: ScaledObject " + checkNamespace + "/no-such-object not found\n"; code != 2 || stderr != want {
			t.Errorf("exit %d, stderr %q; want 2, %q", code, stderr, want)
		}
	})
}

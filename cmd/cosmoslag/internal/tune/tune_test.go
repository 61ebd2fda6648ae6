package tune

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// tuneScaledObject is a ScaledObject whose trigger tune measures.
const tuneScaledObject = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: order-projector, namespace: shop}
spec:
  scaleTargetRef: {name: order-projector}
  maxReplicaCount: 20
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: order-projector, changeFeedLagThreshold: "100"}
`

// tuneDoc is the part of tune's JSON document the tests read.
type tuneDoc struct {
	Clock    string  `json:"clock"`
	Samples  int     `json:"samples"`
	Measured float64 `json:"measuredSeconds"`
	Leases   []struct {
		Token     string  `json:"token"`
		Owner     string  `json:"owner"`
		Drained   int64   `json:"drained"`
		DrainRate float64 `json:"drainRate"`
	} `json:"leases"`
	PerOwner []struct {
		Owner     string  `json:"owner"`
		DrainRate float64 `json:"drainRate"`
		State     string  `json:"state"`
		Counted   bool    `json:"counted"`
	} `json:"perOwner"`
	Total *struct {
		DrainRate, WriteRate float64
		Lag                  int64    `json:"lag"`
		ActivePartitions     int64    `json:"activePartitions"`
		TimeToDrainSeconds   *float64 `json:"timeToDrainSeconds"`
		TimeToDrainUnknown   string   `json:"timeToDrainUnknown"`
	} `json:"total"`
	Recommendation *struct {
		Threshold      int64   `json:"changeFeedLagThreshold"`
		PerReplicaRate float64 `json:"perReplicaRate"`
		BudgetSeconds  float64 `json:"budgetSeconds"`
		StartupSeconds float64 `json:"startupSeconds"`
		Arithmetic     string  `json:"arithmetic"`
		LowerBound     bool    `json:"lowerBound"`
		HPA            struct {
			Threshold int64 `json:"changeFeedLagThreshold"`
			Metric    int64 `json:"metric"`
			Replicas  struct {
				Current, Desired int32
			} `json:"replicas"`
		} `json:"hpa"`
	} `json:"recommendation"`
	Reason   string   `json:"reason"`
	Reasons  []string `json:"reasons"`
	ExitCode int      `json:"exitCode"`
}

func decodeTune(t *testing.T, stdout string) (tuneDoc, map[string]any) {
	t.Helper()
	raw := clitest.OneJSONDocument(t, stdout)
	var doc tuneDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	return doc, raw
}

// The emulator's simulated replicas drain --drain-rate changes per second:
// tune measures that rate within 10 % and recommends floor(rate × (budget −
// startup)).
func TestTuneEmulatorMeasuresTheSimulatedRate(t *testing.T) {
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	const drainRate = 80.0
	args := []string{"tune", "-f", so, "--emulator", "--window", "3s", "--interval", "500ms", "--drain-rate", "80", "--replicas", "3", "--budget", "30s", "--startup", "20s"}
	code, stdout, stderr := runCmd(t, append(args, "-o", "json")...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	doc, raw := decodeTune(t, stdout)
	for _, key := range []string{"scaledObject", "windowSeconds", "intervalSeconds", "clock", "samples", "measuredSeconds", "leases", "perOwner", "total", "recommendation", "notes", "requests", "exitCode", "simulation"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("the JSON document has no %q", key)
		}
	}
	if _, ok := raw["reason"]; ok {
		t.Errorf("a recommendation with a reason: %v", raw["reason"])
	}
	if doc.Clock != "simulated" || doc.Samples != 7 || doc.Measured != 3 {
		t.Errorf("clock %q, %d samples over %gs; want simulated, 7 over 3s", doc.Clock, doc.Samples, doc.Measured)
	}
	counted := 0
	for _, o := range doc.PerOwner {
		switch {
		case o.Owner == "":
			if o.State != ownerNone || o.Counted {
				t.Errorf("the unowned lease: state %s, counted %v", o.State, o.Counted)
			}
		case !o.Counted || o.State != ownerBusy:
			t.Errorf("replica %s: state %s, counted %v; want busy and counted", o.Owner, o.State, o.Counted)
		default:
			counted++
			if math.Abs(o.DrainRate-drainRate) > drainRate/10 {
				t.Errorf("replica %s drained %.2f/s; the simulation drains %g/s", o.Owner, o.DrainRate, drainRate)
			}
		}
	}
	rec := doc.Recommendation
	if counted != 3 || rec == nil {
		t.Fatalf("%d replicas counted, recommendation %v; want 3 and one", counted, rec)
	}
	if math.Abs(rec.PerReplicaRate-drainRate) > drainRate/10 {
		t.Errorf("per-replica rate %.2f; the simulation drains %g/s per replica", rec.PerReplicaRate, drainRate)
	}
	if want := int64(math.Floor(rec.PerReplicaRate*(rec.BudgetSeconds-rec.StartupSeconds) + 1e-9)); rec.Threshold != want || rec.BudgetSeconds != 30 || rec.StartupSeconds != 20 {
		t.Errorf("threshold %d with budget %gs, startup %gs; want floor(%.2f × 10) = %d", rec.Threshold, rec.BudgetSeconds, rec.StartupSeconds, rec.PerReplicaRate, want)
	}
	if !strings.HasSuffix(rec.Arithmetic, "= "+jsonNumber(rec.Threshold)) || rec.LowerBound {
		t.Errorf("arithmetic %q (lower bound %v)", rec.Arithmetic, rec.LowerBound)
	}
	if want := min(doc.Total.Lag, doc.Total.ActivePartitions*rec.Threshold); rec.HPA.Metric != want || rec.HPA.Threshold != rec.Threshold {
		t.Errorf("HPA metric %d with %d; want min(lag %d, %d × %d) = %d", rec.HPA.Metric, rec.HPA.Threshold, doc.Total.Lag, doc.Total.ActivePartitions, rec.Threshold, want)
	}
	if rec.HPA.Replicas.Current != 3 || rec.HPA.Replicas.Desired < 1 {
		t.Errorf("HPA %d → %d; want from the 3 owners", rec.HPA.Replicas.Current, rec.HPA.Replicas.Desired)
	}

	// The same run as text: the tables, the arithmetic, the HPA's decisions.
	code, stdout, stderr = runCmd(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	for _, re := range []string{
		`(?m)^Simulation\s+3 replica\(s\) draining 80/s each`,
		`(?m)^Window\s+3s: 7 sample\(s\) every 500ms on the simulation's clock, 3s measured$`,
		`(?m)^LEASE\s+OWNER\s+CHECKPOINTS\s+DRAINED\s+DRAIN/s\s+WRITES/s\s+LAG\s+TIME TO DRAIN$`,
		`(?m)^order-projector-1\s+0\s+80\.00\s+[\d.]+\s+\d+\s+\S+\s+busy: `,
		`(?m)^-\s+3\s+0\.00\s+[\d.]+\s+\d+\s+never \(no owner\)\s+unowned: `,
		`(?m)^Per replica\s+80\.00 LSN/s: the mean of 3 busy replica\(s\)`,
		`(?m)^Recommended\s+changeFeedLagThreshold: "800" \(now 100\)$`,
		`(?m)^\s+floor\(80\.00 LSN/s per replica × \(30s budget − 20s startup\)\) = floor\(80\.00 × 10\) = 800$`,
		`(?m)^\s+with 800 \(recommended\): metric \d+ = min\(total lag \d+, 4 active partition\(s\) × 800\); 3 → \d+: `,
		`(?m)^\s+with 100 \(now\): metric 400 = `,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s", re)
		}
	}
	// On a pipe: no progress lines, only the --emulator banner.
	if strings.Contains(stderr, "sample 1/") {
		t.Errorf("progress lines on a pipe:\n%s", stderr)
	}
}

func jsonNumber(n int64) string { return strconv.FormatInt(n, 10) }

// A processor that drains nothing: no checkpoint moves in the window, and
// tune says so instead of recommending (exit status 3), in text and JSON.
func TestTuneWindowWithoutCheckpoints(t *testing.T) {
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	args := []string{"tune", "-f", so, "--emulator", "--window", "2s", "--interval", "500ms", "--drain-rate", "0", "--budget", "30s"}
	code, stdout, stderr := runCmd(t, args...)
	if code != exitNoRecommendation {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"No recommendation:\n  - no checkpoint moved in the 2s measured while changes were pending", "stuck: drained nothing while lag was pending: idle or stuck, not slow"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "Recommended") || !strings.Contains(stderr, "cosmoslag tune: no recommendation: no checkpoint moved") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	code, stdout, _ = runCmd(t, append(args, "-o", "json")...)
	doc, raw := decodeTune(t, stdout)
	if code != exitNoRecommendation || doc.ExitCode != exitNoRecommendation {
		t.Fatalf("exit %d, exitCode %d; want 3", code, doc.ExitCode)
	}
	if _, ok := raw["recommendation"]; ok {
		t.Error("a recommendation from a window without checkpoints")
	}
	if len(doc.Reasons) != 1 || !strings.HasPrefix(doc.Reasons[0], "no checkpoint moved") || doc.Reason != doc.Reasons[0] {
		t.Errorf("reason %q, reasons %q", doc.Reason, doc.Reasons)
	}
	if doc.Total == nil || doc.Total.DrainRate != 0 || doc.Total.Lag == 0 || doc.Total.TimeToDrainSeconds != nil || !strings.HasPrefix(doc.Total.TimeToDrainUnknown, "no recommendation") {
		t.Errorf("total %+v; want no drain, some lag, no time to drain in a refused run", doc.Total)
	}
}

// A split inside the window, against an account on the wall clock: the
// parent lease turns stale, then the processor replaces it by its
// children; tune names both and recommends nothing.
func TestTuneSplitInsideTheWindow(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, cosmostest.DotNetV0)
	for _, r := range []string{"0", "1"} {
		if err := data.WriteItemsToRange(r, 5); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"0", "1"} {
		if err := data.WriteItemsToRange(r, 50); err != nil {
			t.Fatal(err)
		}
		if err := proc.SetOwner(r, "order-projector-"+r); err != nil {
			t.Fatal(err)
		}
	}
	// After each sample lease 1 checkpoints 5 more changes; after the
	// second, range 0 splits; after the fourth, its lease is replaced.
	var hookErrs []error
	tuneSampled = func(k int) {
		hookErrs = append(hookErrs, proc.Checkpoint("1", int64(5+5*(k+1))))
		switch k {
		case 1:
			_, _, err := data.Split("0")
			hookErrs = append(hookErrs, err)
		case 3:
			_, err := proc.ReplaceAfterSplit("0")
			hookErrs = append(hookErrs, err)
		}
	}
	t.Cleanup(func() { tuneSampled = nil })
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	code, stdout, stderr := runCmd(t, "tune", "-f", so, "--set", "connection="+srv.ConnectionString(),
		"--window", "1500ms", "--interval", "300ms", "--budget", "30s", "-o", "json")
	for _, err := range hookErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
	doc, raw := decodeTune(t, stdout)
	if code != exitNoRecommendation || doc.ExitCode != exitNoRecommendation || doc.Recommendation != nil {
		t.Fatalf("exit %d; want 3 and no recommendation\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// A refused run: no negative rate, no time to drain (item 5 of issue Z).
	for _, rows := range []any{raw["leases"], raw["perOwner"], []any{raw["total"]}} {
		for _, row := range rows.([]any) {
			row := row.(map[string]any)
			for _, key := range []string{"drainRate", "writeRate"} {
				if v, ok := row[key].(float64); ok && v < 0 {
					t.Errorf("%s %v in %v", key, v, row)
				}
			}
			if row["timeToDrainSeconds"] != nil || row["neverDrains"] != nil || row["timeToDrainUnknown"] == nil {
				t.Errorf("a time to drain in a refused run: %v", row)
			}
		}
	}
	if doc.Clock != "wall" || doc.Samples != 6 {
		t.Errorf("clock %q, %d samples; want wall, 6", doc.Clock, doc.Samples)
	}
	t.Logf("reasons: %q", doc.Reasons)
	var stale, changed bool
	for _, r := range doc.Reasons {
		stale = stale || regexp.MustCompile(`^split or merge in the window: stale parent lease\(s\) 0 \(from \+[\d.]+m?s\): `).MatchString(r)
		changed = changed || regexp.MustCompile(`^split or merge in the window: the lease set changed: lease\(s\) 0 \(at \+[\d.]+m?s\) gone; lease\(s\) 2 \(at \+[\d.]+m?s\), 3 \(at \+[\d.]+m?s\) new`).MatchString(r)
	}
	if !stale || !changed {
		t.Errorf("reasons %q: want the stale parent and the lease set's change named", doc.Reasons)
	}
	if slices.ContainsFunc(doc.Reasons, func(r string) bool { return strings.HasPrefix(r, "no checkpoint moved") }) {
		t.Errorf("lease 1 checkpointed, yet: %q", doc.Reasons)
	}
	for _, l := range doc.Leases {
		if l.Token == "1" && l.Drained != 25 {
			t.Errorf("lease 1 drained %d, want 25 (5 per sample after the first)", l.Drained)
		}
	}
}

func TestTuneBadArguments(t *testing.T) {
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--emulator"}, "--budget is required"},
		{[]string{"--emulator", "--budget", "20s", "--startup", "20s"}, "--budget 20s must be longer than --startup 20s"},
		{[]string{"--emulator", "--budget", "30s", "--window", "10s", "--interval", "6s"}, "too few samples: --window 10s at --interval 6s gives 2; at least 3 are needed"},
		{[]string{"--budget", "30s", "--drain-rate", "10"}, "--drain-rate is a setting of the simulated processor: only with --emulator"},
		{[]string{"--emulator", "--budget", "30s", "--replicas", "0"}, "--replicas must be between 1 and 32"},
		{[]string{"--emulator", "--budget", "30s", "--current-replicas", "-1"}, "--current-replicas must not be negative"},
		{[]string{"--emulator", "--budget", "30s", "--bogus"}, "flag provided but not defined: -bogus"},
	} {
		args := append([]string{"tune", "-f", so}, c.args...)
		code, stdout, stderr := runCmd(t, args...)
		if code != cli.ExitBadArgs || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
		code, stdout, _ = runCmd(t, append(args, "-o", "json")...)
		doc := clitest.OneJSONDocument(t, stdout)
		if code != cli.ExitBadArgs || doc["exitCode"] != float64(cli.ExitBadArgs) || !strings.Contains(doc["error"].(string), c.want) {
			t.Errorf("%q -o json: exit %d, %v", c.args, code, doc)
		}
	}
}

// A first estimate that fails is exit status 1, with the cause and no
// secret, and -o json's document has the error and no measurement.
func TestTuneFirstEstimateFails(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	wrongKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("not the account key ", 4)))
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	for _, format := range []string{"table", "json"} {
		code, stdout, stderr := runCmd(t, "tune", "-f", so, "--set", "connection=AccountEndpoint="+clitest.OverTLS(t, srv)+";AccountKey="+wrongKey+";",
			"--budget", "30s", "--window", "1s", "--interval", "500ms", "-o", format)
		if code != cli.ExitFailed || !strings.Contains(stderr, "401") {
			t.Fatalf("-o %s: exit %d, want 1 and the cause\nstdout:\n%s\nstderr:\n%s", format, code, stdout, stderr)
		}
		if format == "json" {
			doc := clitest.OneJSONDocument(t, stdout)
			if _, ok := doc["leases"]; ok || doc["exitCode"] != float64(cli.ExitFailed) || !strings.Contains(doc["error"].(string), "401") {
				t.Errorf("-o json: %v", doc)
			}
		}
		clitest.AssertNoSecret(t, wrongKey, stdout, stderr)
		clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
	}
}

// docs/tuning.md's worked example is the output of the command it shows,
// run on the ScaledObject it describes: the simulation runs on its own
// clock from fixed seeds, so the output is the same on every run.
func TestTuneDocsExampleIsTheCommandsOutput(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testhelp.RepoRoot(t), "docs", "tuning.md"))
	if err != nil {
		t.Fatal(err)
	}
	const command = "$ cosmoslag tune -f so.yaml --emulator --drain-rate 40 --budget 30s --startup 20s\n"
	_, example, found := strings.Cut(string(doc), command)
	example, _, closed := strings.Cut(example, "```")
	if !found || !closed {
		t.Fatalf("docs/tuning.md has no code block starting with %q", command)
	}
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject) // threshold 100, maxReplicaCount 20, as the page says
	args := strings.Fields(strings.TrimPrefix(strings.TrimSpace(command), "$ cosmoslag "))
	args[slices.Index(args, "so.yaml")] = so
	code, stdout, stderr := runCmd(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout != example {
		t.Errorf("docs/tuning.md's example differs from the command's output:\n%s", stdout)
	}
}

// A processor on an account, on the wall clock, that writes 10 changes per
// range between two samples and checkpoints: one that keeps up (all but
// the last 2 processed at each sample) is not busy, its rate a lower bound;
// one draining a backlog (20 per interval from 200) is busy. Item 1 of
// issue Z, through the command.
func TestTuneKeepingUpIsALowerBoundBacklogIsBusy(t *testing.T) {
	for _, c := range []struct {
		name       string
		Backlog    int64
		lowerBound bool
		state      string
	}{
		{"keeping up", 0, true, ownerCaughtUp},
		{"draining a backlog", 200, false, ownerBusy},
	} {
		srv, data, proc := clitest.NewShopAccount(t, 2, cosmostest.DotNetV0)
		ranges := []string{"0", "1"}
		for _, r := range ranges {
			if err := data.WriteItemsToRange(r, 5); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := proc.CreateLeases(true); err != nil {
			t.Fatal(err)
		}
		checkpoint := map[string]int64{}
		for _, r := range ranges {
			if err := data.WriteItemsToRange(r, int(c.Backlog)+10); err != nil {
				t.Fatal(err)
			}
			if err := proc.SetOwner(r, "order-projector-"+r); err != nil {
				t.Fatal(err)
			}
			checkpoint[r] = data.LSN(r) - 2 - c.Backlog
			if err := proc.Checkpoint(r, checkpoint[r]); err != nil {
				t.Fatal(err)
			}
		}
		var hookErrs []error
		sampled := func(int) {
			for _, r := range ranges {
				hookErrs = append(hookErrs, data.WriteItemsToRange(r, 10))
				if c.Backlog == 0 {
					checkpoint[r] = data.LSN(r) - 2
				} else {
					checkpoint[r] += 20
				}
				hookErrs = append(hookErrs, proc.Checkpoint(r, checkpoint[r]))
			}
		}
		so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
		args := []string{"tune", "-f", so, "--set", "connection=" + srv.ConnectionString(), "--window", "1s", "--interval", "250ms", "--budget", "30s"}
		tuneSampled = sampled
		t.Cleanup(func() { tuneSampled = nil })
		code, stdout, stderr := runCmd(t, append(args, "-o", "json")...)
		for _, err := range hookErrs {
			if err != nil {
				t.Fatal(err)
			}
		}
		doc, raw := decodeTune(t, stdout)
		if code != cli.ExitOK || doc.Recommendation == nil {
			t.Fatalf("%s: exit %d\n%s\nstderr:\n%s", c.name, code, stdout, stderr)
		}
		if doc.Recommendation.LowerBound != c.lowerBound {
			t.Errorf("%s: recommendation.lowerBound %v, want %v", c.name, doc.Recommendation.LowerBound, c.lowerBound)
		}
		for _, o := range raw["perOwner"].([]any) {
			o := o.(map[string]any)
			if o["state"] != c.state || o["lowerBound"] != c.lowerBound || o["counted"] != true {
				t.Errorf("%s: owner %v: state %v, lowerBound %v, counted %v; want %s, %v, counted", c.name, o["owner"], o["state"], o["lowerBound"], o["counted"], c.state, c.lowerBound)
			}
		}
		// The same as text, the processor going on from where it was.
		code, stdout, _ = runCmd(t, args...)
		marked := regexp.MustCompile(`(?m)^Per replica\s+≥[\d.]+ LSN/s, a lower bound: `).MatchString(stdout)
		if code != cli.ExitOK || marked != c.lowerBound {
			t.Errorf("%s: exit %d, the per-replica rate marked a lower bound: %v, want %v\n%s", c.name, code, marked, c.lowerBound, stdout)
		}
	}
}

// A checkpoint reset inside the window, ahead again by the last sample:
// tune refuses, naming the lease and the samples (item 2 of issue Z).
func TestTuneCheckpointResetInsideTheWindow(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, cosmostest.DotNetV0)
	for _, r := range []string{"0", "1"} {
		if err := data.WriteItemsToRange(r, 500); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := proc.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	// Lease 0: 100, 200, then back to 50 after the second sample, then 300.
	at := []int64{100, 200, 50, 300, 400}
	for _, r := range []string{"0", "1"} {
		if err := proc.SetOwner(r, "order-projector-"+r); err != nil {
			t.Fatal(err)
		}
		if err := proc.Checkpoint(r, at[0]); err != nil {
			t.Fatal(err)
		}
	}
	var hookErrs []error
	tuneSampled = func(k int) {
		if k+1 < len(at) {
			hookErrs = append(hookErrs, proc.Checkpoint("0", at[k+1]), proc.Checkpoint("1", 100+100*int64(k+1)))
		}
	}
	t.Cleanup(func() { tuneSampled = nil })
	so := clitest.WriteFile(t, t.TempDir(), "so.yaml", tuneScaledObject)
	code, stdout, stderr := runCmd(t, "tune", "-f", so, "--set", "connection="+srv.ConnectionString(),
		"--window", "1s", "--interval", "250ms", "--budget", "30s", "-o", "json")
	for _, err := range hookErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	doc, _ := decodeTune(t, stdout)
	if code != exitNoRecommendation || doc.Recommendation != nil || len(doc.Reasons) != 1 ||
		!regexp.MustCompile(`^lease 0's checkpoint moved back between \+[\d.]+m?s and \+[\d.]+m?s \(200 → 50\): the processor reset it`).MatchString(doc.Reasons[0]) {
		t.Fatalf("exit %d, reasons %q; want 3 and lease 0's reset named\n%s\nstderr:\n%s", code, doc.Reasons, stdout, stderr)
	}
}

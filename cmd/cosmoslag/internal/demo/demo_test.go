package demo

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
)

// rowPattern matches a table row: time, lag (with * for a stale parent),
// partitions, metric, active, replicas, requests, RU, events.
var rowPattern = regexp.MustCompile(`(?m)^\s*(\d+\.\d)s\s+(\d+)(\*?)\s+(\d+)\s+(\d+)\s+(yes|no)\s+(\d+)\s+(\d+)\s+(\d+\.\d)  ?(.*)$`)

type demoRow struct {
	lag, partitions, metric, replicas, requests int64
	stale, active                               bool
	events                                      string
}

func parseDemoRows(t *testing.T, out string) []demoRow {
	t.Helper()
	var rows []demoRow
	for _, m := range rowPattern.FindAllStringSubmatch(out, -1) {
		n := func(i int) int64 {
			v, err := strconv.ParseInt(m[i], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		rows = append(rows, demoRow{
			lag: n(2), stale: m[3] == "*", partitions: n(4), metric: n(5), active: m[6] == "yes",
			replicas: n(7), requests: n(8), events: m[10],
		})
	}
	return rows
}

func TestDemoShort(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "demo.svg")
	code, stdout, stderr := runCmd(t, "demo", "--duration", "3s", "--interval", "200ms", "--threshold", "20", "--chart", chart)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)

	rows := parseDemoRows(t, stdout)
	if len(rows) != 16 { // polls at 0, 0.2s, …, 3.0s
		t.Fatalf("got %d table rows, want 16", len(rows))
	}
	var sawActivation, sawSplit, sawStale, sawReplace, sawScaleUp bool
	var peakLag int64
	for i, r := range rows {
		if r.metric > r.lag || r.metric > r.partitions*20 {
			t.Errorf("row %d: metric %d exceeds min(lag %d, %d partitions × 20)", i, r.metric, r.lag, r.partitions)
		}
		if r.active != (r.lag > 0) {
			t.Errorf("row %d: active=%v with lag %d and activation 0", i, r.active, r.lag)
		}
		if r.requests == 0 {
			t.Errorf("row %d: a poll made no requests", i)
		}
		peakLag = max(peakLag, r.lag)
		sawActivation = sawActivation || strings.Contains(r.events, "KEDA activates 0 → 1")
		sawSplit = sawSplit || strings.Contains(r.events, "split: range")
		sawStale = sawStale || r.stale
		sawReplace = sawReplace || strings.Contains(r.events, "processor: lease")
		sawScaleUp = sawScaleUp || r.replicas >= 2
	}
	if rows[0].lag != 0 || rows[0].replicas != 0 {
		t.Errorf("first poll: lag %d, replicas %d; want an idle start", rows[0].lag, rows[0].replicas)
	}
	if !sawActivation || !sawSplit || !sawStale || !sawReplace || !sawScaleUp || peakLag == 0 {
		t.Errorf("activation %v, split %v, stale parent %v, lease replaced %v, ≥2 replicas %v, peak lag %d",
			sawActivation, sawSplit, sawStale, sawReplace, sawScaleUp, peakLag)
	}

	for _, want := range []string{"Summary: 16 polls over 3.0s (seed 1)", "items written", "peak lag", "activated at", "split              range", "failed polls       0", "chart              " + chart} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`items written\s+(\d+); processed (\d+); backlog left (\d+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatal("no items line in the summary")
	}
	written, _ := strconv.Atoi(m[1])
	processed, _ := strconv.Atoi(m[2])
	left, _ := strconv.Atoi(m[3])
	if written == 0 || processed+left != written {
		t.Errorf("written %d, processed %d, left %d", written, processed, left)
	}

	checkChart(t, chart, len(rows))
}

// checkChart parses the SVG as XML and checks both series are there with
// one point per poll.
func checkChart(t *testing.T, path string, polls int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The scaler's lag counts change feed transactions (LSNs), not items.
	if !bytes.Contains(raw, []byte("change feed lag (transactions)")) || bytes.Contains(raw, []byte("(items)")) {
		t.Error("the chart's lag axis is not labelled in transactions")
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	series := map[string]int{}
	var root string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Space + " " + se.Name.Local
		}
		attrs := map[string]string{}
		for _, a := range se.Attr {
			attrs[a.Name.Local] = a.Value
		}
		switch attrs["id"] {
		case "lag", "metric":
			series[attrs["id"]] = len(strings.Fields(attrs["points"]))
		case "replicas":
			series["replicas"] = strings.Count(attrs["d"], "H") + strings.Count(attrs["d"], "M")
		case "split":
			series["split"] = 1
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q, want svg in the SVG namespace", root)
	}
	for _, id := range []string{"lag", "metric", "replicas"} {
		if series[id] != polls {
			t.Errorf("series %s has %d points, want %d", id, series[id], polls)
		}
	}
	if series["split"] != 1 {
		t.Error("chart has no split marker")
	}
}

func TestDemoDeterministic(t *testing.T) {
	args := []string{"demo", "--duration", "1200ms", "--interval", "100ms", "--seed", "7", "--partitions", "3"}
	_, first, _ := runCmd(t, args...)
	_, second, _ := runCmd(t, args...)
	a, b := parseDemoRows(t, first), parseDemoRows(t, second)
	if len(a) != 13 || len(a) != len(b) {
		t.Fatalf("rows: %d and %d, want 13", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		x.requests, y.requests = 0, 0 // retries could differ; the rest must not
		if x != y {
			t.Errorf("row %d differs between runs with the same seed:\n%+v\n%+v", i, a[i], b[i])
		}
	}
}

func TestDemoBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--partitions", "0"},
		{"--threshold", "0"},
		{"--activation", "100"},
		{"--interval", "10ms"},
		{"--duration", "100ms", "--interval", "100ms"},
		{"--drain-rate", "0"},
		{"--max-replicas", "0"},
		{"--no-such-flag"},
		{"extra"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"demo"}, args...)...)
		if code != cli.ExitBadArgs || stdout != "" || stderr == "" {
			t.Errorf("demo %v: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// With --all-versions-and-deletes the processor's leases record that mode,
// the workload deletes items too, and the scaler counts the deletes: the
// processor drains every change it was given and the backlog ends at zero.
func TestDemoAllVersionsAndDeletes(t *testing.T) {
	code, stdout, stderr := runCmd(t, "demo", "--all-versions-and-deletes", "--duration", "3s", "--interval", "200ms", "--threshold", "20")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	if !strings.Contains(stdout, "AllVersionsAndDeletes processor") {
		t.Error("the header does not name the processor's mode")
	}
	rows := parseDemoRows(t, stdout)
	var peakLag int64
	for _, r := range rows {
		peakLag = max(peakLag, r.lag)
	}
	m := regexp.MustCompile(`items written\s+(\d+); processed (\d+); backlog left (\d+)`).FindStringSubmatch(stdout)
	if len(m) != 4 || m[1] != m[2] || m[3] != "0" || peakLag == 0 || rows[len(rows)-1].lag != 0 {
		t.Errorf("summary %q, peak lag %d, last lag %d; want every change (deletes included) processed and the lag back at 0", m, peakLag, rows[len(rows)-1].lag)
	}
}

// --functions runs an Azure Functions app's processor without a lease
// prefix; the real scaler, with processorName "", sees its lag and wakes it.
func TestDemoFunctionsWithoutPrefix(t *testing.T) {
	code, stdout, stderr := runCmd(t, "demo", "--functions", "--duration", "3s", "--interval", "200ms", "--threshold", "20")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `processor "", metric s0-azure-cosmosdb-leases-`) || !strings.Contains(stdout, "LeaseContainerPrefix") {
		t.Errorf("the header does not say the processor has no prefix:\n%s", stdout)
	}
	rows := parseDemoRows(t, stdout)
	var peakLag int64
	for _, r := range rows {
		peakLag = max(peakLag, r.lag)
	}
	if peakLag == 0 || !strings.Contains(stdout, "KEDA activates 0 → 1") {
		t.Errorf("peak lag %d; want the unprefixed leases counted and the app woken:\n%s", peakLag, stdout)
	}
}

// Every replica decision of the demo is explained in EVENTS: whenever the
// count is not the HPA's plain ceil(metric / threshold) (within [1, max]),
// the last decision said why (the HPA's tolerance, the scale-down
// stabilization window, the cooldown period); a count bounded by
// --max-replicas says so; a metric capped by the active partitions says so
// at that partition count. The run (seed 2) has each of these.
func TestDemoExplainsEveryReplicaDecision(t *testing.T) {
	const threshold, maxReplicas = 20, 3
	code, stdout, stderr := runCmd(t, "demo", "--duration", "4s", "--interval", "200ms", "--threshold", "20", "--max-replicas", "3",
		"--cooldown", "600ms", "--scale-down-stabilization", "1s", "--seed", "2")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	rows := parseDemoRows(t, stdout)
	decisionWords := regexp.MustCompile(`HPA: |KEDA |inactive`)
	var lastDecision, lastCap string
	seen := map[string]bool{}
	for i, r := range rows {
		if decisionWords.MatchString(r.events) {
			lastDecision = r.events
		}
		if m := regexp.MustCompile(`metric capped at \d+ active partition\(s\)[^;]*`).FindString(r.events); m != "" {
			lastCap = m
		}
		if r.metric < r.lag {
			seen["cap"] = true
			if !strings.HasPrefix(lastCap, fmt.Sprintf("metric capped at %d active partition(s) × %d = %d", r.partitions, threshold, r.metric)) {
				t.Errorf("row %d: metric %d < lag %d, capped at %d partitions, but the last cap event says %q", i, r.metric, r.lag, r.partitions, lastCap)
			}
		}
		if i == 0 || rows[i-1].replicas == 0 {
			continue // KEDA's activation decides, not the HPA
		}
		if !r.active {
			if r.replicas > 0 {
				seen["cooldown"] = true
				if !strings.Contains(lastDecision, "cooldown period") {
					t.Errorf("row %d: inactive at %d replicas, the last decision %q does not name the cooldown period", i, r.replicas, lastDecision)
				}
			}
			continue
		}
		raw := (r.metric + threshold - 1) / threshold
		if raw > maxReplicas {
			seen["max"] = true
			if r.replicas == maxReplicas && !strings.Contains(lastDecision, "bounded by maxReplicaCount 3") {
				t.Errorf("row %d: ceil(%d / %d) = %d bounded to %d, the last decision %q does not say so", i, r.metric, threshold, raw, maxReplicas, lastDecision)
			}
		}
		if want := min(max(raw, 1), maxReplicas); r.replicas != want {
			switch {
			case strings.Contains(lastDecision, "tolerance"):
				seen["tolerance"] = true
			case strings.Contains(lastDecision, "stabilization window"):
				seen["hold"] = true
			default:
				t.Errorf("row %d: %d replicas where ceil(%d / %d) gives %d, unexplained by the last decision %q", i, r.replicas, r.metric, threshold, want, lastDecision)
			}
		}
	}
	for _, k := range []string{"cap", "cooldown", "max", "tolerance", "hold"} {
		if !seen[k] {
			t.Errorf("the run had no %s decision to check", k)
		}
	}
}

// demo --merge runs on an account with partition merge enabled and merges
// two adjacent ranges after the split: the poll of the merge meets both
// old leases as stale parents, the processor replaces them by EPK leases
// over the old ranges (as the .NET SDK does), and the scaler then reads each
// EPK lease's part of the merged range, counting them as separate active
// partitions; every change is processed. The chart marks the merge.
func TestDemoMerge(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "merge.svg")
	code, stdout, stderr := runCmd(t, "demo", "--merge", "--duration", "3s", "--interval", "200ms", "--threshold", "20", "--chart", chart)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	header, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasSuffix(header, ", partition merge enabled") {
		t.Errorf("the header does not say the account has partition merge enabled: %q", header)
	}
	rows := parseDemoRows(t, stdout)
	mergeRe := regexp.MustCompile(`merge: ranges (\d+), (\d+) → (\d+)`)
	mergedAt, followedAt, epkAt := -1, -1, -1
	var a, b, merged string
	for i, r := range rows {
		if m := mergeRe.FindStringSubmatch(r.events); m != nil && mergedAt < 0 {
			mergedAt, a, b, merged = i, m[1], m[2], m[3]
			if !r.stale || !strings.Contains(r.events, "scaler: 2 stale parent lease(s)") {
				t.Errorf("row %d: the poll of the merge does not meet both old leases as stale parents: %+v", i, r)
			}
		}
		if mergedAt >= 0 && followedAt < 0 && strings.Contains(r.events, fmt.Sprintf("processor: lease(s) %s, %s → EPK lease(s) ", a, b)) &&
			strings.Contains(r.events, "of merged range "+merged) {
			followedAt = i
		}
		if m := regexp.MustCompile(`scaler: 2 EPK lease\(s\) each read their part of the merged range, (\d) of them lagging: (\d) active partition\(s\)`).FindStringSubmatch(r.events); m != nil && epkAt < 0 {
			epkAt = i
			if m[1] != m[2] || r.partitions < int64(m[2][0]-'0') {
				t.Errorf("row %d: %s lagging EPK leases, %s active partitions claimed, %d counted", i, m[1], m[2], r.partitions)
			}
		}
	}
	if mergedAt < 0 || followedAt <= mergedAt || epkAt < followedAt {
		t.Fatalf("merge at row %d, leases followed at %d, EPK leases read at %d; want them in that order", mergedAt, followedAt, epkAt)
	}
	if !strings.Contains(stdout, fmt.Sprintf("  merge              ranges %s, %s → %s; 1 poll(s) saw a stale parent lease (LAG marked *)\n", a, b, merged)) {
		t.Error("the summary does not tell the merge")
	}
	m := regexp.MustCompile(`items written\s+(\d+); processed (\d+); backlog left (\d+)`).FindStringSubmatch(stdout)
	if len(m) != 4 || m[1] != m[2] || m[3] != "0" {
		t.Errorf("summary %q: want every change processed across the merge", m)
	}
	raw, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if elems := parseSVG(t, raw); len(byAttr(elems, "id", "merge")) != 1 || len(byAttr(elems, "id", "split")) != 1 {
		t.Error("the chart does not mark both the split and the merge")
	}

	// Without --merge there is no merge.
	_, stdout, _ = runCmd(t, "demo", "--duration", "1s", "--interval", "200ms")
	if strings.Contains(stdout, "merge") {
		t.Errorf("a merge without --merge:\n%s", stdout)
	}
}

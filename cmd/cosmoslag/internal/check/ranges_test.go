package check

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// checkAgainst runs check for the test ScaledObject (minReplicaCount
// replaced by min) against srv, as a table and as JSON.
func checkAgainst(t *testing.T, srv *cosmostest.Server, min string) (table, stderr string, report checkReport) {
	t.Helper()
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", strings.Replace(clitest.ScaledObjectYAML, "minReplicaCount: 0", "minReplicaCount: "+min, 1))
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	code, table, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, table, stderr)
	}
	code, out, _ := runCmd(t, "check", "-f", so, "--auth", ta, "-o", "json")
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != cli.ExitOK || report.checkEstimate == nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	clitest.AssertNoSecret(t, srv.Key(), table, stderr, out)
	if stderr != "" {
		t.Logf("stderr:\n%s", stderr)
	}
	return table, stderr, report
}

func leaseRowOf(t *testing.T, r checkReport, token string) leaseRow {
	t.Helper()
	for _, l := range r.Leases {
		if l.Token == token {
			return l
		}
	}
	t.Fatalf("no lease %s in %+v", token, r.Leases)
	return leaseRow{}
}

// check labels the leases whose range merged, and those whose range split,
// in the table (a RANGE column naming the live ranges now holding them)
// and in the JSON (rangeChange, liveRanges), on an account with partition
// merge enabled: range-id leases of merged ranges are stale parents
// "merged into" the new range, EPK leases over part of a merged range are
// counted and labelled "part of merged range".
func TestCheckLabelsLeasesWhoseRangeMerged(t *testing.T) {
	t.Run("range-id leases", func(t *testing.T) {
		srv := cosmostest.NewServer(cosmostest.WithPartitionMerge())
		defer srv.Close()
		db := srv.Account.CreateDatabase("shop")
		data := db.CreateContainer("orders", "/pk", 4)
		proc := leasetest.NewWriter("order-projector", data, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
		if _, err := proc.CreateLeases(true); err != nil {
			t.Fatal(err)
		}
		if err := data.WriteItemsToRange("1", 5); err != nil {
			t.Fatal(err)
		}
		left, right, err := data.Split("0")
		if err != nil {
			t.Fatal(err)
		}
		merged, err := data.Merge("2", "3")
		if err != nil {
			t.Fatal(err)
		}
		table, _, r := checkAgainst(t, srv, "1")

		for _, tc := range []struct {
			token, change string
			live          []string
			cell          string
		}{
			{"0", "split", []string{left.ID, right.ID}, "split into " + left.ID + ", " + right.ID},
			{"1", "", nil, "-"},
			{"2", "merged", []string{merged.ID}, "merged into " + merged.ID},
			{"3", "merged", []string{merged.ID}, "merged into " + merged.ID},
		} {
			l := leaseRowOf(t, r, tc.token)
			if l.RangeChange != tc.change || !slices.Equal(l.LiveRanges, tc.live) || l.StaleParent != (tc.change != "") {
				t.Errorf("lease %s: rangeChange %q, liveRanges %q, staleParent %v; want %q, %q", tc.token, l.RangeChange, l.LiveRanges, l.StaleParent, tc.change, tc.live)
			}
			if !regexp.MustCompile(`(?m)^` + tc.token + `\s.*\s` + regexp.QuoteMeta(tc.cell) + `$`).MatchString(table) {
				t.Errorf("lease %s: the table row does not end in %q:\n%s", tc.token, tc.cell, table)
			}
		}
		if !regexp.MustCompile(`(?m)^LEASE .*LAG\s+OLDEST PENDING\s+RANGE$`).MatchString(table) ||
			!strings.Contains(table, "3 stale parent(s) (2 of a merged range, 1 of a split range)") {
			t.Errorf("the table has no RANGE column or does not count the merged and split parents:\n%s", table)
		}
	})

	t.Run("EPK leases over a merged range", func(t *testing.T) {
		srv := cosmostest.NewServer(cosmostest.WithPartitionMerge())
		defer srv.Close()
		db := srv.Account.CreateDatabase("shop")
		data := db.CreateContainer("orders", "/pk", 2)
		proc := leasetest.NewWriter("order-projector", data, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV1)
		tokens, err := proc.CreateLeases(true)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := data.Merge("0", "1")
		if err != nil {
			t.Fatal(err)
		}
		if err := data.WriteItemsToRange(merged.ID, 6); err != nil {
			t.Fatal(err)
		}
		table, _, r := checkAgainst(t, srv, "1")
		for _, token := range tokens {
			l := leaseRowOf(t, r, token)
			if l.RangeChange != "merged" || !slices.Equal(l.LiveRanges, []string{merged.ID}) || l.StaleParent {
				t.Errorf("lease %s: rangeChange %q, liveRanges %q, staleParent %v; want merged into %s, counted", token, l.RangeChange, l.LiveRanges, l.StaleParent, merged.ID)
			}
		}
		if strings.Count(table, "part of merged range "+merged.ID+"\n") != 2 {
			t.Errorf("the table does not label both EPK leases part of merged range %s:\n%s", merged.ID, table)
		}
	})

	// Without a split or merge the table has no RANGE column.
	srv := cosmostest.NewServer()
	defer srv.Close()
	db := srv.Account.CreateDatabase("shop")
	proc := leasetest.NewWriter("order-projector", db.CreateContainer("orders", "/pk", 2), db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	table, _, r := checkAgainst(t, srv, "1")
	if strings.Contains(table, "RANGE") || r.Leases[0].RangeChange != "" {
		t.Errorf("a RANGE column or label without a merge or split:\n%s", table)
	}
}

// check warns, naming minReplicaCount and the consequence, when some (not
// all) of the processor's leases were never checkpointed and the
// ScaledObject can scale to zero: changes on their partitions are not
// counted and would not wake it. The JSON carries the warning and the
// tokens; at minReplicaCount 1 there is no warning.
func TestCheckWarnsWhenSomeLeasesWereNeverCheckpointed(t *testing.T) {
	srv := cosmostest.NewServer()
	defer srv.Close()
	db := srv.Account.CreateDatabase("shop")
	data := db.CreateContainer("orders", "/pk", 3)
	proc := leasetest.NewWriter("order-projector", data, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
	if _, err := proc.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	if err := proc.CatchUp("1"); err != nil { // only lease 1 has checkpointed
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("2", 40); err != nil { // a backlog the scaler cannot see
		t.Fatal(err)
	}
	for _, min := range []string{"0", "1"} {
		table, _, r := checkAgainst(t, srv, min)
		warned := regexp.MustCompile(`(?m)^WARNING  2 of the 3 leases of processor order-projector are not counted: 2 never checkpointed \(no continuation: 0, 2\); ` +
			`minReplicaCount is 0: at zero replicas, changes on their partitions alone will not wake the processor`).MatchString(table)
		var jsonWarned bool
		for _, w := range r.Warnings {
			jsonWarned = jsonWarned || (strings.Contains(w, "never checkpointed") && strings.Contains(w, "minReplicaCount"))
		}
		if want := min == "0"; warned != want || jsonWarned != want {
			t.Errorf("minReplicaCount %s: table warning %v, JSON warning %v (%q); want %v\n%s", min, warned, jsonWarned, r.Warnings, want, table)
		}
		if min == "0" && !slices.Equal(r.NeverCheckpointed, []string{"0", "2"}) {
			t.Errorf("neverCheckpointed %q, want [0 2]", r.NeverCheckpointed)
		}
	}
}

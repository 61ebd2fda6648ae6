package check

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// check shows, per lagging lease, when its oldest pending change was made
// and its age, and the oldest over every lease, in the table and the JSON.
func TestCheckShowsOldestPendingChange(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	srv := clitest.NewTestAccount(t) // lease 0: 7 pending; lease 1: a stale parent
	after := time.Now()
	checkNow = func() time.Time { return time.Now().Add(90 * time.Second) }
	t.Cleanup(func() { checkNow = time.Now })
	dir := t.TempDir()
	so := clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML)
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	t.Setenv("connectionString", srv.ConnectionString())

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, re := range []string{
		`(?m)^LEASE\s+FORMAT\s+MODE\s+OWNER\s+CONTINUATION\s+LAG\s+OLDEST PENDING\s+RANGE$`,
		`(?m)^0\s+v0\s+LatestVersion\s+host-a\s+"0"\s+7\s+1m3[0-3]s\s+-$`,
		`(?m)^1\s+.*stale parent\s+-\s+split into 2, 3$`,
		`(?m)^Oldest pending\s+1m3[0-3]s ago \(lease 0, made \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s:\n%s", re, stdout)
		}
	}

	code, stdout, _ = runCmd(t, "check", "-f", so, "--auth", ta, "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	l := r.Leases[0]
	if l.PendingSince == nil || l.PendingSince.Before(before) || l.PendingSince.After(after) || l.PendingAgeSeconds == nil ||
		*l.PendingAgeSeconds < 90 || *l.PendingAgeSeconds > 93 {
		t.Errorf("lease 0: pendingSince %v, age %v (written between %s and %s)", l.PendingSince, l.PendingAgeSeconds, before, after)
	}
	if r.Leases[1].PendingSince != nil || r.Leases[1].PendingAgeSeconds != nil {
		t.Errorf("the stale parent has a pending change: %+v", r.Leases[1])
	}
	if r.OldestPendingSince == nil || !r.OldestPendingSince.Equal(*l.PendingSince) || r.OldestPendingAgeSeconds == nil ||
		*r.OldestPendingAgeSeconds != *l.PendingAgeSeconds || r.OldestPendingLease != "0" {
		t.Errorf("oldest: %v %v %q", r.OldestPendingSince, r.OldestPendingAgeSeconds, r.OldestPendingLease)
	}
}

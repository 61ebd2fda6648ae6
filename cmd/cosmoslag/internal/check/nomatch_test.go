package check

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// A misspelt processorName matches no lease document: check says so, with
// the processor names the lease container's ids start with, instead of
// calling the processor's leases never checkpointed.
func TestCheckTellsNoLeaseMatchFromNeverCheckpointed(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil { // order-projector: 2 leases, .info, .lock
		t.Fatal(err)
	}
	other := leasetest.NewWriter("payment-projector", data, proc.Leases, "dotnet-v0")
	if _, err := other.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	ta := clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML)
	so := clitest.WriteFile(t, dir, "so.yaml", strings.Replace(clitest.ScaledObjectYAML, "processorName: order-projector", "processorName: order-projecter", 1))

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log("\n" + stdout)
	for _, re := range []string{
		`(?m)^WARNING  no lease document matches processorName "order-projecter": lease container shop/leases holds 8 document\(s\), none a lease of this processor for shop/orders; ` +
			`ids start with other processor names: "order-projector" \(4\), "payment-projector" \(4\); check processorName`,
		`(?m)^No lease document of processor "order-projecter" for shop/orders in shop/leases`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s", re)
		}
	}
	if strings.Contains(stdout, "never checkpointed") {
		t.Errorf("the output calls the leases never checkpointed")
	}

	code, stdout, _ = runCmd(t, "check", "-f", so, "--auth", ta, "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	m := r.NoLeaseMatch
	if m == nil || m.Processor != "order-projecter" || m.Documents != 8 || m.WithProcessorName != 0 || len(m.OtherPrefixes) != 2 ||
		m.OtherPrefixes[0] != (poll.LeasePrefix{Prefix: "order-projector", Documents: 4}) || m.OtherPrefixes[1] != (poll.LeasePrefix{Prefix: "payment-projector", Documents: 4}) || m.Truncated {
		t.Errorf("noLeaseMatch: %+v", m)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], `no lease document matches processorName "order-projecter"`) {
		t.Errorf("warnings: %q", r.Warnings)
	}

	// The right name: leases found, no poll.NoLeaseMatch.
	code, stdout, _ = runCmd(t, "check", "-f", clitest.WriteFile(t, dir, "right.yaml", clitest.ScaledObjectYAML), "--auth", ta, "-o", "json")
	r = checkReport{}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != cli.ExitOK || r.NoLeaseMatch != nil || len(r.Leases) != 2 {
		t.Errorf("right name: exit %d, %v, noLeaseMatch %+v, %d leases", code, err, r.NoLeaseMatch, len(r.Leases))
	}
}

// An empty lease container: the processor has not started.
func TestCheckNoLeaseMatchInAnEmptyContainer(t *testing.T) {
	srv, _, _ := clitest.NewShopAccount(t, 1, "dotnet-v0")
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "check", "-f", clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML), "--auth", clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML))
	want := `WARNING  no lease document matches processorName "order-projector": lease container shop/leases is empty: the processor has not started`
	if code != cli.ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// Leases that name another account host (the processor reached the
// account by another name) match no lease of the scaler's account: the
// prefix shown keeps that host, so the right processor name with a
// foreign host is visible.
func TestCheckNoLeaseMatchShowsAForeignAccountHost(t *testing.T) {
	srv, _, proc := clitest.NewShopAccount(t, 1, "dotnet-v0")
	proc.AccountHost = "orders-westeurope.documents.azure.com"
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	_, stdout, _ := runCmd(t, "check", "-f", clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML), "--auth", clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML), "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	m := r.NoLeaseMatch
	if m == nil || m.Documents != 3 || m.WithProcessorName != 0 || len(m.OtherPrefixes) != 1 ||
		m.OtherPrefixes[0] != (poll.LeasePrefix{Prefix: "order-projectororders-westeurope.documents.azure.com", Documents: 3}) {
		t.Errorf("noLeaseMatch: %+v\n%s", m, stdout)
	}
}

// The processor's leases on another monitored container: the documents
// start with the processor name but none is a lease for this container.
func TestCheckNoLeaseMatchNamesLeasesOfAnotherContainer(t *testing.T) {
	srv, data, proc := clitest.NewShopAccount(t, 1, "dotnet-v0")
	payments := data.Database().CreateContainer("payments", "/pk", 2)
	if _, err := leasetest.NewWriter("order-projector", payments, proc.Leases, "dotnet-v0").CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "check", "-f", clitest.WriteFile(t, dir, "so.yaml", clitest.ScaledObjectYAML), "--auth", clitest.WriteFile(t, dir, "ta.yaml", clitest.TriggerAuthYAML))
	want := `WARNING  no lease document matches processorName "order-projector": lease container shop/leases holds 4 document(s), none a lease of this processor for shop/orders; ` +
		`4 start with "order-projector" and name another container or account (or are its .info and .lock documents); check processorName`
	if code != cli.ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

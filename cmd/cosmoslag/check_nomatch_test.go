package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// A misspelt processorName matches no lease document: check says so, with
// the processor names the lease container's ids start with, instead of
// calling the processor's leases never checkpointed.
func TestCheckTellsNoLeaseMatchFromNeverCheckpointed(t *testing.T) {
	srv, data, proc := newShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil { // order-projector: 2 leases, .info, .lock
		t.Fatal(err)
	}
	other := leasetest.NewWriter("payment-projector", data, proc.Leases, "dotnet-v0")
	if _, err := other.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	ta := writeFile(t, dir, "ta.yaml", triggerAuthYAML)
	so := writeFile(t, dir, "so.yaml", strings.Replace(scaledObjectYAML, "processorName: order-projector", "processorName: order-projecter", 1))

	code, stdout, stderr := runCmd(t, "check", "-f", so, "--auth", ta)
	if code != exitOK {
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
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	m := r.NoLeaseMatch
	if m == nil || m.Processor != "order-projecter" || m.Documents != 8 || m.WithProcessorName != 0 || len(m.OtherPrefixes) != 2 ||
		m.OtherPrefixes[0] != (leasePrefix{"order-projector", 4}) || m.OtherPrefixes[1] != (leasePrefix{"payment-projector", 4}) || m.Truncated {
		t.Errorf("noLeaseMatch: %+v", m)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], `no lease document matches processorName "order-projecter"`) {
		t.Errorf("warnings: %q", r.Warnings)
	}

	// The right name: leases found, no noLeaseMatch.
	code, stdout, _ = runCmd(t, "check", "-f", writeFile(t, dir, "right.yaml", scaledObjectYAML), "--auth", ta, "-o", "json")
	r = checkReport{}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != exitOK || r.NoLeaseMatch != nil || len(r.Leases) != 2 {
		t.Errorf("right name: exit %d, %v, noLeaseMatch %+v, %d leases", code, err, r.NoLeaseMatch, len(r.Leases))
	}
}

// An empty lease container: the processor has not started.
func TestCheckNoLeaseMatchInAnEmptyContainer(t *testing.T) {
	srv, _, _ := newShopAccount(t, 1, "dotnet-v0")
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "check", "-f", writeFile(t, dir, "so.yaml", scaledObjectYAML), "--auth", writeFile(t, dir, "ta.yaml", triggerAuthYAML))
	want := `WARNING  no lease document matches processorName "order-projector": lease container shop/leases is empty: the processor has not started`
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// tune with a misspelt processorName stops after its first sample (exit
// status 3), naming the prefixes the lease container holds, instead of
// waiting its window to say no checkpoint moved.
func TestTuneStopsWhenNoLeaseMatches(t *testing.T) {
	srv, data, proc := newShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("0", 20); err != nil {
		t.Fatal(err)
	}
	samples := 0
	tuneSampled = func(int) { samples++ }
	t.Cleanup(func() { tuneSampled = nil })
	so := writeFile(t, t.TempDir(), "so.yaml", strings.Replace(tuneScaledObject, "processorName: order-projector", "processorName: orderprojector", 1))
	args := []string{"tune", "-f", so, "--set", "connection=" + srv.ConnectionString(), "--window", "1500ms", "--interval", "300ms", "--budget", "30s"}

	code, stdout, stderr := runCmd(t, append(args, "-o", "json")...)
	assertNoSecret(t, srv.Key(), stdout, stderr)
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

// Leases that name another account host (the processor reached the
// account by another name) match no lease of the scaler's account: the
// prefix shown keeps that host, so the right processor name with a
// foreign host is visible.
func TestCheckNoLeaseMatchShowsAForeignAccountHost(t *testing.T) {
	srv, _, proc := newShopAccount(t, 1, "dotnet-v0")
	proc.AccountHost = "orders-westeurope.documents.azure.com"
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	_, stdout, _ := runCmd(t, "check", "-f", writeFile(t, dir, "so.yaml", scaledObjectYAML), "--auth", writeFile(t, dir, "ta.yaml", triggerAuthYAML), "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	m := r.NoLeaseMatch
	if m == nil || m.Documents != 3 || m.WithProcessorName != 0 || len(m.OtherPrefixes) != 1 ||
		m.OtherPrefixes[0] != (leasePrefix{"order-projectororders-westeurope.documents.azure.com", 3}) {
		t.Errorf("noLeaseMatch: %+v\n%s", m, stdout)
	}
}

// The processor's leases on another monitored container: the documents
// start with the processor name but none is a lease for this container.
func TestCheckNoLeaseMatchNamesLeasesOfAnotherContainer(t *testing.T) {
	srv, data, proc := newShopAccount(t, 1, "dotnet-v0")
	payments := data.Database().CreateContainer("payments", "/pk", 2)
	if _, err := leasetest.NewWriter("order-projector", payments, proc.Leases, "dotnet-v0").CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	t.Setenv("connectionString", srv.ConnectionString())
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "check", "-f", writeFile(t, dir, "so.yaml", scaledObjectYAML), "--auth", writeFile(t, dir, "ta.yaml", triggerAuthYAML))
	want := `WARNING  no lease document matches processorName "order-projector": lease container shop/leases holds 4 document(s), none a lease of this processor for shop/orders; ` +
		`4 start with "order-projector" and name another container or account (or are its .info and .lock documents); check processorName`
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// examples/seed.yaml makes the account its comments describe: four ranges
// of shop/orders, the processor's four leases in shop/leases with .info and
// .lock, and the backlog written after the checkpoints.
func TestExampleSeed(t *testing.T) {
	seed, err := ReadSeed(filepath.Join(testhelp.RepoRoot(t), "examples", "seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := cosmostest.NewServer()
	defer srv.Close()
	if err := seed.Apply(srv); err != nil {
		t.Fatal(err)
	}
	orders, ok := srv.Account.Container("shop", "orders")
	if !ok || len(orders.Ranges()) != 4 || len(orders.Items()) != 155 {
		t.Fatalf("shop/orders: found %v, want 4 ranges and 155 items", ok)
	}
	leases, _ := srv.Account.Container("shop", "leases")
	var owned, total int
	for _, doc := range leases.Items() {
		id, _ := doc["id"].(string)
		if !strings.HasPrefix(id, "order-projector") {
			t.Errorf("lease document %q is not the processor's", id)
		}
		if strings.Contains(id, "..") {
			total++
			if doc["Owner"] == "order-projector-7d9f-x2k4q" {
				owned++
			}
		}
	}
	if total != 4 || owned != 2 || len(leases.Items()) != 6 {
		t.Errorf("leases: %d, %d owned, %d documents; want 4, 2 owned, 6 with .info and .lock", total, owned, len(leases.Items()))
	}
}

// A seed's mistakes are refused naming the field or the value: an unknown
// field, what the control API refuses (a lease format), a range the
// container does not have, a negative count.
func TestSeedMistakes(t *testing.T) {
	dir := t.TempDir()
	const containers = "containers:\n  - {database: shop, id: orders, partitionKeyPath: /pk, ranges: 2}\n  - {database: shop, id: leases, partitionKeyPath: /id}\n"
	for _, tc := range []struct{ seed, want string }{
		{"containers:\n  - {database: shop, id: orders, rangez: 2}\n", `unknown field "rangez"`},
		{"containers:\n  - {database: shop, id: orders}\n", `container shop/orders: partitionKeyPath is required`},
		{containers + "processors:\n  - {name: p, database: shop, monitored: orders, leases: leases, format: dotnet-v9}\n", "format must be one of dotnet-v0"},
		{containers + "processors:\n  - {name: p, database: shop, monitored: orders, leases: leases, backlog: [{range: \"7\", items: 1}]}\n", `range "7" is not a physical range of shop/orders ("0" to "1")`},
		{containers + "processors:\n  - {name: p, database: shop, monitored: orders, leases: leases, backlog: [{range: \"0\", items: -1}]}\n", "items must be 0 or more, got -1"},
		{containers + "processors:\n  - {name: p, database: shop, monitored: missing, leases: leases}\n", "missing"},
	} {
		path := filepath.Join(dir, "seed.yaml")
		if err := os.WriteFile(path, []byte(tc.seed), 0o600); err != nil {
			t.Fatal(err)
		}
		seed, err := ReadSeed(path)
		if err == nil {
			srv := cosmostest.NewServer()
			err = seed.Apply(srv)
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("seed\n%s: error %v, want it to say %q", tc.seed, err, tc.want)
		}
	}
}

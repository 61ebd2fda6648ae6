package emulator

import (
	"net/url"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// recreatedAccount is an account's state made anew under the same names: a
// server on the same address with the same key (an account restored or
// redeployed, cosmoslag serve restarted), so every container has new RIDs.
type recreatedAccount struct {
	server    *cosmostest.Server
	monitored *cosmostest.Container
	leases    *cosmostest.Container
	processor *leasetest.Writer
	tokens    []string // the processor's leases
}

// startAccount starts a server (on address, with key, when given) holding
// appdb/orders with ranges physical ranges and appdb/leases, with a
// processor of format whose leases are checkpointed before pending items
// are written to every range.
func startAccount(t *testing.T, address, key string, format leaseFormat, ranges, pending int) *recreatedAccount {
	t.Helper()
	var opts []cosmostest.Option
	if address != "" {
		opts = append(opts, cosmostest.WithAddress(address), cosmostest.WithKey(key))
	}
	srv, err := cosmostest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("appdb")
	a := &recreatedAccount{server: srv, monitored: db.CreateContainer("orders", "/customerId", ranges), leases: db.CreateContainer("leases", "/id", 1)}
	a.processor = leasetest.NewWriter("orders-processor", a.monitored, a.leases, format)
	if a.tokens, err = a.processor.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.monitored.Ranges() {
		if err := a.monitored.WriteItemsToRange(r.ID, pending); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// After an account's databases, containers and leases are deleted and made
// again under the same names (new RIDs, new leases, a new backlog), the
// scaler's next poll reports the new backlog: never "no lag" because the
// RIDs it read before name nothing any more, and never the old leases read
// against the new change feed. For every lease format, with the old leases
// deleted and with them left behind in the lease container.
func TestRecreatedAccountIsEstimatedAfresh(t *testing.T) {
	for _, format := range cosmostest.LeaseFormats {
		for _, leftBehind := range []bool{false, true} {
			if leftBehind && format == cosmostest.JavaV0 {
				continue // its lease ids hold names: the new leases are the old documents
			}
			name := string(format) + "/leases recreated"
			if leftBehind {
				name = string(format) + "/old leases left behind"
			}
			t.Run(name, func(t *testing.T) {
				before := startAccount(t, "", "", format, 4, 30)
				s := newScaler(t, scalerConfig(baseMetadata("changeFeedLagThreshold", "1000"),
					map[string]string{"connection": before.server.ConnectionString()}))
				if got, _ := poll(t, s); got != 4*30 {
					t.Fatalf("before: metric %d, want %d", got, 4*30)
				}
				// The old processor drains its backlog: the leases it leaves
				// behind are checkpointed past the new container's LSNs.
				for _, token := range before.tokens {
					if err := before.processor.CatchUp(token); err != nil {
						t.Fatal(err)
					}
				}
				oldLeases := before.leases.Items()

				u, err := url.Parse(before.server.URL())
				if err != nil {
					t.Fatal(err)
				}
				key := before.server.Key()
				before.server.Close()
				after := startAccount(t, u.Host, key, format, 4, 20)
				if leftBehind {
					for _, doc := range oldLeases {
						if _, err := after.leases.Upsert(doc); err != nil {
							t.Fatal(err)
						}
					}
				}
				if got, _ := poll(t, s); got != 4*20 {
					t.Errorf("after: metric %d, want %d (the new container's backlog)", got, 4*20)
				}
			})
		}
	}
}

package leasetest

import (
	"fmt"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// LaggingLeases sets up the common benchmark and demo shape on an account:
// database "appdb" with a monitored container "orders" of the given number
// of physical ranges, a lease container "leases", and the leases of a .NET
// v0 processor named name, one per range, each checkpointed pending items
// behind the range's end.
func LaggingLeases(a *cosmostest.Account, name string, ranges, pending int) (*Writer, error) {
	db := a.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", ranges)
	p := NewWriter(name, monitored, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
	if _, err := p.CreateLeases(true); err != nil {
		return nil, fmt.Errorf("lagging leases: %w", err)
	}
	for _, r := range monitored.Ranges() {
		if err := monitored.WriteItemsToRange(r.ID, pending); err != nil {
			return nil, fmt.Errorf("lagging leases: %w", err)
		}
	}
	return p, nil
}

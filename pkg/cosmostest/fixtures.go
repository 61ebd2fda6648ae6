package cosmostest

import "fmt"

// LaggingLeases sets up the common benchmark and demo shape: database
// "appdb" with a monitored container "orders" of the given number of
// physical ranges, a lease container "leases", and the leases of a .NET v0
// processor named name, one per range, each checkpointed pending items
// behind the range's end.
func (a *Account) LaggingLeases(name string, ranges, pending int) (*LeaseWriter, error) {
	db := a.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", ranges)
	p := NewLeaseWriter(name, monitored, db.CreateContainer("leases", "/id", 1), DotNetV0)
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

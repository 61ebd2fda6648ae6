package cosmostest

import "fmt"

// LaggingProcessor sets up the common benchmark and demo shape on s: database
// "appdb" with a monitored container "orders" of the given number of physical
// ranges, a lease container "leases", and a .NET v0 processor named name with
// one lease per range, each checkpointed pending items behind the range's end.
func (s *Server) LaggingProcessor(name string, ranges, pending int) (*Processor, error) {
	db := s.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", ranges)
	p := NewProcessor(name, monitored, db.CreateContainer("leases", "/id", 1), DotNetV0)
	if _, err := p.CreateLeases(true); err != nil {
		return nil, fmt.Errorf("lagging processor: %w", err)
	}
	for _, r := range monitored.Ranges() {
		if err := monitored.WriteItemsToRange(r.ID, pending); err != nil {
			return nil, fmt.Errorf("lagging processor: %w", err)
		}
	}
	return p, nil
}

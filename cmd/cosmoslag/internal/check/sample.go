package check

import (
	"errors"
	"fmt"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// The sample account check --emulator runs against: the embedded server
// (not Microsoft's Cosmos DB Emulator) holding a monitored
// container with three physical ranges and a .NET processor's leases,
// checkpointed, then items written after the checkpoints. Lags per lease:
// range 0: 120 (owned by <processor>-1), range 1: 0 (owned by
// <processor>-2), range 2: 35 (unowned).
var sampleBacklog = []struct {
	rangeID string
	items   int
	owner   string // suffix of the processor name; "" = unowned
}{
	{"0", 120, "-1"},
	{"1", 0, "-2"},
	{"2", 35, ""},
}

// startSample starts the embedded server with the trigger's database,
// containers and processor. The caller closes the server.
func startSample(meta map[string]string) (*cosmostest.Server, error) {
	db, coll := meta["databaseId"], meta["containerId"]
	leaseDB, leaseColl, processor := meta["leaseDatabaseId"], meta["leaseContainerId"], meta["processorName"]
	if db == "" || coll == "" || leaseDB == "" || leaseColl == "" || processor == "" {
		return nil, errors.New("--emulator needs databaseId, containerId, leaseDatabaseId, leaseContainerId and processorName in the trigger metadata")
	}
	if db == leaseDB && coll == leaseColl {
		return nil, errors.New("--emulator: the lease container must differ from the monitored container")
	}
	srv := cosmostest.NewServer()
	data := srv.Account.CreateDatabase(db).CreateContainer(coll, "/pk", len(sampleBacklog))
	leases := srv.Account.CreateDatabase(leaseDB).CreateContainer(leaseColl, "/id", 1)
	proc := leasetest.NewWriter(processor, data, leases, "dotnet-v0")
	if err := fillSample(data, proc); err != nil {
		srv.Close()
		return nil, fmt.Errorf("--emulator: preparing the sample: %w", err)
	}
	return srv, nil
}

func fillSample(data *cosmostest.Container, proc *leasetest.Writer) error {
	for _, b := range sampleBacklog {
		if err := data.WriteItemsToRange(b.rangeID, 10); err != nil { // history before the checkpoint
			return err
		}
	}
	if _, err := proc.CreateLeases(true); err != nil {
		return err
	}
	for _, b := range sampleBacklog {
		if b.items > 0 {
			if err := data.WriteItemsToRange(b.rangeID, b.items); err != nil {
				return err
			}
		}
		if b.owner != "" {
			if err := proc.SetOwner(b.rangeID, proc.Name+b.owner); err != nil {
				return err
			}
		}
	}
	return nil
}

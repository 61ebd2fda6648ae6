package check

import (
	"errors"
	"fmt"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/sim"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// The sample account check --emulator runs against: the embedded server
// (not Microsoft's Cosmos DB Emulator) holding a monitored container with
// three physical ranges and a .NET processor's leases, checkpointed, then
// items written after the checkpoints. Lags per lease: range 0: 120 (owned
// by <processor>-1), range 1: 0 (owned by <processor>-2), range 2: 35
// (unowned).
func sampleSeed(db, coll, leaseDB, leaseColl, processor string) *sim.Seed {
	ranges := 3
	return &sim.Seed{
		Containers: []sim.SeedContainer{
			{CreateContainerRequest: control.CreateContainerRequest{Database: db, ID: coll, PartitionKeyPath: "/pk", Ranges: &ranges}, History: 10},
			{CreateContainerRequest: control.CreateContainerRequest{Database: leaseDB, ID: leaseColl, PartitionKeyPath: "/id"}},
		},
		Processors: []sim.SeedProcessor{{
			CreateLeasesRequest: control.CreateLeasesRequest{Name: processor, Database: db, Monitored: coll, LeaseDatabase: leaseDB, Leases: leaseColl, StartFromNow: true},
			Backlog:             []sim.SeedBacklog{{Range: "0", Items: 120, Owner: processor + "-1"}, {Range: "1", Owner: processor + "-2"}, {Range: "2", Items: 35}},
		}},
	}
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
	if err := sampleSeed(db, coll, leaseDB, leaseColl, processor).Apply(srv); err != nil {
		srv.Close()
		return nil, fmt.Errorf("--emulator: preparing the sample: %w", err)
	}
	return srv, nil
}

package azure

// This file is NOT part of the in-tree drop-in: it is what this repository's
// commands read of the estimator beyond an estimate, through the estimator's
// own client (so every kind of credential works alike).

import (
	"context"
	"slices"
)

// CosmosDBPartitionKeyRange is a physical partition of the monitored
// container as the service lists it.
type CosmosDBPartitionKeyRange = cosmosDBPartitionKeyRange

// CosmosDBNeverCheckpointed is the Reason of a CosmosDBSkippedDocument whose
// lease the processor has not checkpointed yet.
const CosmosDBNeverCheckpointed = cosmosDBNeverCheckpointed

// HeldRanges returns the live partition key ranges the estimator's position
// reader holds: after a poll, those of the monitored container when a lease
// is an EPK lease; nil when none are held.
func (e *CosmosDBLagEstimator) HeldRanges() []CosmosDBPartitionKeyRange {
	e.positions.mu.Lock()
	defer e.positions.mu.Unlock()
	return slices.Clone(e.positions.ranges)
}

// ReadRanges reads the monitored container's live partition key ranges
// through the estimator's client (one paged read) and returns what it cost.
func (e *CosmosDBLagEstimator) ReadRanges(ctx context.Context) ([]CosmosDBPartitionKeyRange, CosmosDBCost, error) {
	r := e.positions
	r.mu.Lock()
	defer r.mu.Unlock()
	cost, err := r.load(ctx)
	if err != nil {
		return nil, cost, err
	}
	return slices.Clone(r.ranges), cost, nil
}

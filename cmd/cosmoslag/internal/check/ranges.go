package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/poll"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// What check says beyond the estimate's numbers, from what the estimate
// holds: which leases' ranges merged or split (from the container's live
// ranges), and which of the processor's leases were not counted and why.

// labelRanges labels the leases whose range merged or split. The estimate
// holds the live ranges when a lease is an EPK lease; for a range-id lease
// left a stale parent they are read with the scaler's own client (a failed
// read is a note on notes).
func labelRanges(ctx context.Context, scaler *scalers.AzureCosmosDBScaler, r *checkReport, e *scalers.AzureCosmosDBEstimate, notes func(string)) {
	live := e.LiveRanges
	if live == nil && slices.ContainsFunc(e.Leases, func(l azure.CosmosDBInspectedLease) bool { return l.StaleParent }) {
		ranges, requests, charge, err := scaler.ReadLiveRanges(ctx)
		r.Requests, r.RequestCharge = r.Requests+requests, r.RequestCharge+charge
		if err != nil {
			notes(fmt.Sprintf("leases whose range merged or split are not labelled: %v", err))
			return
		}
		live = ranges
	}
	leases := map[string]azure.CosmosDBLease{}
	for _, l := range e.Leases {
		leases[l.Token] = l.CosmosDBLease
	}
	labelRangeChanges(r.Leases, leases, live)
}

// labelRangeChanges labels the leases whose range merged or split, from the
// container's live ranges: a range-id lease whose range is gone was merged
// when one live range lists it as a parent, split when several do; an EPK
// lease over part of a live range belongs to a merged range (processors cut
// EPK leases at range bounds after a split, never within one), and one
// spanning several live ranges to a split one.
func labelRangeChanges(rows []leaseRow, leases map[string]azure.CosmosDBLease, live []azure.CosmosDBPartitionKeyRange) {
	for i := range rows {
		r := &rows[i]
		l, ok := leases[r.Token]
		if !ok {
			continue
		}
		var holding []string
		if l.EPK {
			exact := false
			for _, pk := range live {
				if pk.MinInclusive < l.Max && l.Min < pk.MaxExclusive {
					holding = append(holding, pk.ID)
					exact = exact || (pk.MinInclusive == l.Min && pk.MaxExclusive == l.Max)
				}
			}
			switch {
			case len(holding) > 1:
				r.RangeChange = "split"
			case len(holding) == 1 && !exact:
				r.RangeChange = "merged"
			}
		} else if r.StaleParent {
			for _, pk := range live {
				if slices.Contains(pk.Parents, r.Token) {
					holding = append(holding, pk.ID)
				}
			}
			switch {
			case len(holding) == 1:
				r.RangeChange = "merged"
			case len(holding) > 1:
				r.RangeChange = "split"
			}
		}
		if r.RangeChange != "" {
			slices.SortFunc(holding, poll.CompareTokens)
			r.LiveRanges = holding
		}
	}
}

// partlyCheckpointedWarning says when some of the processor's leases are
// not counted (never checkpointed, or not decodable) while the ScaledObject
// can scale to zero: changes on their partitions alone never wake it.
// (When no lease is counted, wakeFromZeroWarning says so.)
func partlyCheckpointedWarning(setup *trigger.Setup, r *checkReport, never, other []string) string {
	if setup.Min > 0 || len(never)+len(other) == 0 || len(r.Leases) == 0 {
		return ""
	}
	var parts []string
	if len(never) > 0 {
		parts = append(parts, fmt.Sprintf("%d never checkpointed (no continuation: %s)", len(never), poll.TokenList(never)))
	}
	if len(other) > 0 {
		parts = append(parts, fmt.Sprintf("%d not decodable (%s)", len(other), poll.TokenList(other)))
	}
	return fmt.Sprintf("%d of the %d leases of processor %s are not counted: %s; minReplicaCount is %d: at zero replicas, changes on "+
		"their partitions alone will not wake the processor, however many arrive; set minReplicaCount: 1 until every lease has been checkpointed",
		len(never)+len(other), len(never)+len(other)+len(r.Leases), r.Processor, strings.Join(parts, ", "), setup.Min)
}

package azure

// This file is NOT part of the in-tree drop-in: it is what this repository's
// commands read of the estimator beyond an estimate, through the estimator's
// own client (so every kind of credential works alike).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// CosmosDBLeaseSurveyLimit bounds how many documents ReadLeasePrefixes reads.
const CosmosDBLeaseSurveyLimit = 10000

// CosmosDBNotALeaseID is the prefix under which ReadLeasePrefixes counts
// ids in no lease format.
const CosmosDBNotALeaseID = "(not a lease id)"

// CosmosDBLeasePrefixes is what the lease container holds, by the processor
// name its documents' ids start with: read when an estimate found no
// document of the processor, to tell a misspelt processor name from a
// processor that has not started.
type CosmosDBLeasePrefixes struct {
	Documents int            // documents read
	Prefixes  map[string]int // documents per processor name prefix
	Truncated bool           // stopped after CosmosDBLeaseSurveyLimit documents
}

var errCosmosDBSurveyLimit = errors.New("survey limit reached")

// ReadLeasePrefixes reads the ids of the lease container (SELECT c.id, paged
// through the estimator's lease client, at most CosmosDBLeaseSurveyLimit
// documents) and counts them by processor name prefix: the part of a lease
// id "{prefix}{accountHost}_{dbRid}_{collRid}..{token}" (or ".info",
// ".lock") before the monitored account's name; when the id names another
// account, the prefix keeps its host.
func (e *CosmosDBLagEstimator) ReadLeasePrefixes(ctx context.Context) (CosmosDBLeasePrefixes, CosmosDBCost, error) {
	found := CosmosDBLeasePrefixes{Prefixes: map[string]int{}}
	query, err := json.Marshal(map[string]any{"query": "SELECT c.id FROM c"})
	if err != nil {
		return found, CosmosDBCost{}, err
	}
	database, container := e.names.LeaseDatabase, e.names.LeaseContainer
	req := cosmosDBRequest{operation: "list the ids in " + cosmosDBExcerpt(database) + "/" + cosmosDBExcerpt(container),
		method: http.MethodPost, url: e.leases.url("dbs", database, "colls", container, "docs"), query: query, ok: []int{http.StatusOK},
		header: http.Header{
			"X-Ms-Documentdb-Isquery":                    {"True"},
			"X-Ms-Documentdb-Query-Enablecrosspartition": {"True"},
			"X-Ms-Max-Item-Count":                        {"1000"},
		}}
	account := cosmosDBAccountName(e.data.endpoint.Hostname())
	cost, err := e.leases.sendPages(ctx, req, func(body []byte) error {
		var page struct{ Documents []struct{ ID string } }
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("%s: malformed response body: %w", req.operation, err)
		}
		for _, doc := range page.Documents {
			if found.Documents == CosmosDBLeaseSurveyLimit {
				found.Truncated = true
				return errCosmosDBSurveyLimit
			}
			found.Documents++
			found.Prefixes[cosmosDBLeaseIDPrefix(doc.ID, account)]++
		}
		return nil
	})
	if errors.Is(err, errCosmosDBSurveyLimit) {
		err = nil
	}
	return found, cost, err
}

// cosmosDBLeaseIDPrefix is the processor name a lease id starts with (see
// ReadLeasePrefixes), or CosmosDBNotALeaseID.
func cosmosDBLeaseIDPrefix(id, account string) string {
	name, _, ok := strings.Cut(id, "..")
	for _, suffix := range []string{".info", ".lock"} {
		if !ok {
			name, ok = strings.CutSuffix(id, suffix)
		}
	}
	parts := strings.Split(name, "_")
	if !ok || len(parts) < 3 {
		return CosmosDBNotALeaseID
	}
	head := strings.Join(parts[:len(parts)-2], "_") // the processor name and the account host
	for i := len(head) - len(account); i >= 0 && account != ""; i-- {
		if strings.EqualFold(head[i:i+len(account)], account) {
			return head[:i]
		}
	}
	return head
}

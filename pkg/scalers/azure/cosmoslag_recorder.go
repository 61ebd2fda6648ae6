package azure

// This file is NOT part of the in-tree drop-in (it is named cosmoslag_*.go,
// outside the drop-in's azure_cosmosdb_*.go pattern): it is what this repository's
// commands read of a poll beyond the scaler's estimate. The commands hand the
// scaler a CosmosDBRecorder as its transport; it counts the requests and
// request units and keeps the lease query's pages and each change feed
// read's first change, and Inspect decodes from them what the commands show
// (owners, documents not counted and why, when pending changes were made),
// so that none of it travels through the scaler's own code.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// CosmosDBPartitionKeyRange is a physical partition of the monitored
// container as the service lists it.
type CosmosDBPartitionKeyRange = cosmosDBPartitionKeyRange

// CosmosDBNeverCheckpointed is the Reason of a CosmosDBSkippedDocument whose
// lease the processor has not checkpointed yet.
const CosmosDBNeverCheckpointed = "never checkpointed"

// CosmosDBSkippedDocument is a document of the processor's leases on the
// monitored container that the trigger does not count, and why.
type CosmosDBSkippedDocument struct {
	ID, Token, Reason string
}

// CosmosDBInspectedLease is a counted lease with what the commands show of it.
type CosmosDBInspectedLease struct {
	CosmosDBLeaseLag
	ID, Owner    string
	PendingSince time.Time // when its first pending change was made, if the service said
}

// CosmosDBInspection is one poll as the commands show it.
type CosmosDBInspection struct {
	Leases        []CosmosDBInspectedLease // the estimate's, in its order
	Skipped       []CosmosDBSkippedDocument
	Requests      int64   // tries sent to the accounts, retries included
	RequestCharge float64 // request units they were charged
}

// CosmosDBRecorder is a transport that records what the commands show of
// the requests the scaler sends through it to its accounts.
type CosmosDBRecorder struct {
	Next policy.Transporter

	mu            sync.Mutex
	requests      int64
	requestCharge float64
	leasePages    [][]byte
	firstChanges  map[string]time.Time // by partition key range, EPK bounds and continuation
}

// Do sends req through Next and records it; the body is read and decoded
// before the recorder's lock is taken, so concurrent reads stay concurrent.
func (r *CosmosDBRecorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.Next.Do(req)
	if req.Header.Get("X-Ms-Version") == "" { // not a Cosmos DB request (a token request)
		return resp, err
	}
	var charge float64
	if resp != nil {
		charge, _ = strconv.ParseFloat(resp.Header.Get("X-Ms-Request-Charge"), 64)
	}
	h := req.Header
	query, changeFeed := h.Get("X-Ms-Documentdb-Isquery") != "", h.Get("A-Im") != ""
	var body []byte
	var firstChange time.Time
	if err == nil && resp.StatusCode == http.StatusOK && (query || changeFeed) {
		body, err = io.ReadAll(io.LimitReader(resp.Body, cosmosDBMaxResponseBytes+1))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if changeFeed {
			firstChange = firstChangeTime(body)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.requestCharge += max(charge, 0)
	switch {
	case err != nil || body == nil:
	case query:
		if h.Get("X-Ms-Continuation") == "" { // a new lease query: a split's retry reads them again
			r.leasePages = nil
		}
		r.leasePages = append(r.leasePages, body)
	case !firstChange.IsZero():
		if r.firstChanges == nil {
			r.firstChanges = map[string]time.Time{}
		}
		r.firstChanges[changeKey(h.Get("X-Ms-Documentdb-Partitionkeyrangeid"), h.Get("X-Ms-Start-Epk"), h.Get("If-None-Match"))] = firstChange
	}
	return resp, err
}

// firstChangeTime is when a change feed page's first change was made: its
// _ts, or for all versions and deletes its metadata.crts; zero if unknown.
func firstChangeTime(body []byte) time.Time {
	var page struct {
		Documents []struct {
			TS       int64 `json:"_ts"`
			Metadata *struct {
				CRTS int64 `json:"crts"`
			} `json:"metadata"`
		}
	}
	if json.Unmarshal(body, &page) != nil || len(page.Documents) == 0 {
		return time.Time{}
	}
	seconds := page.Documents[0].TS
	if m := page.Documents[0].Metadata; m != nil && m.CRTS > 0 {
		seconds = m.CRTS
	}
	if seconds <= 0 {
		return time.Time{}
	}
	return time.Unix(seconds, 0)
}

func changeKey(rangeID, minEPK, continuation string) string {
	return rangeID + "|" + minEPK + "|" + continuation
}

// Take returns the requests and request units recorded since the last
// Take, and forgets the recorded pages.
func (r *CosmosDBRecorder) Take() (requests int64, requestCharge float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	requests, requestCharge = r.requests, r.requestCharge
	r.requests, r.requestCharge, r.leasePages, r.firstChanges = 0, 0, nil, nil
	return requests, requestCharge
}

// Inspect decodes what the recorder kept of the poll that made estimate (by
// e), then forgets it.
func (r *CosmosDBRecorder) Inspect(e *CosmosDBLagEstimator, estimate CosmosDBLagEstimate) CosmosDBInspection {
	r.mu.Lock()
	pages, changes := r.leasePages, r.firstChanges
	r.mu.Unlock()
	in := CosmosDBInspection{}
	in.Requests, in.RequestCharge = r.Take()
	e.mu.Lock()
	scope, ranges := e.scope, e.ranges
	e.mu.Unlock()
	type seen struct{ id, owner string }
	counted := map[string]seen{}
	for _, body := range pages {
		documents, err := decodeCosmosDBLeasePage(body)
		if err != nil || scope == nil {
			continue
		}
		owners := cosmosDBOwners(body)
		for _, doc := range documents {
			if container, ok := scope.leaseContainer(doc.ID); !ok || !scope.ownsContainer(container) {
				continue
			}
			if l, ok := doc.lease(); ok {
				counted[l.Token] = seen{doc.ID, owners[doc.ID]}
			} else {
				in.Skipped = append(in.Skipped, CosmosDBSkippedDocument{ID: doc.ID, Token: l.Token, Reason: doc.skipReason()})
			}
		}
	}
	for _, l := range estimate.Leases {
		lease := CosmosDBInspectedLease{CosmosDBLeaseLag: l, ID: counted[l.Token].id, Owner: counted[l.Token].owner}
		if rangeID, minEPK, _, err := cosmosDBTarget(l.CosmosDBLease, ranges); err == nil && l.Lag > 0 {
			lease.PendingSince = changes[changeKey(rangeID, minEPK, l.Continuation)]
		}
		in.Leases = append(in.Leases, lease)
	}
	return in
}

// cosmosDBOwners reads each document's Owner from a lease query page.
func cosmosDBOwners(body []byte) map[string]string {
	var page struct{ Documents []json.RawMessage }
	owners := map[string]string{}
	if json.Unmarshal(body, &page) != nil {
		return owners
	}
	for _, raw := range page.Documents {
		var doc struct {
			ID    string `json:"id"`
			Owner string `json:"Owner"`
		}
		if json.Unmarshal(raw, &doc) == nil {
			owners[doc.ID] = doc.Owner
		}
	}
	return owners
}

// skipReason says why lease() does not count the document.
func (doc cosmosDBLeaseDocument) skipReason() string {
	switch {
	case doc.undecodable:
		return "not decodable"
	case doc.LeaseToken == "" && doc.PartitionID == "":
		return "no lease token"
	case strings.TrimSpace(doc.ContinuationToken) == "":
		return CosmosDBNeverCheckpointed
	case doc.Version != 0 && doc.Version != 1:
		return "unknown version"
	case doc.Version == 1:
		l, _ := doc.epkLease(CosmosDBLease{})
		if !l.EPK {
			return "malformed range"
		}
		if state, ok := decodeCosmosDBJavaState(doc.ContinuationToken); ok && state.token(l.Min) == nil {
			return CosmosDBNeverCheckpointed // or a state without entries
		}
	}
	return "malformed continuation"
}

// HeldRanges returns the live partition key ranges the estimator holds:
// after a poll, those of the monitored container when a lease is an EPK
// lease; nil when none are held.
func (e *CosmosDBLagEstimator) HeldRanges() []CosmosDBPartitionKeyRange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ranges)
}

// ReadRanges reads the monitored container's live partition key ranges
// through the estimator's client (one paged read).
func (e *CosmosDBLagEstimator) ReadRanges(ctx context.Context) ([]CosmosDBPartitionKeyRange, error) {
	return e.loadRanges(ctx)
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
func (e *CosmosDBLagEstimator) ReadLeasePrefixes(ctx context.Context) (CosmosDBLeasePrefixes, error) {
	found := CosmosDBLeasePrefixes{Prefixes: map[string]int{}}
	query, err := json.Marshal(map[string]any{"query": "SELECT c.id FROM c"})
	if err != nil {
		return found, err
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
	err = e.leases.sendPages(ctx, req, func(body []byte) error {
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
	return found, err
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

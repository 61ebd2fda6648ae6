package azure

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// errCosmosDBStaleParent marks a lease whose range split or merged (410/1002,
// or an EPK range spanning several ranges); the processor replaces it.
var errCosmosDBStaleParent = errors.New("lease belongs to a partition key range that split or merged")

// cosmosDBPartitionKeyRange is a physical partition: effective partition keys
// [MinInclusive, MaxExclusive), upper-case hex compared ordinally.
type cosmosDBPartitionKeyRange struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
}

// lag reads at most one change after the lease's checkpoint: none (304 or
// an empty page) is 0, else session LSN - first LSN + 1.
func (e *CosmosDBLagEstimator) lag(ctx context.Context, l CosmosDBLease, ranges []cosmosDBPartitionKeyRange, containerRID string, place *cosmosDBPlace) (CosmosDBLeaseLag, error) {
	result := CosmosDBLeaseLag{CosmosDBLease: l}
	rangeID, minEPK, maxEPK, err := cosmosDBTarget(l, ranges)
	if err != nil {
		return result, fmt.Errorf("lease %s: %w", cosmosDBExcerpt(l.Token), err)
	}
	read := changeFeedRequest(e.docs, l, rangeID, minEPK, maxEPK)
	read.container, read.place = e.container, place // the poll took the place
	resp, err := e.data.send(ctx, read)
	if isCosmosDBRangeGone(err) {
		err = fmt.Errorf("%w: %w", errCosmosDBStaleParent, err)
	}
	if answered := resp.header.Get("X-Ms-Content-Path"); err == nil && !isCosmosDBResourceOf(answered, containerRID) {
		err = fmt.Errorf("%w: the change feed was answered by container %s, not %s", errCosmosDBContainerChanged, cosmosDBExcerpt(answered), containerRID)
	}
	if err == nil && resp.status == http.StatusOK {
		result.Lag, err = cosmosDBLag(resp, l.AllVersionsAndDeletes, rangeID)
	}
	if err != nil {
		return result, fmt.Errorf("lease %s (partition key range %s): %w", cosmosDBExcerpt(l.Token), rangeID, err)
	}
	return result, nil
}

// cosmosDBTarget is the range a lease is read through, and EPK bounds when
// an EPK lease covers only part of that range.
func cosmosDBTarget(l CosmosDBLease, ranges []cosmosDBPartitionKeyRange) (rangeID, minEPK, maxEPK string, err error) {
	if !l.EPK {
		return l.Token, "", "", nil
	}
	var covering []cosmosDBPartitionKeyRange
	for _, pk := range ranges {
		if pk.MinInclusive < l.Max && l.Min < pk.MaxExclusive {
			covering = append(covering, pk)
		}
	}
	switch {
	case len(covering) == 0:
		return "", "", "", fmt.Errorf("no physical partition key range covers EPK range [%s, %s)", l.Min, l.Max)
	case len(covering) > 1:
		return "", "", "", fmt.Errorf("%w: EPK range [%s, %s) spans %d physical ranges", errCosmosDBStaleParent, l.Min, l.Max, len(covering))
	case covering[0].MinInclusive == l.Min && covering[0].MaxExclusive == l.Max:
		return covering[0].ID, "", "", nil
	}
	return covering[0].ID, l.Min, l.Max, nil
}

// loadRanges reads every page of ranges, less those a split or merge replaced.
func (e *CosmosDBLagEstimator) loadRanges(ctx context.Context) ([]cosmosDBPartitionKeyRange, error) {
	operation := fmt.Sprintf("read partition key ranges of %s/%s", e.names.Database, e.names.Container)
	var all []cosmosDBPartitionKeyRange
	err := e.data.sendPages(ctx, cosmosDBRequest{operation: operation, method: http.MethodGet,
		url: e.data.url("dbs", e.names.Database, "colls", e.names.Container, "pkranges"), header: http.Header{}, ok: []int{http.StatusOK}, container: e.container}, func(body []byte) error {
		var page struct{ PartitionKeyRanges []cosmosDBPartitionKeyRange }
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("%s: malformed response body: %w", operation, err)
		}
		all = append(all, page.PartitionKeyRanges...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	replaced := map[string]bool{}
	for _, pk := range all {
		for _, parent := range pk.Parents {
			replaced[parent] = true
		}
	}
	live := slices.DeleteFunc(all, func(pk cosmosDBPartitionKeyRange) bool { return replaced[pk.ID] })
	if len(live) == 0 {
		return nil, errors.New(operation + ": the service listed no ranges")
	}
	return live, nil
}

// changeFeedRequest reads one change of a range from the lease's
// continuation, in the mode its processor reads, within EPK bounds if given.
func changeFeedRequest(docs string, l CosmosDBLease, rangeID, minEPK, maxEPK string) cosmosDBRequest {
	h := http.Header{
		"A-Im":                                {"Incremental feed"},
		"If-None-Match":                       {l.Continuation},
		"X-Ms-Max-Item-Count":                 {"1"},
		"X-Ms-Documentdb-Partitionkeyrangeid": {rangeID},
	}
	if l.AllVersionsAndDeletes {
		// As the SDKs send it; the wire format gives each change its metadata.
		h["A-Im"] = []string{"Full-Fidelity Feed"}
		h["X-Ms-Cosmos-Changefeed-Wire-Format-Version"] = []string{"2021-09-15"}
	}
	if minEPK != "" || maxEPK != "" {
		h["X-Ms-Read-Key-Type"] = []string{"EffectivePartitionKeyRange"}
		h["X-Ms-Start-Epk"] = []string{minEPK}
		h["X-Ms-End-Epk"] = []string{maxEPK}
	}
	return cosmosDBRequest{operation: "read change feed", method: http.MethodGet, url: docs, header: h, ok: []int{http.StatusOK, http.StatusNotModified}}
}

// cosmosDBLag is a page's lag. For all versions and deletes metadata.lsn
// counts: a delete has no item, and an item's _lsn is its latest version's.
func cosmosDBLag(resp cosmosDBResponse, allVersionsAndDeletes bool, rangeID string) (int64, error) {
	var page struct {
		Documents []struct {
			LSN      json.RawMessage `json:"_lsn"`
			Metadata *struct {
				LSN json.RawMessage `json:"lsn"`
			} `json:"metadata"`
		}
	}
	if err := json.Unmarshal(resp.body, &page); err != nil {
		return 0, fmt.Errorf("read change feed: malformed response body: %w", err)
	}
	if len(page.Documents) == 0 {
		return 0, nil
	}
	change, field := page.Documents[0], "_lsn"
	raw := change.LSN
	if allVersionsAndDeletes {
		if change.Metadata == nil {
			return 0, errors.New("read change feed: first change has no metadata")
		}
		raw, field = change.Metadata.LSN, "metadata.lsn"
	}
	first, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || first < 0 {
		return 0, fmt.Errorf("read change feed: first change's %s is not a non-negative 64-bit integer", field)
	}
	session, err := cosmosDBSessionLSN(resp.header.Get("X-Ms-Session-Token"), rangeID)
	switch {
	case err != nil:
		return 0, fmt.Errorf("read change feed: %w", err)
	case session < first:
		return 0, nil // the service's view is behind the change it served
	}
	return min(session-first, math.MaxInt64-1) + 1, nil
}

// cosmosDBSessionLSN reads the LSN from x-ms-session-token entries
// "{rangeId}:{token}", token "12345", "-1#12345" or "1#12345#1=12340".
func cosmosDBSessionLSN(header, rangeID string) (int64, error) {
	entries := strings.Split(header, ",")
	entry := strings.TrimSpace(entries[0]) // a single entry is the range read
	for _, e := range entries[1:] {
		if e = strings.TrimSpace(e); strings.HasPrefix(e, rangeID+":") {
			entry = e
		}
	}
	_, token, ok := strings.Cut(entry, ":")
	switch {
	case entry == "":
		return 0, errors.New("response has no x-ms-session-token")
	case len(entries) > 1 && !strings.HasPrefix(entry, rangeID+":"):
		return 0, fmt.Errorf("session token lists no entry for partition key range %s", rangeID)
	case !ok:
		return 0, errors.New("malformed session token: no range id")
	}
	field, rest, versioned := strings.Cut(token, "#")
	if versioned {
		field, _, _ = strings.Cut(rest, "#")
	}
	lsn, err := strconv.ParseInt(field, 10, 64)
	if err != nil || lsn < 0 {
		return 0, errors.New("malformed session token: LSN is not a non-negative 64-bit integer")
	}
	return lsn, nil
}

// isCosmosDBResourceOf reports whether the resource an answer names in
// x-ms-content-path (a feed names its container, an item itself) lies under
// the container: a RID's bytes begin with its container's. An answer that
// names none, or no RID, is taken as the container's.
func isCosmosDBResourceOf(rid, containerRID string) bool {
	decode := func(s string) []byte {
		b, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "-", "/"))
		return b
	}
	answered, container := decode(rid), decode(containerRID)
	return len(answered) == 0 || len(container) == 0 || bytes.HasPrefix(answered, container)
}

package changefeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// ErrStaleParent marks a lease whose partition key range split or merged:
// the service answered 410 Gone with substatus 1002 for it, or its EPK range
// now spans more than one physical range. The processor replaces such a
// lease with child leases the next time one of its replicas runs.
var ErrStaleParent = errors.New("lease belongs to a partition key range that split or merged")

// Reader reads lease positions in the monitored container's change feed.
type Reader struct {
	client *rest.Client
	feed   *rest.Resource // the container's docs feed, built once: every lease read uses it
	ranges *rangeCache
}

// NewReader returns a Reader for the monitored container on the data account.
func NewReader(data *rest.Client, database, container string) *Reader {
	return &Reader{
		client: data,
		feed:   data.Resource("dbs", database, "colls", container, "docs"),
		ranges: &rangeCache{client: data, database: database, container: container},
	}
}

// target says which physical range (and, for a strict sub-range, which EPK
// bounds) a lease is read through.
type target struct {
	rangeID  string
	min, max string // set only for an EPK sub-range read
}

// Lag estimates the pending change feed work of one lease with exactly one
// read of at most one item from its checkpoint: 304 or no item is 0;
// otherwise the session LSN minus the first pending item's LSN, plus one.
// A split or merge is reported as ErrStaleParent (wrapped with the lease).
func (r *Reader) Lag(ctx context.Context, l lease.Lease) (int64, error) {
	var lag int64
	err := r.read(ctx, l, oneItem, func(body []byte, sessionToken, rangeID string) (err error) {
		lag, err = lagOfPage(body, sessionToken, rangeID, l.Mode)
		return err
	})
	return lag, err
}

// Changes is what one read of a lease's change feed returned.
type Changes struct {
	Count int   // changes read, at most the number asked for; 0 when nothing follows the continuation
	Last  int64 // the LSN of the last change: the continuation to checkpoint
}

// Read reads at most maxItems changes after the lease's continuation, in
// the lease's mode, as a change feed processor does for the range the lease
// covers (cosmoslag's simulated processor drains its backlog with it).
func (r *Reader) Read(ctx context.Context, l lease.Lease, maxItems int) (Changes, error) {
	var c Changes
	err := r.read(ctx, l, []string{strconv.Itoa(maxItems)}, func(body []byte, _, _ string) (err error) {
		c.Count, c.Last, err = pageLSN(body, l.Mode, true)
		return err
	})
	return c, err
}

// read sends one change feed read of at most maxItems changes from the
// lease's continuation to the range it resolves to, and hands a page (not a
// 304) to onPage. A split or merge is reported as ErrStaleParent; every
// error names the lease.
func (r *Reader) read(ctx context.Context, l lease.Lease, maxItems []string, onPage func(body []byte, sessionToken, rangeID string) error) error {
	t, err := r.resolve(ctx, l)
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.Token, err)
	}
	if err := r.readRange(ctx, l, t, maxItems, onPage); err != nil {
		if rest.IsPartitionGone(err) {
			// The range list is now known to be stale; the split retry reads it anew.
			r.ranges.invalidate()
			err = fmt.Errorf("%w: %w", ErrStaleParent, err)
		}
		return fmt.Errorf("lease %s (partition key range %s): %w", l.Token, t.rangeID, err)
	}
	return nil
}

func (r *Reader) resolve(ctx context.Context, l lease.Lease) (target, error) {
	if !l.EPK {
		return target{rangeID: l.Token}, nil
	}
	ranges, version, err := r.ranges.get(ctx)
	if err != nil {
		return target{}, err
	}
	covering := overlapping(ranges, l.Min, l.Max)
	if len(covering) != 1 {
		// The cached list may predate a merge; confirm before calling it stale.
		if ranges, _, err = r.ranges.refresh(ctx, version); err != nil {
			return target{}, err
		}
		covering = overlapping(ranges, l.Min, l.Max)
	}
	switch {
	case len(covering) == 0:
		return target{}, fmt.Errorf("no physical partition key range covers EPK range [%s, %s)", l.Min, l.Max)
	case len(covering) > 1:
		return target{}, fmt.Errorf("%w: EPK range [%s, %s) spans %d physical ranges", ErrStaleParent, l.Min, l.Max, len(covering))
	}
	pk := covering[0]
	if pk.MinInclusive == l.Min && pk.MaxExclusive == l.Max {
		return target{rangeID: pk.ID}, nil
	}
	return target{rangeID: pk.ID, min: l.Min, max: l.Max}, nil
}

var (
	incrementalFeed = []string{"Incremental feed"}
	oneItem         = []string{"1"}
	epkRangeKey     = []string{"EffectivePartitionKeyRange"}
	// An all-versions-and-deletes read is what the SDKs send for
	// ChangeFeedMode.AllVersionsAndDeletes: A-IM "Full-Fidelity Feed" and the
	// wire format that separates each change's metadata from its item
	// (.NET ChangeFeedModeFullFidelity, Java ChangeFeedStateV1.populateRequest,
	// JS request.ts). Without the wire format version the service answers in
	// an older shape.
	fullFidelityFeed     = []string{"Full-Fidelity Feed"}
	fullFidelityWireForm = []string{"2021-09-15"}
)

// latestVersionPage is a latest-version page: items carry their LSN in _lsn.
type latestVersionPage struct {
	Documents []struct {
		LSN json.RawMessage `json:"_lsn"`
	} `json:"Documents"`
}

// allVersionsPage is an all-versions-and-deletes page: each element is a
// change ({"current", "previous", "metadata"}) whose LSN is metadata.lsn. A
// delete has no item to take an _lsn from, and an item's own _lsn would be
// that of its latest version, not of this change.
type allVersionsPage struct {
	Documents []struct {
		Metadata *struct {
			LSN json.RawMessage `json:"lsn"`
		} `json:"metadata"`
	} `json:"Documents"`
}

func (r *Reader) readRange(ctx context.Context, l lease.Lease, t target, maxItems []string, onPage func(body []byte, sessionToken, rangeID string) error) error {
	req, err := r.client.NewRequest(ctx, http.MethodGet, r.feed)
	if err != nil {
		return err
	}
	// Canonical header names: Set stores them as they are instead of
	// allocating a canonicalised copy per request (the wire is the same).
	// Constant values share one slice across requests; nothing mutates a
	// header value in place.
	h := req.Raw().Header
	if l.Mode == lease.AllVersionsAndDeletes {
		h["A-Im"] = fullFidelityFeed
		h["X-Ms-Cosmos-Changefeed-Wire-Format-Version"] = fullFidelityWireForm
	} else {
		h["A-Im"] = incrementalFeed
	}
	h.Set("If-None-Match", l.Continuation)
	h["X-Ms-Max-Item-Count"] = maxItems
	h.Set("X-Ms-Documentdb-Partitionkeyrangeid", t.rangeID)
	if t.min != "" || t.max != "" {
		h["X-Ms-Read-Key-Type"] = epkRangeKey
		h.Set("X-Ms-Start-Epk", t.min)
		h.Set("X-Ms-End-Epk", t.max)
	}
	const operation = "read change feed"
	resp, err := r.client.Do(req, operation, http.StatusOK, http.StatusNotModified)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotModified {
		resp.Body.Close()
		return nil
	}
	body, err := rest.ReadBody(resp, operation)
	if err != nil {
		return err
	}
	if err := onPage(body, resp.Header.Get("X-Ms-Session-Token"), t.rangeID); err != nil {
		return fmt.Errorf("%s: %w", operation, err)
	}
	return nil
}

// lagOfPage computes a lease's lag from a change feed page read from its
// checkpoint in the processor's mode: 0 for an empty page, else
// sessionLSN - firstLSN + 1 (0 when the session is behind the change),
// saturating at MaxInt64. firstLSN is the first item's _lsn in latest-version
// mode and the first change's metadata.lsn in all-versions-and-deletes mode.
func lagOfPage(body []byte, sessionToken, rangeID string, mode lease.Mode) (int64, error) {
	n, first, err := pageLSN(body, mode, false)
	if err != nil || n == 0 {
		return 0, err
	}
	session, err := SessionLSN(sessionToken, rangeID)
	if err != nil {
		return 0, err
	}
	if session < first {
		return 0, nil // the service's view is behind the change it served: nothing countable
	}
	if session-first == math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return session - first + 1, nil
}

// pageLSN decodes a page and returns how many changes it holds and the LSN
// of its first change, or with last of its last one: the item's _lsn in
// latest-version mode, the change's metadata.lsn in all-versions-and-deletes
// mode.
func pageLSN(body []byte, mode lease.Mode, last bool) (n int, lsn int64, err error) {
	which := "first"
	if last {
		which = "last"
	}
	if mode == lease.AllVersionsAndDeletes {
		var page allVersionsPage
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, 0, fmt.Errorf("malformed response body: %w", err)
		}
		if n = len(page.Documents); n == 0 {
			return 0, 0, nil
		}
		change := page.Documents[0]
		if last {
			change = page.Documents[n-1]
		}
		if change.Metadata == nil {
			return 0, 0, fmt.Errorf("%s change has no metadata", which)
		}
		if lsn, err = parseLSN(change.Metadata.LSN, "metadata.lsn"); err != nil {
			return 0, 0, fmt.Errorf("%s change: %w", which, err)
		}
		return n, lsn, nil
	}
	var page latestVersionPage
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, 0, fmt.Errorf("malformed response body: %w", err)
	}
	if n = len(page.Documents); n == 0 {
		return 0, 0, nil
	}
	item := page.Documents[0]
	if last {
		item = page.Documents[n-1]
	}
	if lsn, err = parseLSN(item.LSN, "_lsn"); err != nil {
		return 0, 0, fmt.Errorf("%s item: %w", which, err)
	}
	return n, lsn, nil
}

// parseLSN reads an LSN, a JSON number, refusing anything that is not a
// non-negative 64-bit integer rather than wrapping it. field names it in errors.
func parseLSN(raw json.RawMessage, field string) (int64, error) {
	if len(raw) == 0 {
		return 0, fmt.Errorf("no %s", field)
	}
	lsn, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || lsn < 0 {
		return 0, fmt.Errorf("%s is not a non-negative 64-bit integer", field)
	}
	return lsn, nil
}

package changefeed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// PartitionKeyRange is one physical partition of a container as pkranges
// lists it, covering effective partition keys [MinInclusive, MaxExclusive).
// EPKs are upper-case hex strings compared ordinally, with "" the lowest and
// "FF" the highest. Parents names the ranges a split or merge replaced.
type PartitionKeyRange struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
}

// rangeCache holds the container's physical ranges across polls. It is
// refreshed only when a lease shows it may be stale, with If-None-Match so
// an unchanged topology costs a 304.
type rangeCache struct {
	client              *rest.Client
	database, container string

	mu      sync.Mutex
	ranges  []PartitionKeyRange
	etag    string
	version uint64 // bumped on every change, so concurrent refreshes coalesce
}

// get returns the cached ranges, loading them on first use.
func (c *rangeCache) get(ctx context.Context) ([]PartitionKeyRange, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == 0 {
		if err := c.load(ctx); err != nil {
			return nil, 0, err
		}
	}
	return c.ranges, c.version, nil
}

// refresh reloads the ranges unless another caller already did since seen.
func (c *rangeCache) refresh(ctx context.Context, seen uint64) ([]PartitionKeyRange, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == seen {
		if err := c.load(ctx); err != nil {
			return nil, 0, err
		}
	}
	return c.ranges, c.version, nil
}

// invalidate makes the next get reload (used after a 410 for a range id).
func (c *rangeCache) invalidate() {
	c.mu.Lock()
	c.version, c.etag = 0, ""
	c.mu.Unlock()
}

func (c *rangeCache) load(ctx context.Context) error {
	operation := fmt.Sprintf("read partition key ranges of %s/%s", account.Excerpt(c.database), account.Excerpt(c.container))
	var all []PartitionKeyRange
	pkranges := c.client.Resource("dbs", c.database, "colls", c.container, "pkranges")
	etag, continuation := c.etag, ""
	for {
		req, err := c.client.NewRequest(ctx, http.MethodGet, pkranges)
		if err != nil {
			return err
		}
		if etag != "" && continuation == "" {
			req.Raw().Header.Set("If-None-Match", etag)
		}
		if continuation != "" {
			req.Raw().Header.Set("x-ms-continuation", continuation)
		}
		resp, err := c.client.Do(req, operation, http.StatusOK, http.StatusNotModified)
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusNotModified {
			resp.Body.Close()
			if c.version == 0 {
				c.version = 1
			}
			return nil
		}
		var page struct {
			Ranges []PartitionKeyRange `json:"PartitionKeyRanges"`
		}
		continuation = resp.Header.Get("x-ms-continuation")
		newEtag := resp.Header.Get("etag")
		if err := rest.DecodeJSON(resp, operation, &page); err != nil {
			return err
		}
		all = append(all, page.Ranges...)
		if continuation == "" {
			etag = newEtag
			break
		}
	}
	live := withoutParents(all)
	if len(live) == 0 {
		return errors.New(operation + ": the service listed no ranges")
	}
	c.ranges, c.etag = live, etag
	c.version++
	return nil
}

// withoutParents drops ranges that another listed range names as a parent:
// a feed of ranges may still list the ranges a split or merge replaced.
func withoutParents(ranges []PartitionKeyRange) []PartitionKeyRange {
	replaced := map[string]bool{}
	for _, r := range ranges {
		for _, p := range r.Parents {
			replaced[p] = true
		}
	}
	live := make([]PartitionKeyRange, 0, len(ranges))
	for _, r := range ranges {
		if !replaced[r.ID] {
			live = append(live, r)
		}
	}
	return live
}

// overlapping returns the ranges that intersect [min, max).
func overlapping(ranges []PartitionKeyRange, min, max string) []PartitionKeyRange {
	var out []PartitionKeyRange
	for _, r := range ranges {
		if r.MinInclusive < max && min < r.MaxExclusive {
			out = append(out, r)
		}
	}
	return out
}

package cosmostest

import (
	"encoding/json"
	"time"
)

// The all-versions-and-deletes (AVAD) change log: every create, replace,
// delete and TTL expiry of a container, each with its own LSN, which
// allversions.go serves.

// changeLogRetention is how many changes a container keeps; older ones are
// dropped, like changes past the retention of a real container's change feed
// policy. It bounds a long-running server's memory.
const changeLogRetention = 100_000

// Change operation types as the 2021-09-15 wire format spells them.
const (
	opCreate  = "create"
	opReplace = "replace"
	opDelete  = "delete"
)

// change is one entry of a container's change log.
type change struct {
	op          string
	lsn         int64
	previousLSN int64 // the LSN of the version this change replaced or deleted; 0 on creates
	epk         string
	crts        int64
	ttlExpired  bool
	id          string
	pk          any            // partition key value, for a delete's metadata
	current     map[string]any // the stored item after the change; nil on deletes
	encoded     json.RawMessage
}

// logChangeLocked appends a change. The stored item documents are never
// changed in place (every write stores a new map), so the log shares them.
func (c *Container) logChangeLocked(ch *change) {
	if ch.crts == 0 {
		ch.crts = time.Now().Unix()
	}
	if len(c.changes) >= changeLogRetention {
		kept := make([]*change, len(c.changes)-changeLogRetention/2, changeLogRetention)
		copy(kept, c.changes[changeLogRetention/2:])
		c.changes = kept
	}
	c.changes = append(c.changes, ch)
}

// ExpireItem removes the item as its time to live would: the
// all-versions-and-deletes feed shows a delete with timeToLiveExpired true.
// Like every write it advances its range's LSN. The server has no clock for
// TTLs: tests and demos expire items when they choose.
func (c *Container) ExpireItem(id string) bool {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	return c.removeLocked(id, true)
}

package cosmostest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Errors of item writes; the REST handlers map them to status codes.
var (
	errConflict      = errors.New("cosmostest: an item with this id already exists")
	errNotFound      = errors.New("cosmostest: item not found")
	errInvalidItem   = errors.New("cosmostest: invalid item")
	errPKMismatch    = errors.New("the partition key in the header does not match the document's")
	errPKUndefinable = errors.New("cannot generate distinct items for a container partitioned by /id with one partition key value")
)

// Upsert stores doc as the latest version of the item with its "id",
// advancing the LSN of the physical range that owns the item's partition
// key. It sets _rid, _self, _etag, _attachments, _ts and _lsn and returns
// the stored document.
func (c *Container) Upsert(doc map[string]any) (map[string]any, error) {
	cp, err := copyDoc(doc)
	if err != nil {
		return nil, err
	}
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	return c.writeLocked(cp, writeUpsert)
}

// Get returns the stored item with that id, including system properties and _lsn.
func (c *Container) Get(id string) (map[string]any, bool) {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	it, ok := c.items[id]
	if !ok {
		return nil, false
	}
	return mustCopy(it.doc), true
}

// Delete removes the item; like every write it advances its range's LSN.
// Deleted items do not appear in the latest-version change feed; the
// all-versions-and-deletes feed shows the delete.
func (c *Container) Delete(id string) bool {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	return c.deleteLocked(id)
}

// Items returns every stored item, ordered by id.
func (c *Container) Items() []map[string]any {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]map[string]any, 0, len(c.items))
	for _, it := range c.sortedItemsLocked() {
		out = append(out, mustCopy(it.doc))
	}
	return out
}

// WriteItems writes n new items whose partition key is partitionKey. Ids are
// generated ("item-00000001", …) and never reuse an existing id.
func (c *Container) WriteItems(partitionKey string, n int) error {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.pkRaw == "/id" && n > 1 {
		return fmt.Errorf("write %d items to %s: %w", n, c.id, errPKUndefinable)
	}
	for i := 0; i < n; i++ {
		id := c.nextItemIDLocked()
		if c.pkRaw == "/id" {
			id = partitionKey
		}
		doc := map[string]any{"id": id, "seq": float64(c.genSeq)}
		setPath(doc, c.pkPath, partitionKey)
		if _, err := c.writeLocked(doc, writeUpsert); err != nil {
			return fmt.Errorf("write item %d of %d to %s: %w", i+1, n, c.id, err)
		}
	}
	return nil
}

// WriteItemsToRange writes n new items whose EPK falls in the live range.
// Their partition key values are generated ("pk-17", …) by trying values
// until one hashes into the range.
func (c *Container) WriteItemsToRange(rangeID string, n int) error {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	r := c.liveRangeLocked(rangeID)
	if r == nil {
		return fmt.Errorf("write items to range %q of %s: %w", rangeID, c.id, ErrRangeNotFound)
	}
	for i := 0; i < n; i++ {
		pk, ok := c.partitionKeyForRangeLocked(r)
		if !ok {
			return fmt.Errorf("write items to range %q of %s: no partition key value found for [%q, %q)", rangeID, c.id, r.min, r.max)
		}
		id := c.nextItemIDLocked()
		if c.pkRaw == "/id" {
			id = pk
		}
		doc := map[string]any{"id": id, "seq": float64(c.genSeq)}
		setPath(doc, c.pkPath, pk)
		if _, err := c.writeLocked(doc, writeUpsert); err != nil {
			return fmt.Errorf("write item %d of %d to range %q of %s: %w", i+1, n, rangeID, c.id, err)
		}
	}
	return nil
}

// PartitionKeyForRange returns a partition key value (a string such as
// "pk-17", never returned twice) whose items land in the live range, so a
// client can write into a chosen physical partition over REST.
func (c *Container) PartitionKeyForRange(rangeID string) (string, error) {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	r := c.liveRangeLocked(rangeID)
	if r == nil {
		return "", fmt.Errorf("partition key for range %q of %s: %w", rangeID, c.id, ErrRangeNotFound)
	}
	pk, ok := c.partitionKeyForRangeLocked(r)
	if !ok {
		return "", fmt.Errorf("partition key for range %q of %s: no value found for [%q, %q)", rangeID, c.id, r.min, r.max)
	}
	return pk, nil
}

// partitionKeyForRangeLocked returns a fresh partition key value whose EPK
// falls in r. Values tried on the way that hash into other ranges are kept
// for those ranges, so filling every range of a container with thousands of
// ranges costs about one hash per item instead of one per range per item.
func (c *Container) partitionKeyForRangeLocked(r *pkRange) (string, bool) {
	if c.sparePKs == nil {
		c.sparePKs = map[string][]string{}
	}
	for spares := c.sparePKs[r.id]; len(spares) > 0; spares = c.sparePKs[r.id] {
		pk := spares[len(spares)-1]
		c.sparePKs[r.id] = spares[:len(spares)-1]
		if epkInRange(epkOf(pk), r.min, r.max) { // ranges may have split since
			return pk, true
		}
	}
	for tries := 0; tries <= 1<<22; tries++ {
		c.genSeq++
		pk := fmt.Sprintf("pk-%d", c.genSeq)
		epk := epkOf(pk)
		if epkInRange(epk, r.min, r.max) {
			return pk, true
		}
		if other := c.rangeForEPKLocked(epk); len(c.sparePKs[other.id]) < 8 {
			c.sparePKs[other.id] = append(c.sparePKs[other.id], pk)
		}
	}
	return "", false
}

func (c *Container) nextItemIDLocked() string {
	for {
		c.genSeq++
		id := fmt.Sprintf("item-%08d", c.genSeq)
		if _, taken := c.items[id]; !taken {
			return id
		}
	}
}

type writeMode int

const (
	writeUpsert writeMode = iota
	writeCreate
	writeReplace
)

// writeLocked stores doc (a private copy) as the newest version of its item.
func (c *Container) writeLocked(doc map[string]any, mode writeMode) (map[string]any, error) {
	id, ok := doc["id"].(string)
	if !ok || id == "" {
		return nil, fmt.Errorf("%w: the document needs a non-empty string \"id\"", errInvalidItem)
	}
	if strings.ContainsAny(id, "/\\?#") {
		return nil, fmt.Errorf("%w: the id %q contains one of the characters / \\ ? #", errInvalidItem, id)
	}
	pk := getPath(doc, c.pkPath)
	epk := epkOf(pk)
	old, exists := c.items[id]
	switch {
	case mode == writeCreate && exists:
		return nil, fmt.Errorf("item %q: %w", id, errConflict)
	case mode == writeReplace && !exists:
		return nil, fmt.Errorf("item %q: %w", id, errNotFound)
	case exists && old.epk != epk:
		// Real containers key items by (partition key, id); this server keys
		// them by id alone, so the same id in another partition is refused.
		return nil, fmt.Errorf("item %q exists with another partition key value: %w", id, errConflict)
	}
	r := c.rangeForEPKLocked(epk)
	r.lsn++
	c.itemSeq++
	var rid string
	if exists {
		rid, _ = old.doc["_rid"].(string)
	} else {
		b, _ := base64.StdEncoding.DecodeString(c.rid)
		b = binary.BigEndian.AppendUint64(b, uint64(c.itemSeq))
		rid = strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
	}
	doc["_rid"] = rid
	doc["_self"] = "dbs/" + c.db.rid + "/colls/" + c.rid + "/docs/" + rid + "/"
	doc["_etag"] = newETag()
	doc["_attachments"] = "attachments/"
	doc["_ts"] = float64(time.Now().Unix())
	doc["_lsn"] = float64(r.lsn)
	c.items[id] = &item{doc: doc, epk: epk, lsn: r.lsn}
	ch := &change{op: opCreate, lsn: r.lsn, epk: epk, id: id, current: doc}
	if exists {
		ch.op, ch.previousLSN = opReplace, old.lsn
	}
	c.logChangeLocked(ch)
	c.byID, c.byLSN, c.byRange = nil, nil, nil
	return mustCopy(doc), nil
}

func (c *Container) deleteLocked(id string) bool { return c.removeLocked(id, false) }

// removeLocked deletes an item; ttlExpired marks a removal by its time to live.
func (c *Container) removeLocked(id string, ttlExpired bool) bool {
	it, ok := c.items[id]
	if !ok {
		return false
	}
	r := c.rangeForEPKLocked(it.epk)
	r.lsn++
	c.logChangeLocked(&change{op: opDelete, lsn: r.lsn, previousLSN: it.lsn, epk: it.epk, ttlExpired: ttlExpired, id: id, pk: getPath(it.doc, c.pkPath)})
	delete(c.items, id)
	c.byID, c.byLSN, c.byRange = nil, nil, nil
	return true
}

// sortedItemsLocked returns the items ordered by id. The order is cached
// until the next write, so paging through a large container stays cheap.
func (c *Container) sortedItemsLocked() []*item {
	if c.byID == nil {
		c.byID = make([]*item, 0, len(c.items))
		for _, it := range c.items {
			c.byID = append(c.byID, it)
		}
		sort.Slice(c.byID, func(i, j int) bool { return c.byID[i].id() < c.byID[j].id() })
	}
	return c.byID
}

// itemsOfRangeLocked returns the items stored in live range r, ordered like
// itemsByLSNLocked. The index is built in one pass over all items and kept
// until the next write, split or merge, so a poll that reads the change feed
// of every range costs O(items), not O(items × ranges) (BENCHMARKS.md, "The
// embedded server").
func (c *Container) itemsOfRangeLocked(r *pkRange) []*item {
	if c.byRange == nil {
		c.byRange = make(map[*pkRange][]*item, len(c.ranges))
		for _, it := range c.itemsByLSNLocked() {
			owner := c.rangeForEPKLocked(it.epk)
			c.byRange[owner] = append(c.byRange[owner], it)
		}
	}
	return c.byRange[r]
}

// itemsByLSNLocked returns the items ordered by _lsn, then id (LSN sequences
// of different ranges interleave); cached like sortedItemsLocked.
func (c *Container) itemsByLSNLocked() []*item {
	if c.byLSN == nil {
		c.byLSN = make([]*item, 0, len(c.items))
		for _, it := range c.items {
			c.byLSN = append(c.byLSN, it)
		}
		sort.Slice(c.byLSN, func(i, j int) bool {
			a, b := c.byLSN[i], c.byLSN[j]
			if a.lsn != b.lsn {
				return a.lsn < b.lsn
			}
			return a.id() < b.id()
		})
	}
	return c.byLSN
}

func (it *item) id() string { return it.doc["id"].(string) }

// feedDocument is the item as the change feed returns it (with _lsn).
func (it *item) feedDocument() json.RawMessage {
	if it.feedJSON == nil {
		it.feedJSON, _ = json.Marshal(it.doc)
	}
	return it.feedJSON
}

// queryDocument is the item as a query returns it (no _lsn, as the service).
func (it *item) queryDocument() json.RawMessage {
	if it.queryJSON == nil {
		it.queryJSON, _ = json.Marshal(withoutLSN(it.doc))
	}
	return it.queryJSON
}

// newETag mimics the service's quoted, GUID-shaped item etags.
func newETag() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("\"%x-%x-%x-%x-%x\"", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func getPath(doc map[string]any, path []string) any {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur, ok = m[p]
		if !ok {
			return nil
		}
	}
	return cur
}

func setPath(doc map[string]any, path []string, v any) {
	m := doc
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// copyDoc deep-copies a caller's document through JSON, so stored items never
// alias caller memory and hold only JSON types.
func copyDoc(doc map[string]any) (map[string]any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidItem, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidItem, err)
	}
	return out, nil
}

func mustCopy(doc map[string]any) map[string]any {
	out, err := copyDoc(doc)
	if err != nil {
		panic(err) // stored documents are always valid JSON
	}
	return out
}

// withoutLSN returns a copy without _lsn: the service only exposes _lsn in
// change feed results, not in point reads or queries.
func withoutLSN(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		if k != "_lsn" {
			out[k] = v
		}
	}
	return out
}

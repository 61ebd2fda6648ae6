package cosmostest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Database is a database of an Account.
type Database struct {
	acct       *Account
	id, rid    string
	ts         int64
	containers map[string]*Container
	order      []*Container
}

// Container is a container with physical partition key ranges and items.
type Container struct {
	db      *Database
	id, rid string
	altPath string // "dbs/{db}/colls/{id}", the x-ms-alt-content-path of its documents
	ts      int64
	pkPath  []string // partition key path split into property names
	pkRaw   string   // as given, e.g. "/pk"

	ranges      []*pkRange          // live ranges, sorted by min
	allRanges   map[string]*pkRange // every range ever, including gone ones
	nextRangeID int
	topology    int64 // bumped on split/merge; the pkranges etag

	items    map[string]*item     // by id (ids are unique per container here)
	byID     []*item              // cached order for queries; nil after a write
	byLSN    []*item              // cached order for the change feed; nil after a write
	byRange  map[*pkRange][]*item // byLSN split by live range; nil after a write, split or merge
	itemSeq  int64
	genSeq   int64               // for generated item ids and partition key values
	sparePKs map[string][]string // partition key values already known to hash into a range, by range id
	changes  []*change           // the all-versions-and-deletes log, in write order (allversions.go)
}

// PartitionKeyRange is a physical partition key range, with the fields
// and JSON names of its entry in the pkranges listing. Bounds are effective
// partition keys: MinInclusive "" is the start of the key space,
// MaxExclusive "FF" its end. Parents holds the ids of the ranges it
// replaced: a split's parent, or the two ranges of a merge.
type PartitionKeyRange struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
}

type pkRange struct {
	id       string
	rid      string
	min, max string
	parents  []string
	lsn      int64
	gone     bool
}

func (r *pkRange) public() PartitionKeyRange {
	return PartitionKeyRange{ID: r.id, MinInclusive: r.min, MaxExclusive: r.max, Parents: append([]string{}, r.parents...)}
}

type item struct {
	doc map[string]any // stored document including system properties
	epk string
	lsn int64
	// Encoded forms, made on first use. An item is never changed in place
	// (every write stores a new one), so they stay valid for its lifetime.
	feedJSON, queryJSON json.RawMessage
}

// CreateDatabase returns the database with that id, creating it if needed.
func (a *Account) CreateDatabase(id string) *Database {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.createDatabaseLocked(id)
}

func (a *Account) createDatabaseLocked(id string) *Database {
	if db, ok := a.dbs[id]; ok {
		return db
	}
	db := &Database{acct: a, id: id, ts: time.Now().Unix(), containers: map[string]*Container{}}
	db.rid = a.newRIDLocked(nil, 4)
	a.dbs[id] = db
	a.dbOrder = append(a.dbOrder, db)
	return db
}

// ID is the database id.
func (d *Database) ID() string { return d.id }

// RID is the database _rid.
func (d *Database) RID() string { return d.rid }

// Account is the account the database belongs to.
func (d *Database) Account() *Account { return d.acct }

// CreateContainer returns the container with that id, creating it if needed
// with partitionKeyPath (e.g. "/pk") and physicalRanges ranges ("0".."N-1")
// splitting the EPK space evenly. An existing container is returned unchanged.
func (d *Database) CreateContainer(id, partitionKeyPath string, physicalRanges int) *Container {
	a := d.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	return d.createContainerLocked(id, partitionKeyPath, physicalRanges)
}

func (d *Database) createContainerLocked(id, partitionKeyPath string, physicalRanges int) *Container {
	a := d.acct
	if c, ok := d.containers[id]; ok {
		return c
	}
	if physicalRanges < 1 {
		physicalRanges = 1
	}
	if !strings.HasPrefix(partitionKeyPath, "/") {
		partitionKeyPath = "/" + partitionKeyPath
	}
	dbRID, _ := base64.StdEncoding.DecodeString(d.rid)
	c := &Container{
		db:        d,
		id:        id,
		ts:        time.Now().Unix(),
		pkRaw:     partitionKeyPath,
		pkPath:    strings.Split(strings.TrimPrefix(partitionKeyPath, "/"), "/"),
		allRanges: map[string]*pkRange{},
		items:     map[string]*item{},
		altPath:   "dbs/" + d.id + "/colls/" + id,
	}
	// Like real collection RIDs: the database RID's bytes followed by four more.
	c.rid = a.newRIDLocked(dbRID, 4)
	bounds := evenBounds(physicalRanges)
	for i := 0; i < physicalRanges; i++ {
		c.addRangeLocked(bounds[i], bounds[i+1], nil, 0)
	}
	d.containers[id] = c
	d.order = append(d.order, c)
	return c
}

// ID is the container id.
func (c *Container) ID() string { return c.id }

// RID is the container _rid.
func (c *Container) RID() string { return c.rid }

// Database is the container's database.
func (c *Container) Database() *Database { return c.db }

// PartitionKeyPath is the partition key path the container was created with.
func (c *Container) PartitionKeyPath() string { return c.pkRaw }

func (c *Container) addRangeLocked(lower, upper string, parents []string, lsn int64) *pkRange {
	id := strconv.Itoa(c.nextRangeID)
	c.nextRangeID++
	r := &pkRange{id: id, min: lower, max: upper, parents: parents, lsn: lsn}
	// Like real pkrange RIDs: the collection RID's bytes followed by eight more.
	b, _ := base64.StdEncoding.DecodeString(c.rid)
	b = binary.BigEndian.AppendUint64(b, uint64(c.nextRangeID))
	r.rid = strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
	c.allRanges[id] = r
	c.byRange = nil
	// Keep c.ranges sorted by min with one insertion, not a sort per range:
	// containers with thousands of ranges are created for benchmarks.
	at := sort.Search(len(c.ranges), func(i int) bool { return c.ranges[i].min >= lower })
	c.ranges = slices.Insert(c.ranges, at, r)
	return r
}

// Ranges returns the live physical ranges sorted by MinInclusive.
func (c *Container) Ranges() []PartitionKeyRange {
	c.db.acct.mu.Lock()
	defer c.db.acct.mu.Unlock()
	out := make([]PartitionKeyRange, len(c.ranges))
	for i, r := range c.ranges {
		out[i] = r.public()
	}
	return out
}

// LSN is the current LSN of a live range, or -1 if no live range has that id.
func (c *Container) LSN(rangeID string) int64 {
	c.db.acct.mu.Lock()
	defer c.db.acct.mu.Unlock()
	r := c.liveRangeLocked(rangeID)
	if r == nil {
		return -1
	}
	return r.lsn
}

func (c *Container) liveRangeLocked(id string) *pkRange {
	if r, ok := c.allRanges[id]; ok && !r.gone {
		return r
	}
	return nil
}

func (c *Container) rangeForEPKLocked(epk string) *pkRange {
	// c.ranges is sorted and contiguous: the range is the last one whose min
	// is not above the EPK.
	i := sort.Search(len(c.ranges), func(i int) bool { return c.ranges[i].min > epk })
	if i > 0 && epkInRange(epk, c.ranges[i-1].min, c.ranges[i-1].max) {
		return c.ranges[i-1]
	}
	// Unreachable while ranges cover ["", "FF") and EPKs stay below "FF".
	return c.ranges[len(c.ranges)-1]
}

// ErrRangeNotFound is returned for a range id that is not live.
var ErrRangeNotFound = errors.New("cosmostest: no live partition key range with that id")

// Split replaces a live range by two children with the next free ids that
// divide its EPK span at the midpoint. Each child's LSN starts at the
// parent's and advances independently; items keep their _lsn. Afterwards the
// parent id answers 410 with substatus 1002.
func (c *Container) Split(rangeID string) (left, right PartitionKeyRange, err error) {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	p := c.liveRangeLocked(rangeID)
	if p == nil {
		return left, right, fmt.Errorf("split range %q of %s: %w", rangeID, c.id, ErrRangeNotFound)
	}
	mid, ok := midpoint(p.min, p.max)
	if !ok {
		return left, right, fmt.Errorf("split range %q of %s: [%q, %q) is too narrow", rangeID, c.id, p.min, p.max)
	}
	c.retireLocked(p)
	l := c.addRangeLocked(p.min, mid, []string{p.id}, p.lsn)
	r := c.addRangeLocked(mid, p.max, []string{p.id}, p.lsn)
	c.topology++
	return l.public(), r.public(), nil
}

// Merge replaces two adjacent live ranges, named in either order, by one
// child with the next free id whose parents are both, in EPK order. Items
// keep their _lsn; the child's LSN continues from the larger of the
// parents' LSNs, so its session token carries that LSN; afterwards both
// parent ids answer 410 with substatus 1002, as after a split. Reads of the
// child restricted to a parent's EPK range (x-ms-read-key-type) return that
// part only, which is how processors resume a parent's continuation.
//
// Merge works on any account; the service merges ranges only on accounts
// with merge enabled (WithPartitionMerge).
func (c *Container) Merge(rangeID, otherID string) (PartitionKeyRange, error) {
	a := c.db.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	fail := func(format string, args ...any) (PartitionKeyRange, error) {
		return PartitionKeyRange{}, fmt.Errorf("merge ranges %q and %q of %s: "+format, append([]any{rangeID, otherID, c.id}, args...)...)
	}
	if rangeID == otherID {
		return fail("a range cannot merge with itself")
	}
	l, r := c.liveRangeLocked(rangeID), c.liveRangeLocked(otherID)
	switch {
	case l == nil:
		return fail("range %q: %w", rangeID, ErrRangeNotFound)
	case r == nil:
		return fail("range %q: %w", otherID, ErrRangeNotFound)
	case r.max == l.min:
		l, r = r, l
	}
	if l.max != r.min {
		return fail("they are not adjacent ([%q, %q) and [%q, %q))", l.min, l.max, r.min, r.max)
	}
	c.retireLocked(l)
	c.retireLocked(r)
	m := c.addRangeLocked(l.min, r.max, []string{l.id, r.id}, max(l.lsn, r.lsn))
	c.topology++
	return m.public(), nil
}

func (c *Container) retireLocked(p *pkRange) {
	p.gone = true
	c.byRange = nil
	for i, r := range c.ranges {
		if r == p {
			c.ranges = append(c.ranges[:i], c.ranges[i+1:]...)
			return
		}
	}
}

// Range returns any range the container ever had by id, live or gone (split
// or merged away): what a processor holding a lease on it finds.
func (c *Container) Range(id string) (r PartitionKeyRange, gone, ok bool) {
	c.db.acct.mu.Lock()
	defer c.db.acct.mu.Unlock()
	pr, ok := c.allRanges[id]
	if !ok {
		return PartitionKeyRange{}, false, false
	}
	return pr.public(), pr.gone, true
}

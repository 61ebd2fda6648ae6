package cosmostest

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
)

// Account is the state of one Cosmos DB account: its databases, containers,
// partition key ranges, items, LSNs and session token form. It knows nothing
// of HTTP; a Handler serves it (handler.go) and a Server serves a Handler.
// All methods are safe for concurrent use.
type Account struct {
	host           string // endpoint host without the port, for lease ids
	partitionMerge bool   // WithPartitionMerge

	mu          sync.Mutex
	dbs         map[string]*Database
	dbOrder     []*Database
	usedRIDs    map[string]bool
	sessionForm SessionTokenForm
}

func newAccount(host string, partitionMerge bool) *Account {
	return &Account{
		host:           host,
		partitionMerge: partitionMerge,
		dbs:            map[string]*Database{},
		usedRIDs:       map[string]bool{},
		sessionForm:    SessionTokenVersioned,
	}
}

// Host is the host name of the endpoint without the port; change feed
// processors write it into lease ids.
func (a *Account) Host() string { return a.host }

// PartitionMergeEnabled reports whether the account was started with
// WithPartitionMerge.
func (a *Account) PartitionMergeEnabled() bool { return a.partitionMerge }

// SetSessionTokenForm selects the x-ms-session-token form of later responses.
func (a *Account) SetSessionTokenForm(f SessionTokenForm) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessionForm = f
}

// Container returns the container with that database and container id (or
// _rid), if it exists.
func (a *Account) Container(database, id string) (*Container, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, _ := a.lookupContainerLocked(database, id)
	return c, c != nil
}

// lookupContainerLocked finds a container by database and container id (or
// _rid); when there is none, missing names what does not exist. Callers hold
// a.mu.
func (a *Account) lookupContainerLocked(dbID, collID string) (c *Container, missing string) {
	db, ok := byIDOrRID(a.dbs, a.dbOrder, dbID)
	if !ok {
		return nil, "database " + dbID
	}
	c, ok = byIDOrRID(db.containers, db.order, collID)
	if !ok {
		return nil, "container " + collID
	}
	return c, ""
}

// byIDOrRID finds a resource by id, else by _rid: clients address resources
// either way (name-based or _rid routing).
func byIDOrRID[T interface{ RID() string }](byID map[string]T, order []T, key string) (T, bool) {
	if res, ok := byID[key]; ok {
		return res, true
	}
	for _, res := range order {
		if res.RID() == key {
			return res, true
		}
	}
	var none T
	return none, false
}

// newRIDLocked returns a fresh resource id: prefix followed by n random
// bytes, base64 encoded, never returned before by this account. Like real
// RIDs it never holds '/' (which the service replaces by '-'); we also avoid
// '+' so RIDs can be pasted into URLs and lease ids without escaping.
// Callers hold a.mu.
func (a *Account) newRIDLocked(prefix []byte, n int) string {
	for {
		b := append(append([]byte{}, prefix...), make([]byte, n)...)
		_, _ = rand.Read(b[len(prefix):])
		rid := base64.StdEncoding.EncodeToString(b)
		if strings.ContainsAny(rid, "+/") || a.usedRIDs[rid] {
			continue
		}
		a.usedRIDs[rid] = true
		return rid
	}
}

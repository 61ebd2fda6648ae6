package cosmostest

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/gate"
)

// Account is the state of one Cosmos DB account (databases, containers,
// items, faults, the request log) and the http.Handler that serves its REST
// API (serve.go). A Server serves one over HTTP or HTTPS; all methods are safe for
// concurrent use.
type Account struct {
	cfg      config
	keyBytes []byte
	endpoint string // URL GET / lists as the account's only location
	host     string // endpoint host without the port

	gate     *gate.Gate
	inFlight handlerCount // running handlers, for tests

	faults   fault.List[Fault]
	lastAuth acceptedAuth  // guarded by its own lock
	redacted redactionMemo // guarded by its own lock

	mu          sync.Mutex
	dbs         map[string]*Database
	dbOrder     []*Database
	usedRIDs    map[string]bool
	sessionForm SessionTokenForm
	latency     time.Duration
	requests    requestLog
}

func newAccount(cfg config, keyBytes []byte) *Account {
	return &Account{
		cfg:         cfg,
		keyBytes:    keyBytes,
		gate:        gate.New(),
		dbs:         map[string]*Database{},
		usedRIDs:    map[string]bool{},
		sessionForm: SessionTokenVersioned,
	}
}

// Key is the base64 primary key.
func (a *Account) Key() string { return a.cfg.key }

// Host is the host name of the endpoint without the port; change feed
// processors write it into lease ids.
func (a *Account) Host() string { return a.host }

// SetSessionTokenForm selects the x-ms-session-token form of later responses.
func (a *Account) SetSessionTokenForm(f SessionTokenForm) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessionForm = f
}

// SetLatency adds d before every answer. A waiting request gives up when its
// client goes away or the server closes.
func (a *Account) SetLatency(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.latency = d
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

// handlerCount counts running handlers. (A mutex rather than sync/atomic:
// KEDA's linters ask for go.uber.org/atomic, which this module does not need.)
type handlerCount struct {
	mu sync.Mutex
	n  int
}

func (c *handlerCount) Add(delta int) {
	c.mu.Lock()
	c.n += delta
	c.mu.Unlock()
}

func (c *handlerCount) Load() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

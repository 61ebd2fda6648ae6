package cosmostest

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/gate"
)

// Account is the state of one Cosmos DB account (databases, containers,
// items, faults, the request log) and the http.Handler that serves its REST
// API. A Server serves one over HTTP or HTTPS; all methods are safe for
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

// AccountName is the account id reported by GET /.
func (a *Account) AccountName() string { return a.cfg.accountName }

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

// ServeHTTP is the single entry point: classify, record, delay, fault,
// authorize, admit (WithPartitionMerge), route. Every request is recorded
// before its answer is written, so a test that has received a response
// always finds it in Requests.
func (a *Account) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.gate.Enter() { // the server is closing
		fault.DropConnection(w)
		return
	}
	defer a.gate.Leave()
	a.inFlight.Add(1)
	defer a.inFlight.Add(-1)

	segs := splitPath(r.URL.Path)
	kind := classify(r, segs)
	authorization := a.redactAuthorization(r.Header)
	rec := Request{
		Kind:    kind,
		Method:  r.Method,
		Path:    r.URL.Path,
		RangeID: r.Header.Get(hdrPartitionKeyRangeID),
		Header:  r.Header,
		At:      time.Now(),
	}
	a.mu.Lock()
	latency := a.latency
	a.mu.Unlock()
	if !a.gate.Sleep(r.Context(), latency) {
		a.record(rec, 0)
		fault.DropConnection(w)
		return
	}
	if rep, dropped := a.injectedReply(r, kind, rec.RangeID); dropped {
		a.record(rec, 0)
		fault.DropConnection(w)
		return
	} else if rep != nil {
		a.record(rec, rep.status)
		rep.write(w, r)
		return
	}
	var rep *reply
	if err := a.authorize(r, authorization); err != nil {
		rep = errorReply(http.StatusUnauthorized, 0, "Unauthorized", err.Error())
	} else if rep = a.refuseWithoutMergeCapability(r.Header); rep == nil {
		rep = a.route(r, kind, segs)
	}
	a.record(rec, rep.status)
	rep.write(w, r)
}

// route dispatches an authorized request to its handler by path shape.
func (a *Account) route(r *http.Request, kind RequestKind, segs []string) *reply {
	// The account, a database, a container and the pkranges feed are read-only
	// here; the database and container feeds are listed and take creations.
	metadata := len(segs) == 0 || segs[0] == "dbs" && (len(segs) == 2 || (len(segs) == 4 && segs[2] == "colls") ||
		(len(segs) == 5 && segs[2] == "colls" && segs[4] == "pkranges"))
	feed := len(segs) > 0 && segs[0] == "dbs" && (len(segs) == 1 || len(segs) == 3 && segs[2] == "colls")
	switch {
	case metadata && r.Method != http.MethodGet, feed && r.Method != http.MethodPost && r.Method != http.MethodGet:
		return methodNotAllowed()
	case feed && r.Method == http.MethodGet && len(segs) == 1:
		return a.listDatabasesReply()
	case feed && r.Method == http.MethodGet:
		return a.listContainersReply(segs[1])
	}
	switch {
	case len(segs) == 0:
		return a.accountReply()
	case segs[0] != "dbs":
		return notFound("unknown resource " + r.URL.Path)
	case len(segs) == 1:
		return a.createDatabaseReply(r)
	case len(segs) == 3 && segs[2] == "colls":
		return a.createContainerReply(r, segs[1])
	case len(segs) == 2:
		return a.databaseReply(segs[1])
	case len(segs) == 4 && segs[2] == "colls":
		return a.containerReply(segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "pkranges":
		return a.pkRangesReply(r, segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "docs":
		switch kind {
		case KindQuery:
			return a.queryReply(r, segs[1], segs[3])
		case KindChangeFeed:
			return a.changeFeedReply(r, segs[1], segs[3])
		case KindCreate:
			return a.createReply(r, segs[1], segs[3])
		}
		return errorReply(http.StatusBadRequest, 0, "BadRequest",
			"only queries, creates/upserts and incremental change feed reads are supported on a docs feed")
	case len(segs) == 6 && segs[2] == "colls" && segs[4] == "docs":
		switch r.Method {
		case http.MethodGet:
			return a.readItemReply(r, segs[1], segs[3], segs[5])
		case http.MethodPut:
			return a.replaceReply(r, segs[1], segs[3], segs[5])
		case http.MethodDelete:
			return a.deleteReply(r, segs[1], segs[3], segs[5])
		}
		return methodNotAllowed()
	}
	return notFound("unknown resource " + r.URL.Path)
}

// inContainer is the preamble every container-scoped handler shares: under
// the account lock, find the addressed container (by id or _rid) and run
// serve with it, or answer 404.
func (a *Account) inContainer(dbID, collID string, serve func(c *Container) *reply) *reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, rep := a.containerLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	return serve(c)
}

// Container returns the container with that database and container id (or
// _rid), if it exists.
func (a *Account) Container(database, id string) (*Container, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, rep := a.containerLocked(database, id)
	return c, rep == nil
}

// containerLocked finds a container by database and container id (or _rid),
// or returns the 404 reply that names what is missing. Callers hold a.mu.
func (a *Account) containerLocked(dbID, collID string) (*Container, *reply) {
	db, ok := byIDOrRID(a.dbs, a.dbOrder, dbID)
	if !ok {
		return nil, notFound("database " + dbID + " does not exist")
	}
	c, ok := byIDOrRID(db.containers, db.order, collID)
	if !ok {
		return nil, notFound("container " + collID + " does not exist")
	}
	return c, nil
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

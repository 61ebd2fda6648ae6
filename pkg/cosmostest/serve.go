package cosmostest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
)

// The HTTP side of an Account: the entry point, routing by path shape, and
// the lookups every handler shares. Handlers translate a request into calls
// on the model (account.go, topology.go, items.go, changelog.go, session.go)
// and its answer into a reply (reply.go).

// ServeHTTP is the single entry point: classify, record, delay, fault,
// authorize, admit (WithPartitionMerge), route. Every request is recorded
// before its answer is written, so a test that has received a response
// always finds it in Requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.gate.Enter() { // the server is closing
		fault.DropConnection(w)
		return
	}
	defer h.gate.Leave()
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)

	segs := splitPath(r.URL.Path)
	kind := classify(r, segs)
	authorization := h.redactAuthorization(r.Header)
	rec := Request{
		Kind:    kind,
		Method:  r.Method,
		Path:    r.URL.Path,
		RangeID: headerValue(r.Header, hdrPartitionKeyRangeID),
		Header:  r.Header,
		At:      time.Now(),
	}
	h.mu.Lock()
	latency := h.latency
	h.mu.Unlock()
	if !h.gate.Sleep(r.Context(), latency) {
		h.record(rec, 0)
		fault.DropConnection(w)
		return
	}
	if rep, dropped := h.injectedReply(r, kind, rec.RangeID); dropped {
		h.record(rec, 0)
		fault.DropConnection(w)
		return
	} else if rep != nil {
		h.record(rec, rep.status)
		rep.write(w, r)
		return
	}
	var rep *reply
	if err := h.authorize(r, authorization); err != nil {
		rep = errorReply(http.StatusUnauthorized, 0, "Unauthorized", err.Error())
	} else if rep = h.refuseWithoutMergeCapability(r.Header); rep == nil {
		rep = h.route(r, kind, segs)
	}
	h.record(rec, rep.status)
	rep.write(w, r)
}

// route dispatches an authorized request to its handler by path shape.
func (h *Handler) route(r *http.Request, kind RequestKind, segs []string) *reply {
	// The account, a database, a container and the pkranges feed are read-only
	// here; the database and container feeds are listed and take creations.
	metadata := len(segs) == 0 || segs[0] == "dbs" && (len(segs) == 2 || (len(segs) == 4 && segs[2] == "colls") ||
		(len(segs) == 5 && segs[2] == "colls" && segs[4] == "pkranges"))
	feed := len(segs) > 0 && segs[0] == "dbs" && (len(segs) == 1 || len(segs) == 3 && segs[2] == "colls")
	switch {
	case metadata && r.Method != http.MethodGet, feed && r.Method != http.MethodPost && r.Method != http.MethodGet:
		return methodNotAllowed()
	case feed && r.Method == http.MethodGet && len(segs) == 1:
		return h.listDatabasesReply()
	case feed && r.Method == http.MethodGet:
		return h.listContainersReply(segs[1])
	}
	switch {
	case len(segs) == 0:
		return h.accountReply()
	case segs[0] != "dbs":
		return notFound("unknown resource " + r.URL.Path)
	case len(segs) == 1:
		return h.createDatabaseReply(r)
	case len(segs) == 3 && segs[2] == "colls":
		return h.createContainerReply(r, segs[1])
	case len(segs) == 2:
		return h.databaseReply(segs[1])
	case len(segs) == 4 && segs[2] == "colls":
		return h.containerReply(segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "pkranges":
		return h.pkRangesReply(r, segs[1], segs[3])
	case len(segs) == 5 && segs[2] == "colls" && segs[4] == "docs":
		switch kind {
		case KindQuery:
			return h.queryReply(r, segs[1], segs[3])
		case KindChangeFeed:
			return h.changeFeedReply(r, segs[1], segs[3])
		case kindCreate:
			return h.createReply(r, segs[1], segs[3])
		}
		return errorReply(http.StatusBadRequest, 0, "BadRequest",
			"only queries, creates/upserts and incremental change feed reads are supported on a docs feed")
	case len(segs) == 6 && segs[2] == "colls" && segs[4] == "docs":
		switch r.Method {
		case http.MethodGet:
			return h.readItemReply(r, segs[1], segs[3], segs[5])
		case http.MethodPut:
			return h.replaceReply(r, segs[1], segs[3], segs[5])
		case http.MethodDelete:
			return h.deleteReply(r, segs[1], segs[3], segs[5])
		}
		return methodNotAllowed()
	}
	return notFound("unknown resource " + r.URL.Path)
}

// inContainer is the preamble every container-scoped handler shares: under
// the account lock, find the addressed container (by id or _rid) and run
// serve with it, or answer 404.
func (h *Handler) inContainer(dbID, collID string, serve func(c *Container) *reply) *reply {
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	c, rep := h.containerLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	return serve(c)
}

// containerLocked finds a container by database and container id (or _rid),
// or returns the 404 reply that names what is missing. Callers hold h.acct.mu.
func (h *Handler) containerLocked(dbID, collID string) (*Container, *reply) {
	c, missing := h.acct.lookupContainerLocked(dbID, collID)
	if c == nil {
		return nil, notFound(missing + " does not exist")
	}
	return c, nil
}

// databaseLocked finds a database by id (or _rid), or returns the 404 reply
// that names it. Callers hold h.acct.mu.
func (h *Handler) databaseLocked(dbID string) (*Database, *reply) {
	db, ok := byIDOrRID(h.acct.dbs, h.acct.dbOrder, dbID)
	if !ok {
		return nil, notFound("database " + dbID + " does not exist")
	}
	return db, nil
}

// addressedRangeLocked is the physical range a request names by id
// (x-ms-documentdb-partitionkeyrangeid): 404 for an id the container never
// had, 410 with substatus 1002 for one gone after a split or merge.
func addressedRangeLocked(c *Container, id string) (*pkRange, *reply) {
	r, ok := c.allRanges[id]
	switch {
	case !ok:
		return nil, notFound("partition key range " + id + " does not exist")
	case r.gone:
		return nil, partitionGone(id)
	}
	return r, nil
}

// pkRangesReply lists the live physical ranges. The etag changes with every
// split or merge; If-None-Match with the current etag answers 304. An
// incremental (A-IM) read returns the full current set rather than a delta.
func (h *Handler) pkRangesReply(r *http.Request, dbID, collID string) *reply {
	return h.inContainer(dbID, collID, func(c *Container) *reply { return pkRangesLocked(r, c) })
}

func pkRangesLocked(r *http.Request, c *Container) *reply {
	etag := `"` + c.rid + "-" + strconv.FormatInt(c.topology, 10) + `"`
	if headerValue(r.Header, "If-None-Match") == etag {
		out := newReply(http.StatusNotModified, chargeMetadata)
		out.set(hdrETag, etag)
		return out
	}
	list := make([]map[string]any, len(c.ranges))
	for i, pr := range c.ranges {
		parents := append([]string{}, pr.parents...)
		list[i] = map[string]any{
			"_rid":                    pr.rid,
			"id":                      pr.id,
			"_etag":                   `"` + pr.rid + `"`,
			"minInclusive":            pr.min,
			"maxExclusive":            pr.max,
			"ridPrefix":               i,
			"_self":                   "dbs/" + c.db.rid + "/colls/" + c.rid + "/pkranges/" + pr.rid + "/",
			"throughputFraction":      1 / float64(len(c.ranges)),
			"status":                  "online",
			"parents":                 parents,
			"ownedArchivalPKRangeIds": []string{},
			"_ts":                     c.ts,
			"_lsn":                    pr.lsn,
		}
	}
	out := jsonReply(http.StatusOK, chargeMetadata, map[string]any{
		"_rid":               c.rid,
		"PartitionKeyRanges": list,
		"_count":             len(list),
	})
	out.set(hdrETag, etag)
	out.set(hdrItemCount, strconv.Itoa(len(list)))
	return out
}

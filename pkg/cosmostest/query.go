package cosmostest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/cosmossql"
)

// The query endpoint serves the SQL subset of package cosmossql (see the
// package documentation): path comparisons, AND/OR/NOT, IN, STARTSWITH,
// ENDSWITH, CONTAINS, IS_DEFINED, IS_NULL, ARRAY_CONTAINS, parameters,
// ORDER BY on one path, TOP and COUNT. Anything else is 400 BadRequest
// naming the construct, so that a filter this server does not understand
// can never silently match the wrong items.
//
// As the service does, it answers a cross-partition query that needs
// merging across ranges (ORDER BY, TOP, an aggregate) with 400 / substatus
// 1004 and the query plan in additionalErrorInfo, and a query-plan request
// (x-ms-cosmos-is-query-plan-request) with the plan; the SDKs then run the
// plan's rewritten query per range and merge.

type queryBody struct {
	Query      string           `json:"query"`
	Parameters []queryParameter `json:"parameters"`
}

type queryParameter = cosmossql.Param

// subStatusCrossPartitionQueryNotServable is the 400 substatus of a
// cross-partition query the gateway leaves to the SDK's query pipeline.
const subStatusCrossPartitionQueryNotServable = 1004

// WithQueryPageLimit makes queries answer at most n documents a page,
// whatever x-ms-max-item-count asks: a real container returns fewer than
// asked when the results span physical partitions (a page or more each) or
// reach the service's 4 MB page size.
func WithQueryPageLimit(n int) Option { return func(c *config) { c.queryPageLimit = n } }

func (h *Handler) queryReply(r *http.Request, dbID, collID string) *reply {
	if ct := headerValue(r.Header, "Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/query+json") {
		return badRequest("a query needs Content-Type application/query+json, got %q", ct)
	}
	body, rep := readBody(r)
	if rep != nil {
		return rep
	}
	var qb queryBody
	if err := json.Unmarshal(body, &qb); err != nil {
		return badRequest("the query body is not valid JSON: %v", err)
	}
	q, err := cosmossql.Parse(qb.Query, qb.Parameters)
	if err != nil {
		return badRequest("the query %q is not supported by this server: %v", qb.Query, err)
	}
	pageSize, rep := maxItemCount(r)
	if rep != nil {
		return rep
	}
	if limit := h.cfg.queryPageLimit; limit > 0 {
		pageSize = min(pageSize, limit)
	}
	var cursor queryCursor
	if tok := headerValue(r.Header, hdrClientContinuation); tok != "" {
		if cursor, err = decodeQueryContinuation(tok); err != nil {
			return badRequest("invalid continuation token for this query")
		}
	}
	pkValue, hasPK, rep := partitionKeyHeader(r)
	if rep != nil {
		return rep
	}
	planRequest := strings.EqualFold(headerValue(r.Header, hdrQueryPlanRequest), "true")

	return h.inContainer(dbID, collID, func(c *Container) *reply {
		if planRequest {
			return jsonReply(http.StatusOK, chargeQuery, q.PartitionedExecutionInfo())
		}
		return h.queryLocked(r, c, q, cursor, pageSize, pkValue, hasPK)
	})
}

func (h *Handler) queryLocked(r *http.Request, c *Container, q *cosmossql.Query, cursor queryCursor, pageSize int, pkValue any, hasPK bool) *reply {
	// Which items the query may see: one logical partition, one physical
	// range, or (cross-partition) all of them.
	inScope := func(*item) bool { return true }
	scopeRanges := c.ranges
	switch rangeID := headerValue(r.Header, hdrPartitionKeyRangeID); {
	case hasPK:
		epk := epkOf(pkValue)
		inScope = func(it *item) bool { return it.epk == epk }
		scopeRanges = []*pkRange{c.rangeForEPKLocked(epk)}
	case rangeID != "":
		pr, rep := addressedRangeLocked(c, rangeID)
		if rep != nil {
			return rep
		}
		inScope = func(it *item) bool { return epkInRange(it.epk, pr.min, pr.max) }
		scopeRanges = []*pkRange{pr}
	case q.NeedsPartitionedExecution():
		return crossPartitionNotServable(q)
	case len(c.ranges) > 1 && !strings.EqualFold(headerValue(r.Header, hdrCrossPartition), "true"):
		return badRequest("Cross partition query is required but disabled. Please set %s = True, or specify the partition key", strings.ToLower(hdrCrossPartition))
	}

	var (
		page []json.RawMessage
		next queryCursor
		rep  *reply
	)
	if q.NeedsPartitionedExecution() {
		page, next, rep = runMerged(q, c, inScope, cursor, pageSize)
	} else {
		page, next, rep = runStreaming(q, c, inScope, cursor, pageSize)
	}
	if rep != nil {
		return rep
	}
	if page == nil {
		page = []json.RawMessage{}
	}
	out := documentsReply(chargeQuery, c.rid, page)
	if next != (queryCursor{}) {
		out.set(hdrContinuation, encodeQueryContinuation(next))
	}
	tokens := make([]string, len(scopeRanges))
	for i, pr := range scopeRanges {
		tokens[i] = h.acct.sessionTokenLocked(pr)
	}
	out.set(hdrSessionToken, strings.Join(tokens, ","))
	out.set(hdrItemCount, strconv.Itoa(len(page)))
	setContentPaths(out, c)
	return out
}

// runStreaming pages a query whose results come in id order (no ORDER BY,
// TOP or aggregate) with a cursor on the last id returned, so that paging
// stays stable while items are written.
func runStreaming(q *cosmossql.Query, c *Container, inScope func(*item) bool, cursor queryCursor, pageSize int) ([]json.RawMessage, queryCursor, *reply) {
	if cursor.skip > 0 {
		return nil, queryCursor{}, badRequest("invalid continuation token for this query")
	}
	all := c.sortedItemsLocked()
	start := 0
	if cursor.after != "" {
		start = sort.Search(len(all), func(i int) bool { return all[i].id() > cursor.after })
	}
	var page []json.RawMessage
	lastID := ""
	for _, it := range all[start:] {
		if !inScope(it) || !q.Match(it.doc) {
			continue
		}
		doc, ok := projected(q, it)
		if !ok {
			continue
		}
		if len(page) == pageSize {
			return page, queryCursor{after: lastID}, nil
		}
		page = append(page, doc)
		lastID = it.id()
	}
	return page, queryCursor{}, nil
}

// runMerged runs a query with ORDER BY, TOP or an aggregate over the items
// in scope and pages the whole result by offset.
func runMerged(q *cosmossql.Query, c *Container, inScope func(*item) bool, cursor queryCursor, pageSize int) ([]json.RawMessage, queryCursor, *reply) {
	if cursor.after != "" {
		return nil, queryCursor{}, badRequest("invalid continuation token for this query")
	}
	var matching []*item
	for _, it := range c.sortedItemsLocked() {
		if inScope(it) && q.Match(it.doc) {
			matching = append(matching, it)
		}
	}
	var results []json.RawMessage
	if q.IsAggregate() {
		docs := make([]map[string]any, len(matching))
		for i, it := range matching {
			docs[i] = it.doc
		}
		b, err := json.Marshal(q.Aggregate(docs))
		if err != nil {
			return nil, queryCursor{}, errorReply(http.StatusInternalServerError, 0, "InternalServerError", "encode result: "+err.Error())
		}
		results = []json.RawMessage{b}
	} else {
		sort.SliceStable(matching, func(i, j int) bool { return q.Compare(matching[i].doc, matching[j].doc) < 0 })
		for _, it := range matching {
			if top := q.Top(); top >= 0 && len(results) == top {
				break
			}
			if doc, ok := projected(q, it); ok {
				results = append(results, doc)
			}
		}
	}
	if cursor.skip > len(results) {
		return nil, queryCursor{}, badRequest("invalid continuation token for this query")
	}
	results = results[cursor.skip:]
	if len(results) > pageSize {
		return results[:pageSize], queryCursor{skip: cursor.skip + pageSize}, nil
	}
	return results, queryCursor{}, nil
}

// projected is the query's result for one item: the cached encoding for
// SELECT *, else the projection; ok is false for an undefined result.
func projected(q *cosmossql.Query, it *item) (json.RawMessage, bool) {
	if q.SelectsDocument() {
		return it.queryDocument(), true
	}
	v, ok := q.Project(withoutLSN(it.doc))
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return b, true
}

// crossPartitionNotServable is the service's answer to a cross-partition
// query that the SDK must run range by range: 400 with substatus 1004 and
// the query plan, as a JSON string, in additionalErrorInfo.
func crossPartitionNotServable(q *cosmossql.Query) *reply {
	info, err := json.Marshal(q.PartitionedExecutionInfo())
	if err != nil {
		return errorReply(http.StatusInternalServerError, 0, "InternalServerError", "encode query plan: "+err.Error())
	}
	rep := newReply(http.StatusBadRequest, 0)
	rep.set(hdrSubStatus, strconv.Itoa(subStatusCrossPartitionQueryNotServable))
	rep.body, _ = json.Marshal(map[string]string{
		"code":                "BadRequest",
		"message":             "Cross partition query with ORDER BY, TOP or aggregates is run by the SDK's query pipeline: the query plan is in additionalErrorInfo",
		"additionalErrorInfo": string(info),
	})
	return rep
}

// queryCursor is where a query's next page starts: after an id (results in
// id order) or after a number of results (merged results).
type queryCursor struct {
	after string
	skip  int
}

// Query continuations are opaque to clients.
func encodeQueryContinuation(c queryCursor) string {
	if c.after != "" {
		return base64.StdEncoding.EncodeToString([]byte("after:" + c.after))
	}
	return base64.StdEncoding.EncodeToString([]byte("skip:" + strconv.Itoa(c.skip)))
}

func decodeQueryContinuation(tok string) (queryCursor, error) {
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		return queryCursor{}, err
	}
	if after, ok := strings.CutPrefix(string(b), "after:"); ok && after != "" {
		return queryCursor{after: after}, nil
	}
	if skip, ok := strings.CutPrefix(string(b), "skip:"); ok {
		if n, err := strconv.Atoi(skip); err == nil && n > 0 {
			return queryCursor{skip: n}, nil
		}
	}
	return queryCursor{}, fmt.Errorf("not a continuation of this server")
}

package cosmostest

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// changeFeedReply serves GET …/docs with A-IM: Incremental feed (or
// Full-Fidelity Feed, allversions.go) for one physical range
// (x-ms-documentdb-partitionkeyrangeid), optionally narrowed to an EPK
// sub-range, or for one logical partition (partition key header).
func (h *Handler) changeFeedReply(r *http.Request, dbID, collID string) *reply {
	pageSize, rep := maxItemCount(r)
	if rep != nil {
		return rep
	}
	pkValue, hasPK, rep := partitionKeyHeader(r)
	if rep != nil {
		return rep
	}
	return h.inContainer(dbID, collID, func(c *Container) *reply {
		return h.changeFeedLocked(r, c, pageSize, pkValue, hasPK)
	})
}

func (h *Handler) changeFeedLocked(r *http.Request, c *Container, pageSize int, pkValue any, hasPK bool) *reply {
	var (
		pr      *pkRange
		lo, hi  string
		onlyEPK string // set when reading one logical partition
	)
	rangeID := headerValue(r.Header, hdrPartitionKeyRangeID)
	switch {
	case rangeID != "":
		var rep *reply
		if pr, rep = addressedRangeLocked(c, rangeID); rep != nil {
			return rep
		}
		lo, hi = pr.min, pr.max
	case hasPK:
		onlyEPK = epkOf(pkValue)
		pr = c.rangeForEPKLocked(onlyEPK)
		lo, hi = pr.min, pr.max
	default:
		return badRequest("a change feed read needs the %s or the %s header", strings.ToLower(hdrPartitionKeyRangeID), strings.ToLower(hdrPartitionKey))
	}

	if strings.EqualFold(headerValue(r.Header, hdrReadKeyType), "EffectivePartitionKeyRange") {
		start, end := headerValue(r.Header, hdrStartEPK), headerValue(r.Header, hdrEndEPK)
		if end == "" || start >= end {
			return badRequest("the EPK range [%q, %q) is empty", start, end)
		}
		if start < pr.min || end > pr.max {
			return badRequest("the EPK range [%q, %q) is not within partition key range %s [%q, %q)", start, end, pr.id, pr.min, pr.max)
		}
		lo, hi = start, end
	}
	if isAllVersionsRead(r) {
		return h.allVersionsLocked(r, c, pr, lo, hi, onlyEPK, pageSize)
	}

	inm := headerValue(r.Header, "If-None-Match")
	var after int64
	switch inm {
	case "":
	case "*":
		return notModified(quotedLSN(pr.lsn), h.acct.sessionTokenLocked(pr), pr.lsn)
	default:
		n, err := strconv.ParseInt(strings.Trim(inm, `"`), 10, 64)
		if err != nil || n < 0 {
			return badRequest("invalid If-None-Match %q for a change feed read: expected a quoted LSN", inm)
		}
		after = n
	}

	all := c.itemsOfRangeLocked(pr)
	start := sort.Search(len(all), func(i int) bool { return all[i].lsn > after })
	var changed []*item
	for _, it := range all[start:] {
		if !epkInRange(it.epk, lo, hi) || (onlyEPK != "" && it.epk != onlyEPK) {
			continue
		}
		changed = append(changed, it)
		if len(changed) == pageSize {
			break
		}
	}
	if len(changed) == 0 {
		etag := inm
		if etag == "" {
			etag = quotedLSN(pr.lsn)
		}
		return notModified(etag, h.acct.sessionTokenLocked(pr), pr.lsn)
	}
	docs := make([]json.RawMessage, len(changed))
	for i, it := range changed {
		docs[i] = it.feedDocument()
	}
	return h.changeFeedPageLocked(c, pr, docs, changed[len(changed)-1].lsn)
}

// changeFeedPageLocked answers a change feed read, in either mode, with a page
// of changes: the etag is the LSN of the page's last change (where the next
// read resumes), the session token and lsn are the range's current position.
func (h *Handler) changeFeedPageLocked(c *Container, pr *pkRange, docs []json.RawMessage, lastLSN int64) *reply {
	out := documentsReply(chargeChangeFeed*float64(len(docs)), c.rid, docs)
	out.set(hdrETag, quotedLSN(lastLSN))
	out.set(hdrSessionToken, h.acct.sessionTokenLocked(pr))
	out.set(hdrItemCount, strconv.Itoa(len(docs)))
	out.set(hdrLSN, strconv.FormatInt(pr.lsn, 10))
	setContentPaths(out, c)
	return out
}

// notModified answers a change feed read with nothing newer; lsn is the
// range's current LSN (the service's lsn header).
func notModified(etag, sessionToken string, lsn int64) *reply {
	out := newReply(http.StatusNotModified, chargeChangeFeed)
	out.set(hdrETag, etag)
	out.set(hdrSessionToken, sessionToken)
	out.set(hdrItemCount, "0")
	out.set(hdrLSN, strconv.FormatInt(lsn, 10))
	return out
}

package cosmostest

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Serving the all-versions-and-deletes (AVAD) change feed (the log itself is
// changelog.go) to GET …/docs with A-IM: Full-Fidelity Feed. See
// docs/avad.md for the facts and their sources.
const (
	aimFullFidelity = "Full-Fidelity Feed"
	aimIncremental  = "Incremental feed"
	// hdrWireFormat selects the response shape; the SDKs send 2021-09-15
	// (metadata separate from the item, with crts) on every AVAD read. The
	// server serves only that shape and refuses a read without it, so a
	// client that omits it fails here instead of meeting an older shape in
	// production.
	hdrWireFormat      = "X-Ms-Cosmos-Changefeed-Wire-Format-Version"
	wireFormatCurrent  = "2021-09-15"
	hdrIfModifiedSince = "If-Modified-Since"
)

// isAllVersionsRead reports whether a change feed request asks for the
// all-versions-and-deletes mode.
func isAllVersionsRead(r *http.Request) bool {
	return strings.EqualFold(headerValue(r.Header, hdrAIM), aimFullFidelity)
}

// isChangeFeedAIM reports whether an A-IM value is a change feed mode.
func isChangeFeedAIM(v string) bool {
	return strings.EqualFold(v, aimIncremental) || strings.EqualFold(v, aimFullFidelity)
}

// allVersionsLocked serves an AVAD read of [lo, hi) of range pr (or of one
// logical partition, onlyEPK), after the range headers have been checked.
func (h *Handler) allVersionsLocked(r *http.Request, c *Container, pr *pkRange, lo, hi, onlyEPK string, pageSize int) *reply {
	if v := headerValue(r.Header, hdrWireFormat); v != wireFormatCurrent {
		return badRequest("an all versions and deletes change feed read needs %s: %s, got %q", hdrWireFormat, wireFormatCurrent, v)
	}
	inm := headerValue(r.Header, "If-None-Match")
	switch {
	case inm == "" && headerValue(r.Header, hdrIfModifiedSince) != "":
		return badRequest("the all versions and deletes change feed cannot start from a point in time: start from now (If-None-Match: *) or from a continuation")
	case inm == "":
		return badRequest("the all versions and deletes change feed cannot start from the beginning: start from now (If-None-Match: *) or from a continuation")
	case inm == "*":
		return notModified(quotedLSN(pr.lsn), h.acct.sessionTokenLocked(pr), pr.lsn)
	}
	after, err := strconv.ParseInt(strings.Trim(inm, `"`), 10, 64)
	if err != nil || after < 0 {
		return badRequest("invalid If-None-Match %q for a change feed read: expected a quoted LSN", inm)
	}

	var pending []*change
	for _, ch := range c.changes {
		if ch.lsn > after && epkInRange(ch.epk, lo, hi) && (onlyEPK == "" || ch.epk == onlyEPK) {
			pending = append(pending, ch)
		}
	}
	if len(pending) == 0 {
		return notModified(inm, h.acct.sessionTokenLocked(pr), pr.lsn)
	}
	// The log is in write order; after a merge the parents' LSN sequences
	// interleave, and a page is in LSN order.
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].lsn < pending[j].lsn })
	if len(pending) > pageSize {
		pending = pending[:pageSize]
	}
	docs := make([]json.RawMessage, len(pending))
	for i, ch := range pending {
		docs[i] = ch.envelope(c)
	}
	return h.changeFeedPageLocked(c, pr, docs, pending[len(pending)-1].lsn)
}

// envelope is the change in the 2021-09-15 wire format: "current" (the item,
// {} on deletes) and "metadata"; no "previous", as for a container that does
// not keep previous images.
func (ch *change) envelope(c *Container) json.RawMessage {
	if ch.encoded != nil {
		return ch.encoded
	}
	meta := map[string]any{
		"crts":              ch.crts,
		"lsn":               ch.lsn,
		"operationType":     ch.op,
		"timeToLiveExpired": ch.ttlExpired,
	}
	if ch.op != opCreate {
		meta["previousImageLSN"] = ch.previousLSN
	}
	current := map[string]any{}
	if ch.op == opDelete {
		meta["id"] = ch.id
		meta["partitionKey"] = map[string]any{strings.Join(c.pkPath, "/"): ch.pk}
	} else {
		current = withoutLSN(ch.current)
	}
	ch.encoded, _ = json.Marshal(map[string]any{"current": current, "metadata": meta})
	return ch.encoded
}

package cosmostest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Reading requests: header names, path segments, the request's kind, and
// the headers and bodies handlers parse.

// Header names of the Cosmos DB REST protocol.
//
// Response headers are written in lower case, as the service sends them
// (etag, x-ms-session-token, …): clients such as the Python SDK look them up
// in a plain dict by their lower-case name. reply.set stores them in the
// response header map as given, because Header.Set would canonicalise them.
// Go clients read them case-insensitively either way.
//
// Request headers are read with headerValue, by the canonical names net/http
// stores them under; error messages quote them in lower case, as the
// service does.
const (
	hdrActivityID     = "x-ms-activity-id"
	hdrRequestCharge  = "x-ms-request-charge"
	hdrSessionToken   = "x-ms-session-token"
	hdrSubStatus      = "x-ms-substatus"
	hdrRetryAfterMs   = "x-ms-retry-after-ms"
	hdrContinuation   = "x-ms-continuation"
	hdrItemCount      = "x-ms-item-count"
	hdrETag           = "etag"
	hdrContentPath    = "x-ms-content-path"     // the owning container's _rid
	hdrAltContentPath = "x-ms-alt-content-path" // the owning container's name path
	hdrLSN            = "lsn"
	hdrContentType    = "Content-Type"
	hdrContentLength  = "Content-Length"

	hdrClientActivityID    = "X-Ms-Activity-Id"  // a client's own, echoed back as hdrActivityID
	hdrClientContinuation  = "X-Ms-Continuation" // hdrContinuation, sent back by the client
	hdrMaxItemCount        = "X-Ms-Max-Item-Count"
	hdrPartitionKey        = "X-Ms-Documentdb-Partitionkey"
	hdrPartitionKeyRangeID = "X-Ms-Documentdb-Partitionkeyrangeid"
	hdrIsQuery             = "X-Ms-Documentdb-Isquery"
	hdrIsUpsert            = "X-Ms-Documentdb-Is-Upsert"
	hdrCrossPartition      = "X-Ms-Documentdb-Query-Enablecrosspartition"
	hdrReadKeyType         = "X-Ms-Read-Key-Type"
	hdrStartEPK            = "X-Ms-Start-Epk"
	hdrEndEPK              = "X-Ms-End-Epk"
	hdrAIM                 = "A-Im"
	hdrDate                = "X-Ms-Date"
	hdrPrefer              = "Prefer"
	hdrOfferThroughput     = "X-Ms-Offer-Throughput"
	hdrAutopilotSettings   = "X-Ms-Cosmos-Offer-Autopilot-Settings"
	hdrQueryPlanRequest    = "X-Ms-Cosmos-Is-Query-Plan-Request"
)

// headerValue is h.Get without canonicalising name on every call (about a
// dozen calls per request; BENCHMARKS.md, "After issue N, measured by
// instructions"): requests are read by their canonical names, and replies
// by the names they were set under.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// splitPath is strings.Split of p without its leading and trailing slashes
// (nothing for an empty path).
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// classify needs the path's segments (splitPath of r.URL.Path).
func classify(r *http.Request, segs []string) RequestKind {
	n := len(segs)
	switch {
	case n == 0:
		return kindAccount
	case n == 2 && segs[0] == "dbs":
		return kindDatabase
	case n == 4 && segs[2] == "colls":
		return kindContainer
	case n == 5 && segs[4] == "pkranges":
		return kindPKRanges
	case n == 5 && segs[4] == "docs":
		switch r.Method {
		case http.MethodPost:
			if isQuery(r) {
				return KindQuery
			}
			return kindCreate
		case http.MethodGet:
			if isChangeFeedAIM(headerValue(r.Header, hdrAIM)) {
				return KindChangeFeed
			}
			return kindReadFeed
		}
	case n == 6 && segs[4] == "docs":
		switch r.Method {
		case http.MethodGet:
			return kindReadItem
		case http.MethodPut:
			return kindReplace
		case http.MethodDelete:
			return kindDelete
		}
	}
	return kindOther
}

func isQuery(r *http.Request) bool {
	ct := strings.ToLower(headerValue(r.Header, "Content-Type"))
	return strings.EqualFold(headerValue(r.Header, hdrIsQuery), "true") || strings.HasPrefix(ct, "application/query+json")
}

// partitionKeyHeader parses x-ms-documentdb-partitionkey, a JSON array with
// one value; [{}] stands for an undefined (missing) value. ok is false when
// the header is absent.
func partitionKeyHeader(r *http.Request) (value any, ok bool, rep *reply) {
	raw := headerValue(r.Header, hdrPartitionKey)
	if raw == "" {
		return nil, false, nil
	}
	var vals []any
	if err := json.Unmarshal([]byte(raw), &vals); err != nil {
		return nil, false, badRequest("the partition key header %q is not a JSON array", raw)
	}
	if len(vals) != 1 {
		return nil, false, badRequest("the partition key header must hold exactly one value for a single-path partition key, got %d", len(vals))
	}
	if m, isMap := vals[0].(map[string]any); isMap && len(m) == 0 {
		return nil, true, nil
	}
	return vals[0], true, nil
}

func requirePartitionKey(r *http.Request) (string, *reply) {
	v, ok, rep := partitionKeyHeader(r)
	if rep != nil {
		return "", rep
	}
	if !ok {
		return "", badRequest("the partition key must be supplied in the %s header for this operation", strings.ToLower(hdrPartitionKey))
	}
	return epkOf(v), nil
}

func readBody(r *http.Request) ([]byte, *reply) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 2<<20+1))
	if err != nil {
		return nil, badRequest("read request body: %v", err)
	}
	if len(b) > 2<<20 {
		return nil, errorReply(http.StatusRequestEntityTooLarge, 0, "RequestEntityTooLarge", "the request exceeds the 2 MB item size limit")
	}
	return b, nil
}

// readDocument reads a request body that must be one JSON object (an item).
func readDocument(r *http.Request) (map[string]any, *reply) {
	b, rep := readBody(r)
	if rep != nil {
		return nil, rep
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, badRequest("the request body is not a JSON object")
	}
	return doc, nil
}

// maxItemCount reads x-ms-max-item-count: absent or -1 means the default page
// size of 100; explicit values are honoured up to 1000.
func maxItemCount(r *http.Request) (int, *reply) {
	raw := headerValue(r.Header, hdrMaxItemCount)
	if raw == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		return 0, badRequest("invalid value %q for %s", raw, strings.ToLower(hdrMaxItemCount))
	case n == -1:
		return 100, nil
	case n < 1:
		return 0, badRequest("invalid value %d for %s: it must be positive or -1", n, strings.ToLower(hdrMaxItemCount))
	case n > 1000:
		return 1000, nil
	}
	return n, nil
}

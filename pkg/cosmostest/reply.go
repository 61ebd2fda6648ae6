package cosmostest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Request and response header names of the Cosmos DB REST protocol. Most
// are written in Go's canonical form, so http.Header's Get and Set use them
// as they are instead of allocating a canonicalised copy on every call (the
// wire is the same: net/http always sends canonical names). The lower-case
// ones are also quoted in error messages; requests are read through the
// canonical key… constants below.
const (
	hdrActivityID          = "X-Ms-Activity-Id"
	hdrRequestCharge       = "X-Ms-Request-Charge"
	hdrSessionToken        = "X-Ms-Session-Token"
	hdrSubStatus           = "X-Ms-Substatus"
	hdrRetryAfterMs        = "X-Ms-Retry-After-Ms"
	hdrContinuation        = "X-Ms-Continuation"
	hdrMaxItemCount        = "x-ms-max-item-count"
	hdrItemCount           = "X-Ms-Item-Count"
	hdrPartitionKey        = "x-ms-documentdb-partitionkey"
	hdrPartitionKeyRangeID = "x-ms-documentdb-partitionkeyrangeid"
	hdrIsQuery             = "X-Ms-Documentdb-Isquery"
	hdrIsUpsert            = "X-Ms-Documentdb-Is-Upsert"
	hdrCrossPartition      = "x-ms-documentdb-query-enablecrosspartition"
	hdrReadKeyType         = "X-Ms-Read-Key-Type"
	hdrStartEPK            = "X-Ms-Start-Epk"
	hdrEndEPK              = "X-Ms-End-Epk"
	hdrAIM                 = "A-Im"
	hdrDate                = "X-Ms-Date"
	hdrPrefer              = "Prefer"
	hdrContentType         = "Content-Type"
	hdrContentLength       = "Content-Length"

	keyPartitionKeyRangeID = "X-Ms-Documentdb-Partitionkeyrangeid" // hdrPartitionKeyRangeID, canonical
	keyPartitionKey        = "X-Ms-Documentdb-Partitionkey"        // hdrPartitionKey, canonical
	keyMaxItemCount        = "X-Ms-Max-Item-Count"                 // hdrMaxItemCount, canonical
)

// Request charges are plausible constants; nothing in the project depends on
// their exact values, only on the header being present.
const (
	chargePointRead  = 1
	chargeWrite      = 5.71
	chargeQuery      = 2.8
	chargeChangeFeed = 1
	chargeMetadata   = 1
)

// reply is a fully computed answer. Handlers build one under the server lock;
// it is recorded and then written without holding the lock.
type reply struct {
	status int
	header http.Header
	body   []byte
	charge float64
}

func newReply(status int, charge float64) *reply {
	return &reply{status: status, header: http.Header{}, charge: charge}
}

func jsonReply(status int, charge float64, v any) *reply {
	rep := newReply(status, charge)
	b, err := json.Marshal(v)
	if err != nil {
		return errorReply(http.StatusInternalServerError, 0, "InternalServerError", "encode response: "+err.Error())
	}
	rep.body = b
	return rep
}

// documentsReply answers with a page of documents, the body shape of query
// and change feed pages. The body is byte for byte what json.Marshal writes
// for the map {"_rid": rid, "Documents": docs, "_count": len(docs)} (keys
// sorted, documents compacted and HTML-escaped), but it is assembled from the
// documents' cached encodings, which json.Marshal already produced in that
// form: re-validating every document of every page through json.RawMessage
// was a sizeable share of the server's CPU per request.
func documentsReply(charge float64, rid string, docs []json.RawMessage) *reply {
	ridJSON, err := json.Marshal(rid)
	if err != nil {
		return errorReply(http.StatusInternalServerError, 0, "InternalServerError", "encode response: "+err.Error())
	}
	count := strconv.Itoa(len(docs))
	size := len(`{"Documents":[],"_count":,"_rid":}`) + len(docs)*len("null,") + len(count) + len(ridJSON)
	for _, d := range docs {
		size += len(d)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"Documents":[`...)
	for i, d := range docs {
		if i > 0 {
			b = append(b, ',')
		}
		if d == nil {
			d = json.RawMessage("null") // as json.Marshal writes a nil RawMessage
		}
		b = append(b, d...)
	}
	b = append(b, `],"_count":`...)
	b = append(b, count...)
	b = append(b, `,"_rid":`...)
	b = append(b, ridJSON...)
	b = append(b, '}')
	rep := newReply(http.StatusOK, charge)
	rep.body = b
	return rep
}

// cosmosError is the error body shape of the service.
type cosmosError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errorReply(status, subStatus int, code, message string) *reply {
	rep := newReply(status, 0)
	if subStatus != 0 {
		rep.header.Set(hdrSubStatus, strconv.Itoa(subStatus))
	}
	rep.body, _ = json.Marshal(cosmosError{Code: code, Message: message})
	return rep
}

func badRequest(format string, args ...any) *reply {
	return errorReply(http.StatusBadRequest, 0, "BadRequest", fmt.Sprintf(format, args...))
}

func notFound(message string) *reply {
	return errorReply(http.StatusNotFound, 0, "NotFound", message)
}

func methodNotAllowed() *reply {
	return errorReply(http.StatusMethodNotAllowed, 0, "MethodNotAllowed", "the method is not supported on this resource")
}

// partitionGone is the answer for a physical range that split or merged away.
func partitionGone(rangeID string) *reply {
	return errorReply(http.StatusGone, subStatusPartitionKeyRangeGone, "Gone",
		"PartitionKeyRangeGone: partition key range "+rangeID+" is gone after a split or merge")
}

// Substatus codes of 410 Gone.
const (
	subStatusPartitionKeyRangeGone = 1002
	subStatusCompletingSplit       = 1007
)

func (rep *reply) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	if h.Get(hdrContentType) == "" {
		h.Set(hdrContentType, "application/json")
	}
	if h.Get(hdrRequestCharge) == "" {
		h.Set(hdrRequestCharge, strconv.FormatFloat(rep.charge, 'f', -1, 64))
	}
	if id := r.Header.Get(hdrActivityID); id != "" {
		h.Set(hdrActivityID, id)
	} else {
		h.Set(hdrActivityID, newActivityID())
	}
	if rep.body != nil && rep.status != http.StatusNotModified && rep.status != http.StatusNoContent {
		h.Set(hdrContentLength, strconv.Itoa(len(rep.body)))
	}
	w.WriteHeader(rep.status)
	if rep.body != nil && rep.status != http.StatusNotModified && rep.status != http.StatusNoContent && r.Method != http.MethodHead {
		_, _ = w.Write(rep.body)
	}
}

// newActivityID returns a random (version 4) GUID, as the service sends in
// x-ms-activity-id, formatted into one buffer rather than through Sprintf.
func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

package cosmostest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Request and response header names of the Cosmos DB REST protocol.
const (
	hdrActivityID          = "x-ms-activity-id"
	hdrRequestCharge       = "x-ms-request-charge"
	hdrSessionToken        = "x-ms-session-token"
	hdrSubStatus           = "x-ms-substatus"
	hdrRetryAfterMs        = "x-ms-retry-after-ms"
	hdrContinuation        = "x-ms-continuation"
	hdrMaxItemCount        = "x-ms-max-item-count"
	hdrItemCount           = "x-ms-item-count"
	hdrPartitionKey        = "x-ms-documentdb-partitionkey"
	hdrPartitionKeyRangeID = "x-ms-documentdb-partitionkeyrangeid"
	hdrIsQuery             = "x-ms-documentdb-isquery"
	hdrIsUpsert            = "x-ms-documentdb-is-upsert"
	hdrCrossPartition      = "x-ms-documentdb-query-enablecrosspartition"
	hdrReadKeyType         = "x-ms-read-key-type"
	hdrStartEPK            = "x-ms-start-epk"
	hdrEndEPK              = "x-ms-end-epk"
	hdrAIM                 = "A-IM"
	hdrDate                = "x-ms-date"
	hdrPrefer              = "Prefer"
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
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
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
		h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	}
	w.WriteHeader(rep.status)
	if rep.body != nil && rep.status != http.StatusNotModified && rep.status != http.StatusNoContent && r.Method != http.MethodHead {
		_, _ = w.Write(rep.body)
	}
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

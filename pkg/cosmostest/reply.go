package cosmostest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
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
	header http.Header // names as given: response headers go out in lower case (parse.go)
	body   []byte
	charge float64
}

func newReply(status int, charge float64) *reply {
	return &reply{status: status, header: http.Header{}, charge: charge}
}

// set is Header.Set without canonicalisation: the key is written as given.
func (rep *reply) set(key, value string) { rep.header[key] = []string{value} }

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
// form, instead of re-validating every document of every page through
// json.RawMessage (BENCHMARKS.md, "The embedded server").
func documentsReply(charge float64, rid string, docs []json.RawMessage) *reply {
	var ridJSON []byte
	if !isPlainJSONString(rid) {
		var err error
		if ridJSON, err = json.Marshal(rid); err != nil {
			return errorReply(http.StatusInternalServerError, 0, "InternalServerError", "encode response: "+err.Error())
		}
	}
	count := strconv.Itoa(len(docs))
	size := len(`{"Documents":[],"_count":,"_rid":""}`) + len(docs)*len("null,") + len(count) + len(rid) + len(ridJSON)
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
	if ridJSON == nil {
		b = append(b, '"')
		b = append(b, rid...)
		b = append(b, '"')
	} else {
		b = append(b, ridJSON...)
	}
	b = append(b, '}')
	rep := newReply(http.StatusOK, charge)
	rep.body = b
	return rep
}

// isPlainJSONString reports whether json.Marshal encodes s as s in quotes:
// printable ASCII without quotes, backslashes or HTML characters, as every
// resource id the server makes.
func isPlainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// cosmosError is the error body shape of the service.
type cosmosError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errorReply(status, subStatus int, code, message string) *reply {
	rep := newReply(status, 0)
	if subStatus != 0 {
		rep.set(hdrSubStatus, strconv.Itoa(subStatus))
	}
	rep.body, _ = json.Marshal(cosmosError{Code: code, Message: message})
	return rep
}

// badRequest quotes what the client sent through excerpt.Of, so a huge
// header or query cannot make an error body (or a client's log of it) huge.
func badRequest(format string, args ...any) *reply {
	for i, arg := range args {
		if s, ok := arg.(string); ok {
			args[i] = excerpt.Of(s)
		}
	}
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

func formatCharge(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }

func (rep *reply) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	if headerValue(h, hdrContentType) == "" {
		h[hdrContentType] = []string{"application/json"}
	}
	if headerValue(h, hdrRequestCharge) == "" {
		h[hdrRequestCharge] = []string{formatCharge(rep.charge)}
	}
	id := headerValue(r.Header, hdrClientActivityID)
	if id == "" {
		id = newActivityID()
	}
	h[hdrActivityID] = []string{id}
	hasBody := rep.body != nil && rep.status != http.StatusNotModified && rep.status != http.StatusNoContent
	if hasBody {
		h[hdrContentLength] = []string{strconv.Itoa(len(rep.body))}
	}
	w.WriteHeader(rep.status)
	if hasBody && r.Method != http.MethodHead {
		_, _ = w.Write(rep.body)
	}
}

// newActivityID returns a random (version 4) GUID, as the service sends in
// x-ms-activity-id.
func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

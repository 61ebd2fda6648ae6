package cosmostest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/excerpt"
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
//
// Handlers set their few response headers with set, which keeps them in
// fields (no map, no canonicalisation); headerMap turns them into a map for
// the rare replies that need one (faults with custom headers).
type reply struct {
	status  int
	fields  [8]headerField // the first nfields are set
	nfields int
	header  http.Header // nil unless headerMap was called; then it holds every header
	body    []byte
	charge  float64
}

type headerField struct{ key, value string }

func newReply(status int, charge float64) *reply {
	return &reply{status: status, charge: charge}
}

// set is Header.Set without canonicalisation: the key is written as given.
func (rep *reply) set(key, value string) {
	if rep.header == nil {
		for i := range rep.fields[:rep.nfields] {
			if rep.fields[i].key == key {
				rep.fields[i].value = value
				return
			}
		}
		if rep.nfields < len(rep.fields) {
			rep.fields[rep.nfields] = headerField{key, value}
			rep.nfields++
			return
		}
	}
	rep.headerMap()[key] = []string{value}
}

// headerMap moves the headers set so far into a map and returns it; later
// sets go to the map too.
func (rep *reply) headerMap() http.Header {
	if rep.header == nil {
		rep.header = make(http.Header, rep.nfields+2)
		for _, f := range rep.fields[:rep.nfields] {
			rep.header[f.key] = []string{f.value}
		}
		rep.nfields = 0
	}
	return rep.header
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

// chargeStrings are the formatted request charges of the constant charges.
var chargeStrings = func() map[float64]string {
	m := map[float64]string{}
	for _, c := range []float64{0, chargePointRead, chargeWrite, chargeQuery, chargeChangeFeed, chargeMetadata} {
		m[c] = strconv.FormatFloat(c, 'f', -1, 64)
	}
	return m
}()

func formatCharge(c float64) string {
	if s, ok := chargeStrings[c]; ok {
		return s
	}
	return strconv.FormatFloat(c, 'f', -1, 64)
}

func (rep *reply) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	// The values of the headers set here share one allocation, as
	// Header.Clone does; each gets a slice of capacity 1 of it.
	vals := make([]string, 0, rep.nfields+4)
	put := func(key, value string) {
		vals = append(vals, value)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for _, f := range rep.fields[:rep.nfields] {
		put(f.key, f.value)
	}
	if v := h[hdrContentType]; len(v) == 0 || v[0] == "" {
		put(hdrContentType, "application/json")
	}
	if v := h[hdrRequestCharge]; len(v) == 0 || v[0] == "" {
		put(hdrRequestCharge, formatCharge(rep.charge))
	}
	if id := headerValue(r.Header, keyActivityID); id != "" {
		put(hdrActivityID, id)
	} else {
		put(hdrActivityID, newActivityID())
	}
	if rep.body != nil && rep.status != http.StatusNotModified && rep.status != http.StatusNoContent {
		put(hdrContentLength, strconv.Itoa(len(rep.body)))
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

package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
)

// subStatusPartitionKeyRangeGone (x-ms-substatus 1002 with a 410): the
// range split or merged. It is the only substatus the scaler branches on.
const subStatusPartitionKeyRangeGone = 1002

// MaxResponseBytes bounds what the scaler reads from one response. Cosmos DB
// caps a page at 4 MB; anything far larger is not a response we asked for.
const MaxResponseBytes = 16 << 20

// ResponseError is a non-success answer from Cosmos DB. Its message carries
// the status, substatus and the service's error code, never request headers.
type ResponseError struct {
	Operation  string // what the scaler was doing, e.g. "query leases"
	StatusCode int
	SubStatus  int
	Code       string
	Message    string
	ActivityID string
	RetryAfter time.Duration
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Operation, e.StatusCode)
	if e.SubStatus != 0 {
		msg += fmt.Sprintf(" substatus %d", e.SubStatus)
	}
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.StatusCode == http.StatusTooManyRequests {
		msg += " (throttled)"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.ActivityID != "" {
		msg += " (activity " + e.ActivityID + ")"
	}
	return msg
}

// IsPartitionGone reports a 410 Gone with substatus 1002: the only signal the
// trigger treats as a split or merge of the lease's physical range.
func IsPartitionGone(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusGone && re.SubStatus == subStatusPartitionKeyRangeGone
}

func newResponseError(operation string, resp *http.Response) *ResponseError {
	e := &ResponseError{Operation: operation, StatusCode: resp.StatusCode, ActivityID: resp.Header.Get("x-ms-activity-id")}
	e.SubStatus, _ = strconv.Atoi(resp.Header.Get("x-ms-substatus"))
	if ms, err := strconv.ParseInt(resp.Header.Get("x-ms-retry-after-ms"), 10, 64); err == nil && ms > 0 {
		e.RetryAfter = time.Duration(ms) * time.Millisecond
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var payload struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &payload) == nil {
		e.Code = account.Excerpt(payload.Code)
		e.Message = firstLine(payload.Message, 200)
	}
	return e
}

func firstLine(s string, limit int) string {
	for i, r := range s {
		if r == '\n' || r == '\r' || i >= limit {
			return s[:i]
		}
	}
	return s
}

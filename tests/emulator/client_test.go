package emulator

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// maxResponseBytes is the cap on one response body: the service's pages
// are at most 4 MB.
const maxResponseBytes = 16 << 20

// endless is a body that never ends, as from a broken or hostile peer.
type endless struct{ read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// failingAfter yields n bytes, then the error of a dropped connection.
type failingAfter struct{ n int }

func (f *failingAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

// scriptedTries answers try n of the estimate's first request (reading the
// database's RID) with responses[n], the last one repeating, and counts
// the tries.
func scriptedTries(t *testing.T, responses ...func() *http.Response) (err error, tries int) {
	t.Helper()
	a := &scriptedAccount{}
	a.every = func() *http.Response {
		tries++
		return responses[min(tries, len(responses))-1]()
	}
	_, err = a.estimate(t)
	return err, tries
}

func TestAnEndlessBodyStopsAtTheCapAndIsNotRetried(t *testing.T) {
	body := &endless{}
	err, tries := scriptedTries(t, func() *http.Response { return bodyResponse(body, -1) })
	if err == nil || !strings.Contains(err.Error(), "read database appdb: response larger than 16777216 bytes") {
		t.Fatalf("err = %v, want the operation and the cap", err)
	}
	if tries != 1 {
		t.Errorf("%d tries, want 1: a body over the cap is not asked for again", tries)
	}
	if read := body.read.Load(); read > maxResponseBytes+64<<10 {
		t.Errorf("read %d bytes of an endless body, want the cap (%d) and little more", read, maxResponseBytes)
	}
}

// A body cut midway is a failed try, retried like a dropped connection:
// the estimate then goes on (here: the container's RID, an empty lease page).
func TestABodyCutMidwayIsRetriedAsAFailedTry(t *testing.T) {
	const doc = `{"id":"appdb","_rid":"dbRID"}`
	err, tries := scriptedTries(t,
		func() *http.Response { return bodyResponse(&failingAfter{n: 5}, int64(len(doc))) },
		func() *http.Response { return bodyResponse(strings.NewReader(doc), int64(len(doc))) },
		func() *http.Response { return bodyResponse(strings.NewReader(`{"_rid":"collRID=="}`), -1) },
		func() *http.Response { return bodyResponse(strings.NewReader(`{"Documents":[]}`), -1) })
	if err != nil {
		t.Fatalf("estimate: %v", err)
	}
	if tries != 4 {
		t.Fatalf("%d requests, want 4 (the cut body, then the whole one, then the container and the lease page)", tries)
	}
}

func TestABodyCutOnEveryTryFailsAfterTheRetries(t *testing.T) {
	err, tries := scriptedTries(t, func() *http.Response { return bodyResponse(&failingAfter{n: 5}, 100) })
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "read database appdb") {
		t.Fatalf("err = %v, want the operation and the read error", err)
	}
	if tries != 4 {
		t.Errorf("%d tries, want 4 (three retries)", tries)
	}
}

func TestABodyLongerThanAnnouncedIsReadWholeUnderTheCap(t *testing.T) {
	a := &scriptedAccount{}
	// The RID reads answer with a body longer than their Content-Length.
	rid := func(body string) *http.Response { return bodyResponse(strings.NewReader(body), 4) }
	var reads int
	a.every = func() *http.Response {
		reads++
		switch reads {
		case 1:
			return rid(`{"_rid":"dbRID"}`)
		case 2:
			return rid(`{"_rid":"collRID=="}`)
		}
		return bodyResponse(strings.NewReader(`{"Documents":[]}`), -1)
	}
	if _, err := a.estimate(t); err != nil {
		t.Fatalf("%v: nothing past the announced length may be dropped", err)
	}

	body := &endless{}
	err, _ := scriptedTries(t, func() *http.Response { return bodyResponse(body, 10) })
	if err == nil || !strings.Contains(err.Error(), "response larger than 16777216 bytes") {
		t.Fatalf("err = %v, want the cap: an announced length does not lift it", err)
	}
	if read := body.read.Load(); read > maxResponseBytes+64<<10 {
		t.Errorf("read %d bytes of an endless body announced as 10, want the cap (%d) and little more", read, maxResponseBytes)
	}
}

// statusResponse is an answer of the service with status and, for a 429,
// the wait it asks for (1 ms, so that the test does not wait).
func statusResponse(status int) func() *http.Response {
	return func() *http.Response {
		r := bodyResponse(strings.NewReader(`{"code":"x","message":"y"}`), -1)
		r.StatusCode = status
		if status == http.StatusTooManyRequests {
			r.Header.Set("x-ms-retry-after-ms", "1")
		}
		return r
	}
}

// A throttled read is retried as often as the Cosmos DB SDKs retry one:
// nine 429s in a row still end in the answer.
func TestAThrottledReadIsRetriedNineTimes(t *testing.T) {
	const doc = `{"id":"appdb","_rid":"dbRID"}`
	responses := make([]func() *http.Response, 0, 12)
	for range 9 {
		responses = append(responses, statusResponse(http.StatusTooManyRequests))
	}
	responses = append(responses,
		func() *http.Response { return bodyResponse(strings.NewReader(doc), int64(len(doc))) },
		func() *http.Response { return bodyResponse(strings.NewReader(`{"_rid":"collRID=="}`), -1) },
		func() *http.Response { return bodyResponse(strings.NewReader(`{"Documents":[]}`), -1) })
	if err, tries := scriptedTries(t, responses...); err != nil || tries != 12 {
		t.Fatalf("err = %v after %d requests, want none after 12 (nine 429s, the database, the container, the lease page)", err, tries)
	}

	err, tries := scriptedTries(t, statusResponse(http.StatusTooManyRequests))
	if err == nil || !strings.Contains(err.Error(), "read database appdb: HTTP 429") || !strings.Contains(err.Error(), "(throttled)") {
		t.Fatalf("err = %v, want the operation and the 429", err)
	}
	if tries != 10 {
		t.Errorf("%d tries of an always throttled read, want 10 (nine retries)", tries)
	}
}

// Any other failure is retried three times, 429s between them not counted:
// a failing account fails the poll within seconds.
func TestOtherFailuresAreRetriedThreeTimes(t *testing.T) {
	err, tries := scriptedTries(t, statusResponse(http.StatusServiceUnavailable))
	if err == nil || !strings.Contains(err.Error(), "read database appdb: HTTP 503") {
		t.Fatalf("err = %v, want the operation and the 503", err)
	}
	if tries != 4 {
		t.Errorf("%d tries of an always unavailable account, want 4 (three retries)", tries)
	}

	err, tries = scriptedTries(t,
		statusResponse(http.StatusServiceUnavailable), statusResponse(http.StatusTooManyRequests),
		statusResponse(http.StatusTooManyRequests), statusResponse(http.StatusServiceUnavailable))
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err = %v, want the last 503", err)
	}
	if tries != 6 {
		t.Errorf("%d tries, want 6: two 429s and four other failures", tries)
	}
}

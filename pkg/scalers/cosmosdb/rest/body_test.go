package rest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedTransport answers try n with responses[n] (the last one repeats).
type scriptedTransport struct {
	tries     atomic.Int32
	responses []func() *http.Response
}

func (s *scriptedTransport) Do(req *http.Request) (*http.Response, error) {
	n := int(s.tries.Add(1)) - 1
	resp := s.responses[min(n, len(s.responses)-1)]()
	resp.Request = req
	return resp, nil
}

func okResponse(body io.Reader, contentLength int64) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(body), ContentLength: contentLength}
}

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

func testClient(t *testing.T, tr *scriptedTransport) *Client {
	t.Helper()
	retry := DefaultRetry
	retry.RetryDelay, retry.MaxRetryDelay = time.Millisecond, time.Millisecond
	return NewClient(testAccount(t), ClientOptions{Transport: tr, Retry: &retry})
}

func getBody(t *testing.T, c *Client) ([]byte, error) {
	t.Helper()
	req, err := c.NewRequest(context.Background(), http.MethodGet, c.Resource("dbs", "d"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, "read database d", http.StatusOK)
	if err != nil {
		return nil, err
	}
	return ReadBody(resp, "read database d")
}

func TestAnEndlessBodyStopsAtTheCapAndIsNotRetried(t *testing.T) {
	body := &endless{}
	tr := &scriptedTransport{responses: []func() *http.Response{func() *http.Response { return okResponse(body, -1) }}}
	_, err := getBody(t, testClient(t, tr))
	if err == nil || !strings.Contains(err.Error(), "read database d: response larger than 16777216 bytes") {
		t.Fatalf("err = %v, want the operation and the cap", err)
	}
	if tries := tr.tries.Load(); tries != 1 {
		t.Errorf("%d tries, want 1: a body over the cap is not asked for again", tries)
	}
	if read := body.read.Load(); read > MaxResponseBytes+64<<10 {
		t.Errorf("read %d bytes of an endless body, want the cap (%d) and little more", read, MaxResponseBytes)
	}
}

func TestABodyCutMidwayIsRetriedAsAFailedTry(t *testing.T) {
	const doc = `{"id":"d","_rid":"abc="}`
	tr := &scriptedTransport{responses: []func() *http.Response{
		func() *http.Response { return okResponse(&failingAfter{n: 5}, int64(len(doc))) },
		func() *http.Response { return okResponse(strings.NewReader(doc), int64(len(doc))) },
	}}
	got, err := getBody(t, testClient(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != doc {
		t.Errorf("body %q, want %q", got, doc)
	}
	if tries := tr.tries.Load(); tries != 2 {
		t.Errorf("%d tries, want 2 (the cut body, then the whole one)", tries)
	}
}

func TestABodyCutOnEveryTryFailsAfterTheRetries(t *testing.T) {
	tr := &scriptedTransport{responses: []func() *http.Response{
		func() *http.Response { return okResponse(&failingAfter{n: 5}, 100) },
	}}
	_, err := getBody(t, testClient(t, tr))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the read error", err)
	}
	if tries, want := tr.tries.Load(), int32(DefaultRetry.MaxRetries+1); tries != want {
		t.Errorf("%d tries, want %d", tries, want)
	}
}

func TestABodyLongerThanAnnouncedIsReadWholeUnderTheCap(t *testing.T) {
	const doc = `{"id":"d","_rid":"abc="}`
	tr := &scriptedTransport{responses: []func() *http.Response{
		func() *http.Response { return okResponse(strings.NewReader(doc), 4) },
	}}
	got, err := getBody(t, testClient(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != doc {
		t.Errorf("body %q, want %q: nothing past the announced length may be dropped", got, doc)
	}

	body := &endless{}
	tr = &scriptedTransport{responses: []func() *http.Response{func() *http.Response { return okResponse(body, 10) }}}
	if _, err := getBody(t, testClient(t, tr)); err == nil || !strings.Contains(err.Error(), "response larger than 16777216 bytes") {
		t.Fatalf("err = %v, want the cap: an announced length does not lift it", err)
	}
	if read := body.read.Load(); read > MaxResponseBytes+64<<10 {
		t.Errorf("read %d bytes of an endless body announced as 10, want the cap (%d) and little more", read, MaxResponseBytes)
	}
}

package cosmostest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaultStatusesWithTimes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault Fault
	}{
		{"410/1002 partition gone", Fault{Status: 410, SubStatus: 1002}},
		{"410/1007 completing split", Fault{Status: 410, SubStatus: 1007}},
		{"429 with retry-after", Fault{Status: 429, RetryAfter: 250 * time.Millisecond}},
		{"500", Fault{Status: 500}},
		{"503", Fault{Status: 503}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t)
			c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
			if err := c.WriteItemsToRange("0", 1); err != nil {
				t.Fatal(err)
			}
			f := tc.fault
			f.Kind, f.RangeID, f.Times = KindChangeFeed, "0", 2
			s.Handler.InjectFault(f)

			// Another range and another kind are not hit.
			resp, raw := changeFeed(t, s, c, "1", "", nil)
			wantStatus(t, resp, raw, http.StatusNotModified)
			resp, raw = call(t, s, http.MethodGet, "/dbs/db", nil, nil)
			wantStatus(t, resp, raw, http.StatusOK)

			for i := 0; i < 2; i++ {
				resp, raw = changeFeed(t, s, c, "0", "", nil)
				wantStatus(t, resp, raw, f.Status)
				if f.SubStatus != 0 && resp.Header.Get("x-ms-substatus") != itoa(f.SubStatus) {
					t.Errorf("substatus %q, want %d", resp.Header.Get("x-ms-substatus"), f.SubStatus)
				}
				if f.Status == 429 && resp.Header.Get("x-ms-retry-after-ms") != "250" {
					t.Errorf("retry-after %q", resp.Header.Get("x-ms-retry-after-ms"))
				}
				var body cosmosError
				if err := json.Unmarshal(raw, &body); err != nil || body.Code == "" {
					t.Errorf("error body %s", raw)
				}
			}
			// Spent after Times requests.
			resp, raw = changeFeed(t, s, c, "0", "", nil)
			wantStatus(t, resp, raw, http.StatusOK)

			reqs := s.Handler.Requests()
			var statuses []int
			for _, r := range reqs {
				if r.Kind == KindChangeFeed && r.RangeID == "0" {
					statuses = append(statuses, r.Status)
				}
			}
			if len(statuses) != 3 || statuses[0] != f.Status || statuses[1] != f.Status || statuses[2] != 200 {
				t.Errorf("logged statuses %v", statuses)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestFaultAlwaysUntilRemoved(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db")
	remove := s.Handler.InjectFault(Fault{Status: 503})
	for i := 0; i < 3; i++ {
		resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
		wantStatus(t, resp, raw, 503)
	}
	remove()
	remove() // idempotent
	resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, 200)
}

func TestFaultMalformedBody(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db").CreateContainer("leases", "/id", 1)
	s.Handler.InjectFault(Fault{Kind: KindQuery, MalformedBody: true, Times: 1})
	resp, raw := query(t, s, "SELECT * FROM c", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		t.Fatalf("body %s parsed", raw)
	}
	resp, raw = query(t, s, "SELECT * FROM c", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	decode(t, raw)
}

func TestFaultDroppedConnection(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db")
	s.Handler.InjectFault(Fault{Kind: kindDatabase, DropConnection: true, Times: 1})
	// A fresh connection per request, so the transport cannot retry silently.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	_, err := send(s, client, context.Background(), "/dbs/db")
	if err == nil {
		t.Fatal("request over a dropped connection succeeded")
	}
	resp, err := send(s, client, context.Background(), "/dbs/db")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the fault: %v %v", resp, err)
	}
	if reqs := s.Handler.Requests(); len(reqs) != 2 || reqs[0].Status != 0 || reqs[1].Status != 200 {
		t.Errorf("log %+v", reqs)
	}
}

func send(s *Server, client *http.Client, ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.URL(), "/")+path, nil)
	if err != nil {
		return nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, _ := MasterKeyAuthorization(s.Key(), http.MethodGet, path, date)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

func TestFaultLatency(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db")
	s.Handler.InjectFault(Fault{Kind: kindDatabase, latency: 150 * time.Millisecond, Times: 1})
	start := time.Now()
	resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, 200)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("answered after %v, want >= 150ms", d)
	}
	start = time.Now()
	call(t, s, http.MethodGet, "/dbs/db", nil, nil)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("second request took %v; the latency fault was for one request", d)
	}
}

func TestLatencyHonoursRequestContext(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db")
	s.Handler.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := send(s, s.Client(), ctx, "/dbs/db")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancelled request took %v", d)
	}
	// The handler notices the cancellation and records the request without
	// an answer; goleak (TestMain) proves no goroutine keeps sleeping.
	deadline := time.Now().Add(5 * time.Second)
	for s.Handler.Count(kindDatabase) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if reqs := s.Handler.Requests(); len(reqs) != 1 || reqs[0].Status != 0 {
		t.Errorf("log %+v", reqs)
	}
	s.Handler.SetLatency(0)
	resp, err := send(s, s.Client(), context.Background(), "/dbs/db")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
}

func TestCloseWakesSleepingHandlers(t *testing.T) {
	s := NewServer()
	s.Account.CreateDatabase("db")
	s.Handler.InjectFault(Fault{latency: time.Hour})
	errc := make(chan error, 1)
	go func() {
		_, err := send(s, s.Client(), context.Background(), "/dbs/db")
		errc <- err
	}()
	// Wait until the request is inside the handler.
	deadline := time.Now().Add(5 * time.Second)
	for !handlersBusy(s) {
		if time.Now().After(deadline) {
			t.Fatal("request never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a handler slept on latency")
	}
	if err := <-errc; err == nil {
		t.Error("the sleeping request got an answer after Close")
	}
}

// handlersBusy reports whether a handler is running.
func handlersBusy(s *Server) bool {
	return s.Handler.inFlight.Load() > 0
}

func TestRequestLogAndCounters(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	call(t, s, http.MethodGet, "/", nil, nil)
	call(t, s, http.MethodGet, "/dbs/db/colls/data", nil, nil)
	call(t, s, http.MethodGet, "/dbs/db/colls/data/pkranges", nil, nil)
	changeFeed(t, s, c, "1", "", nil)
	if s.Handler.Count(kindAccount) != 1 || s.Handler.Count(kindContainer) != 1 || s.Handler.Count(kindPKRanges) != 1 || s.Handler.Count(KindChangeFeed) != 1 || s.Handler.Count("") != 4 {
		t.Errorf("counts: %+v", s.Handler.Requests())
	}
	r := s.Handler.Requests()[3]
	if r.RangeID != "1" || r.Method != http.MethodGet || r.Path != "/dbs/db/colls/data/docs" || r.Status != 304 || r.At.IsZero() {
		t.Errorf("change feed entry %+v", r)
	}
	s.Handler.ResetRequests()
	if s.Handler.Count("") != 0 {
		t.Error("ResetRequests kept entries")
	}
}

func TestFaultHookChangesTopologyMidSequence(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItemsToRange("0", 4); err != nil {
		t.Fatal(err)
	}
	s.Handler.InjectFault(Fault{Kind: KindChangeFeed, Times: 1, Hook: func() {
		if _, _, err := c.Split("0"); err != nil {
			t.Error(err)
		}
	}})
	// The range was live when the client decided to read it, and is gone by
	// the time the read is answered.
	resp, raw := changeFeed(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, http.StatusGone)
	if len(c.Ranges()) != 2 {
		t.Errorf("ranges after hook: %+v", c.Ranges())
	}
}

func TestFaultCustomBodyAndHeaders(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	body := []byte(`{"_rid":"x","Documents":[{"id":"a","_lsn":99999999999999999999999}],"_count":1}`)
	s.Handler.InjectFault(Fault{Kind: KindChangeFeed, Times: 1, Body: body, Header: http.Header{
		"X-Ms-Session-Token": {"0:-1#99999999999999999999999"},
		"Etag":               {`"99999999999999999999999"`},
	}})
	resp, raw := changeFeed(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if string(raw) != string(body) || resp.Header.Get("x-ms-session-token") != "0:-1#99999999999999999999999" {
		t.Errorf("custom answer %s %v", raw, resp.Header)
	}
	if resp.Header.Get("x-ms-request-charge") == "" || resp.Header.Get("x-ms-activity-id") == "" {
		t.Errorf("standard headers missing: %v", resp.Header)
	}
	s.Handler.InjectFault(Fault{Kind: KindChangeFeed, Times: 1, Status: 429, RetryAfter: time.Second, Header: http.Header{"X-Extra": {"1"}}})
	resp, raw = changeFeed(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, 429)
	if resp.Header.Get("x-extra") != "1" || resp.Header.Get("x-ms-retry-after-ms") != "1000" {
		t.Errorf("headers %v", resp.Header)
	}
}

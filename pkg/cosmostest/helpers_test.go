package cosmostest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// call sends a master-key signed request with the server's client.
func call(t testing.TB, s *Server, method, path string, hdr map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	return callAt(t, s, time.Now(), method, path, hdr, body)
}

func callAt(t testing.TB, s *Server, at time.Time, method, path string, hdr map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/")+path, testhelp.Body(t, body))
	if err != nil {
		t.Fatal(err)
	}
	date := at.UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	auth, err := MasterKeyAuthorization(s.Key(), method, path, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, raw
}

func decode(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return m
}

func wantStatus(t testing.TB, resp *http.Response, raw []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, raw)
	}
}

// changeFeed reads one page of a range's change feed.
func changeFeed(t testing.TB, s *Server, c *Container, rangeID, etag string, extra map[string]string) (*http.Response, []byte) {
	t.Helper()
	hdr := map[string]string{
		"A-IM":                                "Incremental feed",
		"x-ms-documentdb-partitionkeyrangeid": rangeID,
		"If-None-Match":                       etag,
	}
	for k, v := range extra {
		hdr[k] = v
	}
	return call(t, s, http.MethodGet, "/dbs/"+c.Database().ID()+"/colls/"+c.ID()+"/docs", hdr, nil)
}

func docsOf(t testing.TB, raw []byte) []map[string]any {
	t.Helper()
	var body struct {
		Documents []map[string]any
		Count     int `json:"_count"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	if body.Count != len(body.Documents) {
		t.Fatalf("_count %d but %d documents", body.Count, len(body.Documents))
	}
	return body.Documents
}

func newTestServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s := NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

package cosmostest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// rawHeaderNames sends a signed request over a plain TCP connection and
// returns the response's header names exactly as written on the wire (Go's
// client would canonicalise them).
func rawHeaderNames(t *testing.T, s *Server, method, path string, hdr map[string]string, body any) []string {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/")+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := MasterKeyAuthorization(s.Key(), method, path, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Connection", "close")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	tp := textproto.NewReader(bufio.NewReader(conn))
	if _, err := tp.ReadLine(); err != nil { // status line
		t.Fatal(err)
	}
	var names []string
	for {
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		if line == "" {
			return names
		}
		name, _, _ := strings.Cut(line, ":")
		names = append(names, name)
	}
}

// The service sends its own headers in lower case; clients that keep
// headers in a plain dictionary (the Python SDK) look them up that way.
func TestResponseHeaderNamesAreLowerCase(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("orders", "/pk", 1)
	if err := c.WriteItems("p", 2); err != nil {
		t.Fatal(err)
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	for _, tc := range []struct {
		name         string
		method, path string
		hdr          map[string]string
		body         any
		want         []string
	}{
		{"create", http.MethodPost, "/dbs/db/colls/orders/docs", pk, map[string]any{"id": "new", "pk": "p"},
			[]string{"etag", "x-ms-session-token", "x-ms-request-charge", "x-ms-activity-id", "x-ms-content-path", "x-ms-alt-content-path"}},
		{"change feed", http.MethodGet, "/dbs/db/colls/orders/docs",
			map[string]string{"A-IM": "Incremental feed", "x-ms-documentdb-partitionkeyrangeid": "0", "x-ms-max-item-count": "1"}, nil,
			[]string{"etag", "x-ms-session-token", "x-ms-item-count", "lsn", "x-ms-content-path"}},
		{"query page", http.MethodPost, "/dbs/db/colls/orders/docs",
			map[string]string{"Content-Type": "application/query+json", "x-ms-max-item-count": "1"}, queryBody{Query: "SELECT * FROM c"},
			[]string{"x-ms-continuation", "x-ms-item-count", "x-ms-session-token"}},
		{"gone", http.MethodGet, "/dbs/db/colls/orders/docs",
			map[string]string{"A-IM": "Incremental feed", "x-ms-documentdb-partitionkeyrangeid": "0"}, nil,
			[]string{"x-ms-substatus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "gone" {
				if _, _, err := c.Split("0"); err != nil {
					t.Fatal(err)
				}
			}
			names := rawHeaderNames(t, s, tc.method, tc.path, tc.hdr, tc.body)
			have := map[string]bool{}
			for _, n := range names {
				have[n] = true
				if strings.HasPrefix(strings.ToLower(n), "x-ms-") && n != strings.ToLower(n) {
					t.Errorf("header %q is not lower case", n)
				}
			}
			for _, w := range tc.want {
				if !have[w] {
					t.Errorf("no %q header among %v", w, names)
				}
			}
		})
	}
}

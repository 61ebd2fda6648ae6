package cosmostest

import (
	"fmt"
	"net/http"
	"testing"
)

func queryHeaders(extra map[string]string) map[string]string {
	h := map[string]string{
		"Content-Type":                               "application/query+json",
		"x-ms-documentdb-isquery":                    "True",
		"x-ms-documentdb-query-enablecrosspartition": "True",
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func query(t testing.TB, s *Server, q string, params []queryParameter, extra map[string]string) (*http.Response, []byte) {
	t.Helper()
	return call(t, s, http.MethodPost, "/dbs/db/colls/leases/docs", queryHeaders(extra), queryBody{Query: q, Parameters: params})
}

func newQueryFixture(t *testing.T) *Server {
	s := newTestServer(t)
	c := s.CreateDatabase("db").CreateContainer("leases", "/id", 3)
	for i := 0; i < 5; i++ {
		for _, prefix := range []string{"procA", "procB"} {
			if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("%s..%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Upsert(map[string]any{"id": "procA.info"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func ids(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	for _, d := range docsOf(t, raw) {
		out = append(out, d["id"].(string))
	}
	return out
}

func TestQueryFilters(t *testing.T) {
	s := newQueryFixture(t)
	p := []queryParameter{{Name: "@p", Value: "procA.."}, {Name: "@q", Value: "procB..3"}}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"SELECT * FROM c", 11},
		{"select * from c", 11},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, @p)", 5},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, 'procA.')", 6},
		{`SELECT * FROM c WHERE STARTSWITH(c.id, "procB..")`, 5},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, @p) OR STARTSWITH(c.id, @q)", 6},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, 'proc') AND (STARTSWITH(c.id, @q) OR STARTSWITH(c.id, 'procA.i'))", 2},
		{"SELECT * FROM leases l WHERE startswith(l.id, 'procA..1')", 1},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, raw := query(t, s, tc.query, p, nil)
			wantStatus(t, resp, raw, http.StatusOK)
			if got := ids(t, raw); len(got) != tc.want {
				t.Errorf("got %d items %v, want %d", len(got), got, tc.want)
			}
			if resp.Header.Get("x-ms-request-charge") == "" || resp.Header.Get("x-ms-session-token") == "" {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}
}

func TestQueryRejectsUnsupportedSQL(t *testing.T) {
	s := newQueryFixture(t)
	for _, q := range []string{
		"SELECT c.id FROM c",
		"SELECT * FROM c WHERE c.id = 'x'",
		"SELECT * FROM c WHERE STARTSWITH(c.Owner, 'x')",
		"SELECT * FROM c WHERE STARTSWITH(d.id, 'x')",
		"SELECT * FROM c WHERE STARTSWITH(c.id, 'x', true)",
		"SELECT * FROM c WHERE CONTAINS(c.id, 'x')",
		"SELECT * FROM c WHERE NOT STARTSWITH(c.id, 'x')",
		"SELECT * FROM c WHERE STARTSWITH(c.id, @missing)",
		"SELECT * FROM c WHERE STARTSWITH(c.id, @num)",
		"SELECT * FROM c ORDER BY c.id",
		"SELECT TOP 1 * FROM c",
		"SELECT * FROM c WHERE (STARTSWITH(c.id, 'x')",
		"SELECT * FROM c WHERE STARTSWITH(c.id, 'x",
		"",
	} {
		t.Run(q, func(t *testing.T) {
			resp, raw := query(t, s, q, []queryParameter{{Name: "@num", Value: 3}}, nil)
			wantStatus(t, resp, raw, http.StatusBadRequest)
			if decode(t, raw)["code"] != "BadRequest" {
				t.Errorf("body %s", raw)
			}
		})
	}
}

func TestQueryPaging(t *testing.T) {
	s := newTestServer(t)
	c := s.CreateDatabase("db").CreateContainer("leases", "/id", 2)
	for i := 0; i < 1250; i++ {
		if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("lease-%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		maxItemCount string
		pageSizes    []int
	}{
		{"", []int{100}},
		{"-1", []int{100}},
		{"10", []int{10}},
		{"1000", []int{1000, 250}},
		{"5000", []int{1000, 250}},
	} {
		t.Run("max="+tc.maxItemCount, func(t *testing.T) {
			var all []string
			cont := ""
			for page := 0; ; page++ {
				resp, raw := query(t, s, "SELECT * FROM c", nil, map[string]string{"x-ms-max-item-count": tc.maxItemCount, "x-ms-continuation": cont})
				wantStatus(t, resp, raw, http.StatusOK)
				got := ids(t, raw)
				if page < len(tc.pageSizes) && len(got) != tc.pageSizes[page] {
					t.Fatalf("page %d has %d items, want %d", page, len(got), tc.pageSizes[page])
				}
				all = append(all, got...)
				cont = resp.Header.Get("x-ms-continuation")
				if cont == "" {
					break
				}
			}
			if len(all) != 1250 {
				t.Fatalf("paged through %d items, want 1250", len(all))
			}
			for i := 1; i < len(all); i++ {
				if all[i-1] >= all[i] {
					t.Fatalf("order broken at %d: %s then %s", i, all[i-1], all[i])
				}
			}
		})
	}
	resp, raw := query(t, s, "SELECT * FROM c", nil, map[string]string{"x-ms-continuation": "garbage!"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
}

func TestQueryCrossPartitionNeedsHeader(t *testing.T) {
	s := newQueryFixture(t)
	resp, raw := query(t, s, "SELECT * FROM c", nil, map[string]string{"x-ms-documentdb-query-enablecrosspartition": ""})
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = query(t, s, "SELECT * FROM c", nil, map[string]string{
		"x-ms-documentdb-query-enablecrosspartition": "",
		"x-ms-documentdb-partitionkey":               `["procA..1"]`,
	})
	wantStatus(t, resp, raw, http.StatusOK)
	if got := ids(t, raw); len(got) != 1 || got[0] != "procA..1" {
		t.Errorf("single-partition query returned %v", got)
	}
}

func TestQueryNeedsQueryContentType(t *testing.T) {
	s := newQueryFixture(t)
	resp, raw := query(t, s, "SELECT * FROM c", nil, map[string]string{"Content-Type": "application/json"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
}

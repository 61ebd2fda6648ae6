package cosmostest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
	c := s.Account.CreateDatabase("db").CreateContainer("leases", "/id", 3)
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

// A query outside the subset is 400 naming what is not supported, never a
// silently wrong result.
func TestQueryRejectsUnsupportedSQL(t *testing.T) {
	s := newQueryFixture(t)
	for _, tc := range []struct{ query, names string }{
		{"SELECT c.Owner, COUNT(1) FROM c GROUP BY c.Owner", "GROUP BY"},
		{"SELECT * FROM c JOIN t IN c.tags", "JOIN"},
		{"SELECT DISTINCT c.Owner FROM c", "DISTINCT"},
		{"SELECT * FROM c WHERE LOWER(c.id) = 'x'", "function LOWER"},
		{"SELECT * FROM c OFFSET 0 LIMIT 1", "OFFSET LIMIT"},
		{"SELECT * FROM c ORDER BY c.id, c.Owner", "ORDER BY on more than one path"},
		{"SELECT * FROM c WHERE STARTSWITH(d.id, 'x')", "alias"},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, @missing)", "@missing"},
		{"SELECT * FROM c WHERE (STARTSWITH(c.id, 'x')", "expected"},
		{"SELECT * FROM c WHERE STARTSWITH(c.id, 'x", "unterminated"},
		{"", "SELECT"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, raw := query(t, s, tc.query, []queryParameter{{Name: "@num", Value: 3}}, nil)
			wantStatus(t, resp, raw, http.StatusBadRequest)
			body := decode(t, raw)
			if body["code"] != "BadRequest" || !strings.Contains(body["message"].(string), tc.names) {
				t.Errorf("the 400 does not name %q: %s", tc.names, raw)
			}
		})
	}
}

func TestQueryPaging(t *testing.T) {
	servers := map[int]*Server{} // by WithQueryPageLimit (0: none)
	for _, limit := range []int{0, 100} {
		var opts []Option
		if limit > 0 {
			opts = append(opts, WithQueryPageLimit(limit))
		}
		s := newTestServer(t, opts...)
		c := s.Account.CreateDatabase("db").CreateContainer("leases", "/id", 2)
		for i := 0; i < 1250; i++ {
			if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("lease-%04d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		servers[limit] = s
	}
	for _, tc := range []struct {
		maxItemCount string
		pageLimit    int
		pageSizes    []int
	}{
		{"", 0, []int{100}},
		{"-1", 0, []int{100}},
		{"10", 0, []int{10}},
		{"1000", 0, []int{1000, 250}},
		{"5000", 0, []int{1000, 250}},
		{"1000", 100, []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 50}}, // the server's limit wins
		{"10", 100, []int{10}},
	} {
		t.Run(fmt.Sprintf("max=%s,limit=%d", tc.maxItemCount, tc.pageLimit), func(t *testing.T) {
			s := servers[tc.pageLimit]
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
	resp, raw := query(t, servers[0], "SELECT * FROM c", nil, map[string]string{"x-ms-continuation": "garbage!"})
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

// newOrderFixture is a container of 3 ranges with items n = 0..8 spread
// over the ranges, and the partition key of range 0.
func newOrderFixture(t *testing.T) (*Server, string) {
	t.Helper()
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("leases", "/pk", 3)
	var pks []string
	for _, r := range c.Ranges() {
		pk, err := c.PartitionKeyForRange(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		pks = append(pks, pk)
	}
	for i := 0; i < 9; i++ {
		if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("i%d", 8-i), "pk": pks[i%3], "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	return s, pks[0]
}

func numbers(t *testing.T, raw []byte, field string) []float64 {
	t.Helper()
	var out []float64
	for _, d := range docsOf(t, raw) {
		out = append(out, d[field].(float64))
	}
	return out
}

func TestQueryOrderByInOnePartitionPages(t *testing.T) {
	s, pk := newOrderFixture(t)
	var got []float64
	cont := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		resp, raw := query(t, s, "SELECT * FROM c ORDER BY c.n DESC", nil, map[string]string{
			"x-ms-documentdb-partitionkey": `["` + pk + `"]`, "x-ms-max-item-count": "2", "x-ms-continuation": cont})
		wantStatus(t, resp, raw, http.StatusOK)
		got = append(got, numbers(t, raw, "n")...)
		if cont = resp.Header.Get("x-ms-continuation"); cont == "" {
			break
		}
	}
	if fmt.Sprint(got) != "[6 3 0]" {
		t.Errorf("got %v, want [6 3 0]", got)
	}
}

// Across partitions, ORDER BY, TOP and aggregates are merged by the SDK: the
// plain query is answered 400/1004 with the plan, as the service does.
func TestCrossPartitionOrderByIsLeftToTheSDK(t *testing.T) {
	s, _ := newOrderFixture(t)
	for _, q := range []string{"SELECT * FROM c ORDER BY c.n", "SELECT TOP 2 * FROM c", "SELECT VALUE COUNT(1) FROM c"} {
		t.Run(q, func(t *testing.T) {
			resp, raw := query(t, s, q, nil, nil)
			wantStatus(t, resp, raw, http.StatusBadRequest)
			if sub := resp.Header.Get("x-ms-substatus"); sub != "1004" {
				t.Errorf("substatus %q, want 1004", sub)
			}
			var plan struct {
				QueryInfo   map[string]any   `json:"queryInfo"`
				QueryRanges []map[string]any `json:"queryRanges"`
			}
			info, _ := decode(t, raw)["additionalErrorInfo"].(string)
			if err := json.Unmarshal([]byte(info), &plan); err != nil || plan.QueryInfo == nil || len(plan.QueryRanges) != 1 {
				t.Errorf("additionalErrorInfo %q is not a query plan (%v)", info, err)
			}
		})
	}
}

func TestQueryPlanRequest(t *testing.T) {
	s, _ := newOrderFixture(t)
	resp, raw := query(t, s, "SELECT * FROM c WHERE c.n > @n ORDER BY c.n DESC", []queryParameter{{Name: "@n", Value: 2}},
		map[string]string{"x-ms-cosmos-is-query-plan-request": "True"})
	wantStatus(t, resp, raw, http.StatusOK)
	info := decode(t, raw)["queryInfo"].(map[string]any)
	if fmt.Sprint(info["orderBy"]) != "[Descending]" || fmt.Sprint(info["orderByExpressions"]) != "[c.n]" {
		t.Errorf("queryInfo %v", info)
	}
	rewritten, _ := info["rewrittenQuery"].(string)
	if !strings.Contains(rewritten, "{documentdb-formattableorderbyquery-filter}") {
		t.Errorf("rewrittenQuery %q has no filter placeholder", rewritten)
	}
}

// The SDKs run the plan's rewritten query on each range and merge the
// ranges' results by orderByItems.
func TestRewrittenOrderByQueryPerRange(t *testing.T) {
	s, _ := newOrderFixture(t)
	resp, raw := query(t, s, "SELECT * FROM c ORDER BY c.n", nil, map[string]string{"x-ms-cosmos-is-query-plan-request": "True"})
	wantStatus(t, resp, raw, http.StatusOK)
	rewritten := decode(t, raw)["queryInfo"].(map[string]any)["rewrittenQuery"].(string)
	rewritten = strings.Replace(rewritten, "{documentdb-formattableorderbyquery-filter}", "true", 1)
	var merged []float64
	for _, rangeID := range []string{"0", "1", "2"} {
		resp, raw := query(t, s, rewritten, nil, map[string]string{"x-ms-documentdb-partitionkeyrangeid": rangeID})
		wantStatus(t, resp, raw, http.StatusOK)
		var prev float64 = -1
		for _, d := range docsOf(t, raw) {
			n := d["orderByItems"].([]any)[0].(map[string]any)["item"].(float64)
			if payload := d["payload"].(map[string]any); payload["n"] != n || d["_rid"] == nil {
				t.Errorf("row %v: payload and orderByItems disagree or no _rid", d)
			}
			if n < prev {
				t.Errorf("range %s not in order: %v after %v", rangeID, n, prev)
			}
			prev = n
			merged = append(merged, n)
		}
	}
	if len(merged) != 9 {
		t.Errorf("%d rows over the ranges, want 9", len(merged))
	}
}

func TestValueCount(t *testing.T) {
	s, pk := newOrderFixture(t)
	resp, raw := query(t, s, "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 3", nil, map[string]string{"x-ms-documentdb-partitionkey": `["` + pk + `"]`})
	wantStatus(t, resp, raw, http.StatusOK)
	var body struct{ Documents []float64 }
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Documents) != 1 || body.Documents[0] != 2 {
		t.Errorf("body %s, want one result 2 (n = 3 and 6)", raw)
	}
}

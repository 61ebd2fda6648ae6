package cosmostest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// capable adds the PartitionMerge declaration to a request's headers.
func capable(hdr map[string]string) map[string]string {
	out := map[string]string{"x-ms-cosmos-sdk-supportedcapabilities": "1"}
	maps.Copy(out, hdr)
	return out
}

// A merge-enabled account refuses every request that does not declare the
// PartitionMerge capability (bit 0 of a decimal bit set) with a 400 naming
// the header, whatever the request does; one that declares it is served.
func TestMergeEnabledAccountAdmitsOnlyClientsDeclaringPartitionMerge(t *testing.T) {
	s := newTestServer(t, WithPartitionMerge())
	if !s.Account.PartitionMergeEnabled() {
		t.Fatal("PartitionMergeEnabled is false for an account started WithPartitionMerge")
	}
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	if err := c.WriteItems("a", 3); err != nil {
		t.Fatal(err)
	}
	docs := "/dbs/db/colls/data/docs"
	requests := []struct {
		kind         RequestKind
		method, path string
		hdr          map[string]string
		body         any
		ok           int
	}{
		{kindAccount, http.MethodGet, "/", nil, nil, http.StatusOK},
		{kindDatabase, http.MethodGet, "/dbs/db", nil, nil, http.StatusOK},
		{kindContainer, http.MethodGet, "/dbs/db/colls/data", nil, nil, http.StatusOK},
		{kindPKRanges, http.MethodGet, "/dbs/db/colls/data/pkranges", nil, nil, http.StatusOK},
		{KindQuery, http.MethodPost, docs, map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-query-enablecrosspartition": "true",
		}, map[string]any{"query": "SELECT * FROM c"}, http.StatusOK},
		{KindChangeFeed, http.MethodGet, docs, map[string]string{"A-IM": "Incremental feed", "x-ms-documentdb-partitionkey": `["a"]`}, nil, http.StatusOK},
		{kindCreate, http.MethodPost, docs, map[string]string{"x-ms-documentdb-partitionkey": `["b"]`}, map[string]any{"id": "new", "pk": "b"}, http.StatusCreated},
		{kindReadItem, http.MethodGet, docs + "/new", map[string]string{"x-ms-documentdb-partitionkey": `["b"]`}, nil, http.StatusOK},
	}
	for _, tc := range []struct {
		name, value string // value "" sends no header
		admitted    bool
	}{
		{"no header", "", false},
		{"no capability", "0", false},
		{"another capability only", "2", false},
		{"not a number", "PartitionMerge", false},
		{"negative", "-1", false},
		{"PartitionMerge", "1", true},
		{"PartitionMerge among others", "3", true},
		{"with spaces", " 1 ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rq := range requests {
				hdr := maps.Clone(rq.hdr)
				if hdr == nil {
					hdr = map[string]string{}
				}
				if tc.value != "" {
					hdr["x-ms-cosmos-sdk-supportedcapabilities"] = tc.value
				}
				if rq.kind == kindCreate {
					hdr["x-ms-documentdb-is-upsert"] = "true" // the same item, once per case
				}
				resp, raw := call(t, s, rq.method, rq.path, hdr, rq.body)
				if tc.admitted {
					if resp.StatusCode != rq.ok && !(rq.kind == kindCreate && resp.StatusCode == http.StatusOK) {
						t.Errorf("%s %s: %d %s, want %d", rq.kind, rq.path, resp.StatusCode, raw, rq.ok)
					}
					continue
				}
				body := decode(t, raw)
				if resp.StatusCode != http.StatusBadRequest || body["code"] != "BadRequest" ||
					!strings.Contains(body["message"].(string), "x-ms-cosmos-sdk-supportedcapabilities") {
					t.Errorf("%s %s: %d %s, want 400 naming x-ms-cosmos-sdk-supportedcapabilities", rq.kind, rq.path, resp.StatusCode, raw)
				}
			}
		})
	}
	// Refused requests are in the request log, with their status.
	refused := 0
	for _, r := range s.Handler.Requests() {
		if r.Status == http.StatusBadRequest {
			refused++
		}
	}
	if want := 5 * len(requests); refused != want {
		t.Errorf("%d refused requests in the log, want %d", refused, want)
	}
}

// Authorization comes first: an unsigned request is 401 with or without
// the declaration. An account without merge enabled needs no declaration.
func TestMergeCapabilityAfterAuthorizationAndOnlyWhenEnabled(t *testing.T) {
	s := newTestServer(t, WithPartitionMerge())
	resp, raw := call(t, s, http.MethodGet, "/", map[string]string{"Authorization": "type=master&ver=1.0&sig=bm9wZQ=="}, nil)
	wantStatus(t, resp, raw, http.StatusUnauthorized)

	plain := newTestServer(t)
	if plain.Account.PartitionMergeEnabled() {
		t.Error("PartitionMergeEnabled is true by default")
	}
	resp, raw = call(t, plain, http.MethodGet, "/", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
}

// Merge takes two live, adjacent ranges in either order and refuses
// anything else, naming the ranges, as Split does.
func TestMergeValidation(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 4)
	for _, tc := range []struct {
		a, b     string
		want     string
		notFound bool
	}{
		{"1", "1", `merge ranges "1" and "1" of data: a range cannot merge with itself`, false},
		{"9", "1", `merge ranges "9" and "1" of data: range "9": cosmostest: no live partition key range with that id`, true},
		{"1", "9", `range "9": cosmostest: no live partition key range with that id`, true},
		{"0", "2", `merge ranges "0" and "2" of data: they are not adjacent (["", "3FC0") and ["7F80", "BF40"))`, false},
		{"2", "0", `they are not adjacent (["7F80", "BF40") and ["", "3FC0"))`, false},
	} {
		_, err := c.Merge(tc.a, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Merge(%s, %s) = %v, want %q", tc.a, tc.b, err, tc.want)
		}
		if err != nil && tc.notFound != strings.Contains(err.Error(), ErrRangeNotFound.Error()) {
			t.Errorf("Merge(%s, %s): ErrRangeNotFound %v, want %v", tc.a, tc.b, !tc.notFound, tc.notFound)
		}
	}
	// Named right to left, the child is the same: parents in EPK order.
	m, err := c.Merge("3", "2")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "4" || !slices.Equal(m.Parents, []string{"2", "3"}) || m.MinInclusive != "7F80" || m.MaxExclusive != "FF" {
		t.Errorf("merged range %+v, want 4 = [7F80, FF) with parents 2, 3", m)
	}
	if _, err := c.Merge("2", "1"); err == nil || !strings.Contains(err.Error(), `range "2"`) {
		t.Errorf("merging a merged-away range: %v", err)
	}
	got := c.Ranges()
	if len(got) != 3 || got[2].ID != "4" {
		t.Errorf("live ranges after the merge %+v", got)
	}
}

// Across a merge, documents keep their _lsn, the child's LSN continues from
// the larger parent's and its session token carries it, the parents answer
// 410/1002 by range id (change feed and queries), and pkranges lists the
// child with both parents under a new etag.
func TestMergeKeepsLSNsAndContinuesFromTheLargerParent(t *testing.T) {
	s := newTestServer(t, WithPartitionMerge())
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	if err := c.WriteItemsToRange("0", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteItemsToRange("1", 8); err != nil {
		t.Fatal(err)
	}
	lsnBefore := map[string]float64{}
	for _, rid := range []string{"0", "1"} {
		resp, raw := changeFeed(t, s, c, rid, "", capable(map[string]string{"x-ms-max-item-count": "100"}))
		wantStatus(t, resp, raw, http.StatusOK)
		for _, d := range docsOf(t, raw) {
			lsnBefore[d["id"].(string)] = d["_lsn"].(float64)
		}
	}
	resp, raw := call(t, s, http.MethodGet, "/dbs/db/colls/data/pkranges", capable(nil), nil)
	wantStatus(t, resp, raw, http.StatusOK)
	etagBefore := resp.Header.Get("etag")

	m, err := c.Merge("0", "1")
	if err != nil {
		t.Fatal(err)
	}
	if c.LSN(m.ID) != 8 {
		t.Errorf("merged range LSN %d, want 8 (the larger parent's)", c.LSN(m.ID))
	}
	resp, raw = changeFeed(t, s, c, m.ID, "", capable(map[string]string{"x-ms-max-item-count": "100"}))
	wantStatus(t, resp, raw, http.StatusOK)
	if got := resp.Header.Get("x-ms-session-token"); got != m.ID+":-1#8" {
		t.Errorf("session token %q, want %s:-1#8", got, m.ID)
	}
	docs := docsOf(t, raw)
	if len(docs) != len(lsnBefore) {
		t.Fatalf("merged range has %d documents, want %d", len(docs), len(lsnBefore))
	}
	for i, d := range docs {
		if d["_lsn"] != lsnBefore[d["id"].(string)] {
			t.Errorf("document %v has _lsn %v after the merge, %v before", d["id"], d["_lsn"], lsnBefore[d["id"].(string)])
		}
		if i > 0 && d["_lsn"].(float64) < docs[i-1]["_lsn"].(float64) {
			t.Errorf("the merged range's feed is not in _lsn order at %v", d["id"])
		}
	}
	if err := c.WriteItemsToRange(m.ID, 1); err != nil {
		t.Fatal(err)
	}
	resp, raw = changeFeed(t, s, c, m.ID, `"8"`, capable(nil))
	wantStatus(t, resp, raw, http.StatusOK)
	if d := docsOf(t, raw); len(d) != 1 || d[0]["_lsn"] != float64(9) || resp.Header.Get("x-ms-session-token") != m.ID+":-1#9" {
		t.Errorf("the first write after the merge: %v, session %q; want _lsn 9", d, resp.Header.Get("x-ms-session-token"))
	}

	for _, parent := range []string{"0", "1"} {
		resp, raw := changeFeed(t, s, c, parent, `"2"`, capable(nil))
		if resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
			t.Errorf("change feed of merged-away range %s: %d substatus %q %s", parent, resp.StatusCode, resp.Header.Get("x-ms-substatus"), raw)
		}
		resp, raw = call(t, s, http.MethodPost, "/dbs/db/colls/data/docs", capable(map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-partitionkeyrangeid": parent,
		}), map[string]any{"query": "SELECT * FROM c"})
		if resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
			t.Errorf("query of merged-away range %s: %d substatus %q %s", parent, resp.StatusCode, resp.Header.Get("x-ms-substatus"), raw)
		}
	}

	resp, raw = call(t, s, http.MethodGet, "/dbs/db/colls/data/pkranges", capable(nil), nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if resp.Header.Get("etag") == etagBefore {
		t.Error("the pkranges etag did not change with the merge")
	}
	list := decode(t, raw)["PartitionKeyRanges"].([]any)
	if len(list) != 1 {
		t.Fatalf("pkranges after the merge: %s", raw)
	}
	got := list[0].(map[string]any)
	if got["id"] != m.ID || got["minInclusive"] != "" || got["maxExclusive"] != "FF" || fmt.Sprint(got["parents"]) != "[0 1]" {
		t.Errorf("merged range listed as %v", got)
	}
}

// A processor resumes each merged-away range's continuation on the child
// with an EPK-restricted read over the old range's bounds: each read
// returns only its sub-range, so between them every change after the two
// continuations arrives once, in both change feed modes.
func TestMergedRangeEPKReadsReturnOnlyTheirSubRange(t *testing.T) {
	s := newTestServer(t, WithPartitionMerge())
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	parents := c.Ranges()
	if err := c.WriteItemsToRange("0", 4); err != nil { // LSNs 1-4 of range 0
		t.Fatal(err)
	}
	if err := c.WriteItemsToRange("1", 6); err != nil { // LSNs 1-6 of range 1
		t.Fatal(err)
	}
	// Where two processors stood before the merge: a latest-version one
	// at LSN 2 of range 0 and 5 of range 1, an all-versions one at now.
	continuation := map[string]int64{"0": 2, "1": 5}
	want := map[string][]string{} // latest version: what comes after the continuation
	avadFrom := map[string]string{}
	pk := map[string]string{}
	for _, r := range parents {
		resp, raw := changeFeed(t, s, c, r.ID, "", capable(map[string]string{"x-ms-max-item-count": "100"}))
		wantStatus(t, resp, raw, http.StatusOK)
		for _, d := range docsOf(t, raw) {
			if int64(d["_lsn"].(float64)) > continuation[r.ID] {
				want[r.ID] = append(want[r.ID], d["id"].(string))
			}
		}
		resp, raw = changeFeed(t, s, c, r.ID, "*", capable(map[string]string{
			"A-IM": "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version": "2021-09-15",
		}))
		wantStatus(t, resp, raw, http.StatusNotModified)
		avadFrom[r.ID] = resp.Header.Get("etag")
		var err error
		if pk[r.ID], err = c.PartitionKeyForRange(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.Merge("0", "1")
	if err != nil {
		t.Fatal(err)
	}
	// One write after the merge in each parent's part (LSNs 7 and 8 of the child).
	for _, r := range parents {
		id := "after-merge-in-" + r.ID
		if _, err := c.Upsert(map[string]any{"id": id, "pk": pk[r.ID]}); err != nil {
			t.Fatal(err)
		}
		want[r.ID] = append(want[r.ID], id)
	}

	for _, r := range parents {
		epk := capable(map[string]string{
			"x-ms-read-key-type": "EffectivePartitionKeyRange", "x-ms-start-epk": r.MinInclusive, "x-ms-end-epk": r.MaxExclusive,
			"x-ms-max-item-count": "100",
		})
		resp, raw := changeFeed(t, s, c, m.ID, quotedLSN(continuation[r.ID]), epk)
		wantStatus(t, resp, raw, http.StatusOK)
		if got := resp.Header.Get("x-ms-session-token"); got != m.ID+":-1#8" {
			t.Errorf("session token %q of an EPK read of %s, want %s:-1#8", got, m.ID, m.ID)
		}
		var got []string
		for _, d := range docsOf(t, raw) {
			got = append(got, d["id"].(string))
		}
		if !slices.Equal(got, want[r.ID]) {
			t.Errorf("latest version of [%q, %q) from LSN %d: %v, want %v", r.MinInclusive, r.MaxExclusive, continuation[r.ID], got, want[r.ID])
		}
		resp, raw = changeFeed(t, s, c, m.ID, resp.Header.Get("etag"), epk)
		wantStatus(t, resp, raw, http.StatusNotModified)

		epk["A-IM"] = "Full-Fidelity Feed"
		epk["x-ms-cosmos-changefeed-wire-format-version"] = "2021-09-15"
		resp, raw = changeFeed(t, s, c, m.ID, avadFrom[r.ID], epk)
		wantStatus(t, resp, raw, http.StatusOK)
		changes := docsOf(t, raw)
		if len(changes) != 1 || changes[0]["current"].(map[string]any)["id"] != "after-merge-in-"+r.ID {
			t.Errorf("all versions and deletes of [%q, %q) after the merge: %v, want only after-merge-in-%s", r.MinInclusive, r.MaxExclusive, changes, r.ID)
		}
	}
	// A sub-range that leaves the child is refused.
	resp, raw := changeFeed(t, s, c, m.ID, "", capable(map[string]string{
		"x-ms-read-key-type": "EffectivePartitionKeyRange", "x-ms-start-epk": "", "x-ms-end-epk": "FFFF",
	}))
	wantStatus(t, resp, raw, http.StatusBadRequest)
}

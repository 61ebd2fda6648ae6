package cosmostest

import (
	"net/http"
	"strconv"
	"testing"
)

// allVersions reads one page of a range's all-versions-and-deletes feed the
// way the SDKs ask for it.
func allVersions(t *testing.T, s *Server, c *Container, rangeID, etag string, extra map[string]string) (*http.Response, []byte) {
	t.Helper()
	hdr := map[string]string{
		"A-IM": "Full-Fidelity Feed",
		"x-ms-cosmos-changefeed-wire-format-version": "2021-09-15",
	}
	for k, v := range extra {
		hdr[k] = v
	}
	return changeFeed(t, s, c, rangeID, etag, hdr)
}

func metadataOf(t *testing.T, change map[string]any) map[string]any {
	t.Helper()
	meta, ok := change["metadata"].(map[string]any)
	if !ok {
		t.Fatalf("change without metadata: %v", change)
	}
	if crts, ok := meta["crts"].(float64); !ok || crts <= 0 {
		t.Fatalf("metadata without a positive crts: %v", meta)
	}
	return meta
}

// Every create, replace, delete and TTL expiry after the continuation is a
// change of its own, in LSN order, in the 2021-09-15 shape: the item in
// "current" ({} for deletes), the LSN and operation in "metadata".
func TestAllVersionsFeedListsEveryChange(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	start := c.LSN("0")
	mustUpsert := func(doc map[string]any) {
		if _, err := c.Upsert(doc); err != nil {
			t.Fatal(err)
		}
	}
	mustUpsert(map[string]any{"id": "a", "pk": "p", "v": 1})
	mustUpsert(map[string]any{"id": "a", "pk": "p", "v": 2})
	mustUpsert(map[string]any{"id": "b", "pk": "q", "v": 1})
	if !c.Delete("a") || !c.ExpireItem("b") {
		t.Fatal("delete or expire found no item")
	}

	resp, raw := allVersions(t, s, c, "0", quotedLSN(start), nil)
	wantStatus(t, resp, raw, http.StatusOK)
	docs := docsOf(t, raw)
	want := []struct {
		op, id     string
		lsn, prev  int64
		ttlExpired bool
	}{
		{"create", "a", start + 1, 0, false},
		{"replace", "a", start + 2, start + 1, false},
		{"create", "b", start + 3, 0, false},
		{"delete", "a", start + 4, start + 2, false},
		{"delete", "b", start + 5, start + 3, true},
	}
	if len(docs) != len(want) {
		t.Fatalf("got %d changes, want %d: %s", len(docs), len(want), raw)
	}
	for i, w := range want {
		meta := metadataOf(t, docs[i])
		current, _ := docs[i]["current"].(map[string]any)
		if meta["operationType"] != w.op || meta["lsn"] != float64(w.lsn) || meta["timeToLiveExpired"] != w.ttlExpired {
			t.Errorf("change %d: metadata %v, want %s at LSN %d (ttl %v)", i, meta, w.op, w.lsn, w.ttlExpired)
		}
		if w.op != "create" && meta["previousImageLSN"] != float64(w.prev) {
			t.Errorf("change %d: previousImageLSN %v, want %d", i, meta["previousImageLSN"], w.prev)
		}
		if w.op == "delete" {
			if len(current) != 0 || meta["id"] != w.id || meta["partitionKey"] == nil {
				t.Errorf("delete %d: current %v, metadata %v", i, current, meta)
			}
			continue
		}
		if current["id"] != w.id || current["_lsn"] != nil || current["_etag"] == nil {
			t.Errorf("change %d: current %v, want item %s with system properties and no _lsn", i, current, w.id)
		}
	}
	if got := resp.Header.Get("etag"); got != quotedLSN(start+5) {
		t.Errorf("etag %s, want the last change's LSN", got)
	}
	if got := resp.Header.Get("x-ms-session-token"); got != "0:-1#"+strconv.FormatInt(start+5, 10) {
		t.Errorf("session token %s", got)
	}
	// The two versions of "a" are one item in the latest-version feed, and
	// neither delete appears there: the feed is empty after the creates.
	resp, raw = changeFeed(t, s, c, "0", quotedLSN(start), nil)
	wantStatus(t, resp, raw, http.StatusNotModified)
}

// Pages follow the etag, one change at a time, then 304.
func TestAllVersionsFeedPagesByEtag(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("p", 2); err != nil {
		t.Fatal(err)
	}
	for _, it := range c.Items() {
		c.Delete(it["id"].(string))
	}
	etag, seen := `"0"`, []string{}
	for range 10 {
		resp, raw := allVersions(t, s, c, "0", etag, map[string]string{"x-ms-max-item-count": "1"})
		if resp.StatusCode == http.StatusNotModified {
			if resp.Header.Get("etag") != etag {
				t.Fatalf("304 etag %s, want the request's %s", resp.Header.Get("etag"), etag)
			}
			break
		}
		wantStatus(t, resp, raw, http.StatusOK)
		docs := docsOf(t, raw)
		if len(docs) != 1 {
			t.Fatalf("page of %d changes", len(docs))
		}
		seen = append(seen, metadataOf(t, docs[0])["operationType"].(string))
		etag = resp.Header.Get("etag")
	}
	if len(seen) != 4 || seen[0] != "create" || seen[3] != "delete" {
		t.Fatalf("changes %v, want two creates then two deletes", seen)
	}
}

// The service's rules: no start from the beginning or a point in time (400),
// "*" starts now (304 with the current LSN), the wire format is required.
func TestAllVersionsFeedStartRules(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("p", 3); err != nil {
		t.Fatal(err)
	}
	resp, raw := allVersions(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = allVersions(t, s, c, "0", "", map[string]string{"If-Modified-Since": "Tue, 01 Dec 2026 07:00:00 GMT"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = allVersions(t, s, c, "0", `"0"`, map[string]string{"x-ms-cosmos-changefeed-wire-format-version": ""})
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = allVersions(t, s, c, "0", "*", nil)
	wantStatus(t, resp, raw, http.StatusNotModified)
	if got := resp.Header.Get("etag"); got != quotedLSN(c.LSN("0")) {
		t.Fatalf("start-now etag %s, want the range's LSN", got)
	}
}

// A range read through EPK bounds, or a logical partition, sees only its
// own changes; a gone range is 410/1002 as in latest-version mode.
func TestAllVersionsFeedScopesAndSplits(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	for _, pk := range []string{"x", "y"} {
		if _, err := c.Upsert(map[string]any{"id": pk, "pk": pk}); err != nil {
			t.Fatal(err)
		}
		c.Delete(pk)
	}
	resp, raw := allVersions(t, s, c, "", `"0"`, map[string]string{"x-ms-documentdb-partitionkey": `["y"]`})
	wantStatus(t, resp, raw, http.StatusOK)
	if docs := docsOf(t, raw); len(docs) != 2 || metadataOf(t, docs[1])["id"] != "y" {
		t.Fatalf("partition y: %s", raw)
	}
	left, _, err := c.Split("0")
	if err != nil {
		t.Fatal(err)
	}
	resp, raw = allVersions(t, s, c, "0", `"0"`, nil)
	wantStatus(t, resp, raw, http.StatusGone)
	if resp.Header.Get("x-ms-substatus") != "1002" {
		t.Fatalf("substatus %s", resp.Header.Get("x-ms-substatus"))
	}
	resp, raw = allVersions(t, s, c, left.ID, `"0"`, nil)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotModified {
		t.Fatalf("child range: %d %s", resp.StatusCode, raw)
	}
	for _, d := range docsOf(t, append([]byte(nil), orEmptyPage(raw)...)) {
		pk := d["current"].(map[string]any)["pk"]
		if meta := metadataOf(t, d); meta["operationType"] == "delete" {
			pk = meta["partitionKey"].(map[string]any)["pk"]
		}
		if epk := epkOf(pk); !epkInRange(epk, left.MinInclusive, left.MaxExclusive) {
			t.Fatalf("child range %s lists a change of another range: %v", left.ID, d)
		}
	}
}

func orEmptyPage(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte(`{"Documents":[],"_count":0}`)
	}
	return raw
}

package cosmostest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

func TestChangeFeedFromBeginningReturnsItemsInLSNOrder(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("a", 3); err != nil {
		t.Fatal(err)
	}
	resp, raw := changeFeed(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, http.StatusOK)
	docs := docsOf(t, raw)
	if len(docs) != 3 {
		t.Fatalf("got %d docs, want 3", len(docs))
	}
	for i, d := range docs {
		if d["_lsn"] != float64(i+1) {
			t.Errorf("doc %d _lsn = %v, want %d", i, d["_lsn"], i+1)
		}
	}
	if got := resp.Header.Get("etag"); got != `"3"` {
		t.Errorf("etag = %s, want \"3\"", got)
	}
	if got := resp.Header.Get("x-ms-session-token"); got != "0:-1#3" {
		t.Errorf("session token = %s, want 0:-1#3", got)
	}
	if resp.Header.Get("x-ms-request-charge") == "" || resp.Header.Get("x-ms-activity-id") == "" {
		t.Errorf("missing request charge or activity id: %v", resp.Header)
	}
}

func TestChangeFeedMaxItemCountPagesByEtag(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("a", 5); err != nil {
		t.Fatal(err)
	}
	resp, raw := changeFeed(t, s, c, "0", "", map[string]string{"x-ms-max-item-count": "1"})
	wantStatus(t, resp, raw, http.StatusOK)
	if docs := docsOf(t, raw); len(docs) != 1 || docs[0]["_lsn"] != float64(1) {
		t.Fatalf("first page = %v", docs)
	}
	resp, raw = changeFeed(t, s, c, "0", `"3"`, map[string]string{"x-ms-max-item-count": "1"})
	wantStatus(t, resp, raw, http.StatusOK)
	if docs := docsOf(t, raw); len(docs) != 1 || docs[0]["_lsn"] != float64(4) {
		t.Fatalf("page after 3 = %v", docs)
	}
	if resp.Header.Get("etag") != `"4"` || resp.Header.Get("x-ms-session-token") != "0:-1#5" {
		t.Fatalf("etag %s session %s", resp.Header.Get("etag"), resp.Header.Get("x-ms-session-token"))
	}
}

func TestChangeFeedNotModified(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("a", 2); err != nil {
		t.Fatal(err)
	}
	t.Run("star means from now", func(t *testing.T) {
		resp, raw := changeFeed(t, s, c, "0", "*", nil)
		wantStatus(t, resp, raw, http.StatusNotModified)
		if resp.Header.Get("etag") != `"2"` {
			t.Errorf("etag = %s, want \"2\"", resp.Header.Get("etag"))
		}
	})
	t.Run("nothing newer than etag", func(t *testing.T) {
		resp, raw := changeFeed(t, s, c, "0", `"2"`, nil)
		wantStatus(t, resp, raw, http.StatusNotModified)
		if resp.Header.Get("etag") != `"2"` || resp.Header.Get("x-ms-session-token") != "0:-1#2" {
			t.Errorf("etag %s session %s", resp.Header.Get("etag"), resp.Header.Get("x-ms-session-token"))
		}
	})
	t.Run("empty range from beginning", func(t *testing.T) {
		empty := s.Account.CreateDatabase("db").CreateContainer("empty", "/pk", 1)
		resp, raw := changeFeed(t, s, empty, "0", "", nil)
		wantStatus(t, resp, raw, http.StatusNotModified)
	})
}

func TestChangeFeedShowsLatestVersionOnce(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	for i := 0; i < 3; i++ {
		if _, err := c.Upsert(map[string]any{"id": "x", "pk": "p", "v": i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Upsert(map[string]any{"id": "y", "pk": "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upsert(map[string]any{"id": "x", "pk": "p", "v": 3}); err != nil {
		t.Fatal(err)
	}
	resp, raw := changeFeed(t, s, c, "0", "", nil)
	wantStatus(t, resp, raw, http.StatusOK)
	docs := docsOf(t, raw)
	if len(docs) != 2 || docs[0]["id"] != "y" || docs[1]["id"] != "x" || docs[1]["_lsn"] != float64(5) || docs[1]["v"] != float64(3) {
		t.Fatalf("docs = %v", docs)
	}
	if !c.Delete("y") {
		t.Fatal("delete y")
	}
	if got := c.LSN("0"); got != 6 {
		t.Fatalf("LSN after delete = %d, want 6", got)
	}
	_, raw = changeFeed(t, s, c, "0", "", nil)
	if docs := docsOf(t, raw); len(docs) != 1 || docs[0]["id"] != "x" {
		t.Fatalf("after delete docs = %v", docs)
	}
}

func TestChangeFeedSessionTokenForms(t *testing.T) {
	for _, tc := range []struct {
		form SessionTokenForm
		want string
	}{
		{SessionTokenSimple, "0:12"},
		{SessionTokenVersioned, "0:-1#12"},
		{SessionTokenVector, "0:1#12#1=10#2=9"},
	} {
		t.Run(strconv.Itoa(int(tc.form)), func(t *testing.T) {
			s := newTestServer(t)
			c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
			if err := c.WriteItems("a", 12); err != nil {
				t.Fatal(err)
			}
			s.Account.SetSessionTokenForm(tc.form)
			resp, raw := changeFeed(t, s, c, "0", `"11"`, nil)
			wantStatus(t, resp, raw, http.StatusOK)
			if got := resp.Header.Get("x-ms-session-token"); got != tc.want {
				t.Errorf("session token = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChangeFeedRangeErrors(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"unknown range", map[string]string{"x-ms-documentdb-partitionkeyrangeid": "7"}, http.StatusNotFound},
		{"no range", map[string]string{"x-ms-documentdb-partitionkeyrangeid": ""}, http.StatusBadRequest},
		{"bad etag", map[string]string{"If-None-Match": "abc"}, http.StatusBadRequest},
		{"bad max item count", map[string]string{"x-ms-max-item-count": "x"}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := changeFeed(t, s, c, "0", "", tc.hdr)
			wantStatus(t, resp, raw, tc.status)
		})
	}
}

func TestChangeFeedEPKSubRange(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItems("a", 20); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if err := c.WriteItems(fmt.Sprintf("k%d", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	epkRead := func(start, end string) (*http.Response, []byte) {
		return changeFeed(t, s, c, "0", "", map[string]string{
			"x-ms-read-key-type":  "EffectivePartitionKeyRange",
			"x-ms-start-epk":      start,
			"x-ms-end-epk":        end,
			"x-ms-max-item-count": "1000",
		})
	}
	_, lowRaw := epkRead("", "7F80")
	_, highRaw := epkRead("7F80", "FF")
	low, high := docsOf(t, lowRaw), docsOf(t, highRaw)
	if len(low)+len(high) != 60 || len(low) == 0 || len(high) == 0 {
		t.Fatalf("low %d + high %d, want 60 split across both halves", len(low), len(high))
	}
	for _, d := range low {
		if epkOf(d["pk"]) >= "7F80" {
			t.Errorf("item %v with EPK %s in low half", d["id"], epkOf(d["pk"]))
		}
	}
	resp, raw := epkRead("7F80", "")
	wantStatus(t, resp, raw, http.StatusBadRequest)

	c2 := s.Account.CreateDatabase("db").CreateContainer("two", "/pk", 2)
	resp, raw = changeFeed(t, s, c2, "0", "", map[string]string{
		"x-ms-read-key-type": "EffectivePartitionKeyRange",
		"x-ms-start-epk":     "3FC0",
		"x-ms-end-epk":       "BF40",
	})
	wantStatus(t, resp, raw, http.StatusBadRequest)
}

func TestChangeFeedByPartitionKey(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	if err := c.WriteItems("a", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteItems("b", 3); err != nil {
		t.Fatal(err)
	}
	resp, raw := changeFeed(t, s, c, "", "", map[string]string{"x-ms-documentdb-partitionkey": `["b"]`})
	wantStatus(t, resp, raw, http.StatusOK)
	if docs := docsOf(t, raw); len(docs) != 3 {
		t.Fatalf("docs = %v", docs)
	}
}

func TestPKRanges(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 4)
	path := "/dbs/db/colls/data/pkranges"
	resp, raw := call(t, s, http.MethodGet, path, nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	body := decode(t, raw)
	list := body["PartitionKeyRanges"].([]any)
	if len(list) != 4 || body["_count"] != float64(4) || body["_rid"] != c.RID() {
		t.Fatalf("body = %s", raw)
	}
	wantBounds := [][2]string{{"", "3FC0"}, {"3FC0", "7F80"}, {"7F80", "BF40"}, {"BF40", "FF"}}
	for i, r := range list {
		m := r.(map[string]any)
		if m["id"] != strconv.Itoa(i) || m["minInclusive"] != wantBounds[i][0] || m["maxExclusive"] != wantBounds[i][1] {
			t.Errorf("range %d = %v", i, m)
		}
		if _, ok := m["parents"].([]any); !ok {
			t.Errorf("range %d has no parents list", i)
		}
	}
	etag := resp.Header.Get("etag")
	if etag == "" {
		t.Fatal("no etag")
	}
	resp, raw = call(t, s, http.MethodGet, path, map[string]string{"If-None-Match": etag, "A-IM": "Incremental feed"}, nil)
	wantStatus(t, resp, raw, http.StatusNotModified)

	if _, _, err := c.Split("1"); err != nil {
		t.Fatal(err)
	}
	resp, raw = call(t, s, http.MethodGet, path, map[string]string{"If-None-Match": etag, "A-IM": "Incremental feed"}, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if resp.Header.Get("etag") == etag {
		t.Error("etag unchanged after split")
	}
	var ids []string
	for _, r := range decode(t, raw)["PartitionKeyRanges"].([]any) {
		m := r.(map[string]any)
		ids = append(ids, m["id"].(string))
	}
	if fmt.Sprint(ids) != "[0 4 5 2 3]" {
		t.Errorf("ids after split = %v", ids)
	}
}

// documentsReply must write exactly the bytes json.Marshal wrote for the
// page map it replaces, whatever the documents hold.
func TestDocumentsReplyMatchesMarshal(t *testing.T) {
	docs := []map[string]any{
		{"id": "a", "_lsn": 7, "pk": "x"},
		{"id": "<b>&amp;", "n": 1.5e300, "s": "line\u2028sep \"q\" \\ é", "nested": map[string]any{"z": []any{nil, true}}},
	}
	for n := 0; n <= len(docs); n++ {
		raw := make([]json.RawMessage, n)
		for i := range raw {
			raw[i], _ = json.Marshal(docs[i])
		}
		if n == len(docs) {
			raw = append(raw, nil) // an item whose encoding failed
		}
		for _, rid := range []string{"AbCdEf==", "", "we<ird>\"rid", "a&b", "back\\slash", "tab\tnl\n", "del\x7f", "é\u2028", "bad\xff"} {
			want, err := json.Marshal(map[string]any{"_rid": rid, "Documents": raw, "_count": len(raw)})
			if err != nil {
				t.Fatal(err)
			}
			if got := documentsReply(1, rid, raw).body; string(got) != string(want) {
				t.Errorf("%d documents, rid %q:\n got %s\nwant %s", n, rid, got, want)
			}
		}
	}
}

package cosmostest

import (
	"net/http"
	"testing"
)

func TestAccountProperties(t *testing.T) {
	s := newTestServer(t)
	resp, raw := call(t, s, http.MethodGet, "/", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	body := decode(t, raw)
	if body["id"] != "localaccount" {
		t.Errorf("id %v", body["id"])
	}
	for _, k := range []string{"writableLocations", "readableLocations"} {
		locs := body[k].([]any)
		loc := locs[0].(map[string]any)
		if len(locs) != 1 || loc["name"] != "Local" || loc["databaseAccountEndpoint"] != s.URL() {
			t.Errorf("%s = %v", k, locs)
		}
	}
	if body["userConsistencyPolicy"].(map[string]any)["defaultConsistencyLevel"] != "Session" {
		t.Errorf("consistency %v", body["userConsistencyPolicy"])
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
}

func TestDatabaseAndContainerProperties(t *testing.T) {
	s := newTestServer(t)
	db := s.Account.CreateDatabase("db")
	c := db.CreateContainer("data", "/tenant", 2)

	resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if body := decode(t, raw); body["id"] != "db" || body["_rid"] != db.RID() || body["_self"] != "dbs/"+db.RID()+"/" {
		t.Errorf("database %s", raw)
	}

	resp, raw = call(t, s, http.MethodGet, "/dbs/db/colls/data", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	body := decode(t, raw)
	pk := body["partitionKey"].(map[string]any)
	if body["id"] != "data" || body["_rid"] != c.RID() || body["_etag"] == nil || body["_self"] == nil ||
		pk["paths"].([]any)[0] != "/tenant" || pk["kind"] != "Hash" || pk["version"] != float64(2) {
		t.Errorf("container %s", raw)
	}

	// The same resources by _rid.
	resp, raw = call(t, s, http.MethodGet, "/dbs/"+db.RID()+"/colls/"+c.RID(), nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)

	for _, p := range []string{"/dbs/nope", "/dbs/db/colls/nope", "/dbs/nope/colls/data/docs/x", "/other"} {
		resp, raw = call(t, s, http.MethodGet, p, map[string]string{"x-ms-documentdb-partitionkey": `["x"]`}, nil)
		wantStatus(t, resp, raw, http.StatusNotFound)
		if decode(t, raw)["code"] != "NotFound" {
			t.Errorf("%s body %s", p, raw)
		}
	}
}

func TestItemLifecycleOverREST(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	docs := "/dbs/db/colls/data/docs"
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p1"]`}

	resp, raw := call(t, s, http.MethodPost, docs, pk, map[string]any{"id": "a", "pk": "p1", "n": 1})
	wantStatus(t, resp, raw, http.StatusCreated)
	created := decode(t, raw)
	for _, k := range []string{"_rid", "_self", "_etag", "_ts"} {
		if created[k] == nil {
			t.Errorf("created item lacks %s: %s", k, raw)
		}
	}
	if _, has := created["_lsn"]; has {
		t.Error("point writes should not expose _lsn")
	}
	if resp.Header.Get("etag") != created["_etag"] || resp.Header.Get("x-ms-session-token") == "" {
		t.Errorf("headers %v", resp.Header)
	}

	resp, raw = call(t, s, http.MethodPost, docs, pk, map[string]any{"id": "a", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusConflict)

	upsert := map[string]string{"x-ms-documentdb-partitionkey": `["p1"]`, "x-ms-documentdb-is-upsert": "True"}
	resp, raw = call(t, s, http.MethodPost, docs, upsert, map[string]any{"id": "a", "pk": "p1", "n": 2})
	wantStatus(t, resp, raw, http.StatusOK)
	resp, raw = call(t, s, http.MethodPost, docs, upsert, map[string]any{"id": "b", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusCreated)

	resp, raw = call(t, s, http.MethodPost, docs, map[string]string{"x-ms-documentdb-partitionkey": `["other"]`}, map[string]any{"id": "c", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = call(t, s, http.MethodPost, docs, nil, map[string]any{"id": "c", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
	resp, raw = call(t, s, http.MethodPost, docs, pk, "not json")
	wantStatus(t, resp, raw, http.StatusBadRequest)

	resp, raw = call(t, s, http.MethodGet, docs+"/a", pk, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	read := decode(t, raw)
	if read["n"] != float64(2) {
		t.Errorf("read %s", raw)
	}
	resp, raw = call(t, s, http.MethodGet, docs+"/a", map[string]string{"x-ms-documentdb-partitionkey": `["p2"]`}, nil)
	wantStatus(t, resp, raw, http.StatusNotFound)

	replaceHdr := map[string]string{"x-ms-documentdb-partitionkey": `["p1"]`, "If-Match": read["_etag"].(string)}
	resp, raw = call(t, s, http.MethodPut, docs+"/a", replaceHdr, map[string]any{"id": "a", "pk": "p1", "n": 3})
	wantStatus(t, resp, raw, http.StatusOK)
	resp, raw = call(t, s, http.MethodPut, docs+"/a", replaceHdr, map[string]any{"id": "a", "pk": "p1", "n": 4})
	wantStatus(t, resp, raw, http.StatusPreconditionFailed)
	resp, raw = call(t, s, http.MethodPut, docs+"/zzz", pk, map[string]any{"id": "zzz", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusNotFound)

	minimal := map[string]string{"x-ms-documentdb-partitionkey": `["p1"]`, "Prefer": "return=minimal"}
	resp, raw = call(t, s, http.MethodPost, docs, minimal, map[string]any{"id": "m", "pk": "p1"})
	wantStatus(t, resp, raw, http.StatusCreated)
	if len(raw) != 0 {
		t.Errorf("return=minimal body %s", raw)
	}

	resp, raw = call(t, s, http.MethodDelete, docs+"/b", pk, nil)
	wantStatus(t, resp, raw, http.StatusNoContent)
	resp, raw = call(t, s, http.MethodDelete, docs+"/b", pk, nil)
	wantStatus(t, resp, raw, http.StatusNotFound)

	if got, ok := c.Get("a"); !ok || got["n"] != float64(3) || got["_lsn"] == nil {
		t.Errorf("Get(a) = %v", got)
	}
	if n := len(c.Items()); n != 2 {
		t.Errorf("%d items, want 2 (a, m)", n)
	}
	for kind, want := range map[RequestKind]int{kindCreate: 8, kindReadItem: 2, kindReplace: 3, kindDelete: 2} {
		if got := s.Handler.Count(kind); got != want {
			t.Errorf("Count(%s) = %d, want %d", kind, got, want)
		}
	}
}

func TestUpsertHelperValidates(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/a/b", 1)
	if _, err := c.Upsert(map[string]any{"pk": "x"}); err == nil {
		t.Error("missing id accepted")
	}
	if _, err := c.Upsert(map[string]any{"id": "a/b"}); err == nil {
		t.Error("id with / accepted")
	}
	if err := c.WriteItems("nested", 2); err != nil {
		t.Fatal(err)
	}
	for _, it := range c.Items() {
		if it["a"].(map[string]any)["b"] != "nested" {
			t.Errorf("nested partition key not set: %v", it)
		}
	}
	idc := s.Account.CreateDatabase("db").CreateContainer("byid", "/id", 1)
	if err := idc.WriteItems("x", 2); err == nil {
		t.Error("WriteItems of 2 items with one pk in a /id container should fail")
	}
	if err := idc.WriteItemsToRange("0", 3); err != nil || len(idc.Items()) != 3 {
		t.Errorf("WriteItemsToRange in a /id container: %v", err)
	}
	if err := idc.WriteItemsToRange("9", 1); err == nil {
		t.Error("unknown range accepted")
	}
}

package cosmostest

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
)

func TestSplitRetiresParentWith410And1002(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
	if err := c.WriteItemsToRange("1", 10); err != nil {
		t.Fatal(err)
	}
	left, right, err := c.Split("1")
	if err != nil {
		t.Fatal(err)
	}
	if left.ID != "2" || right.ID != "3" {
		t.Errorf("child ids %s, %s; want 2, 3", left.ID, right.ID)
	}
	if left.MinInclusive != "7F80" || left.MaxExclusive != "BF40" || right.MinInclusive != "BF40" || right.MaxExclusive != "FF" {
		t.Errorf("children %+v %+v", left, right)
	}
	if len(left.Parents) != 1 || left.Parents[0] != "1" || len(right.Parents) != 1 || right.Parents[0] != "1" {
		t.Errorf("parents %v %v", left.Parents, right.Parents)
	}
	resp, raw := changeFeed(t, s, c, "1", "", nil)
	wantStatus(t, resp, raw, http.StatusGone)
	if resp.Header.Get("x-ms-substatus") != "1002" {
		t.Errorf("substatus = %q", resp.Header.Get("x-ms-substatus"))
	}
	if c.LSN("1") != -1 {
		t.Error("LSN of a gone range should be -1")
	}
	if got := len(c.Ranges()); got != 3 {
		t.Errorf("%d live ranges, want 3", got)
	}
	if _, _, err := c.Split("1"); !errors.Is(err, ErrRangeNotFound) {
		t.Errorf("second split of 1: %v", err)
	}
}

func TestSplitChildrenContinueParentLSN(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 1)
	if err := c.WriteItemsToRange("0", 10); err != nil {
		t.Fatal(err)
	}
	left, right, err := c.Split("0")
	if err != nil {
		t.Fatal(err)
	}
	if c.LSN(left.ID) != 10 || c.LSN(right.ID) != 10 {
		t.Fatalf("children LSNs %d %d, want 10 10", c.LSN(left.ID), c.LSN(right.ID))
	}
	// The parent's items are split between the children and keep their _lsn.
	total := 0
	for _, r := range []PartitionKeyRange{left, right} {
		resp, raw := changeFeed(t, s, c, r.ID, "", nil)
		if resp.StatusCode == http.StatusNotModified {
			continue
		}
		wantStatus(t, resp, raw, http.StatusOK)
		for _, d := range docsOf(t, raw) {
			if lsn := d["_lsn"].(float64); lsn < 1 || lsn > 10 {
				t.Errorf("item kept _lsn %v", lsn)
			}
			total++
		}
		if got := resp.Header.Get("x-ms-session-token"); got != r.ID+":-1#10" {
			t.Errorf("session token of %s = %s", r.ID, got)
		}
	}
	if total != 10 {
		t.Errorf("children hold %d items, want 10", total)
	}
	// LSNs advance independently.
	if err := c.WriteItemsToRange(left.ID, 3); err != nil {
		t.Fatal(err)
	}
	if c.LSN(left.ID) != 13 || c.LSN(right.ID) != 10 {
		t.Fatalf("after writes LSNs %d %d, want 13 10", c.LSN(left.ID), c.LSN(right.ID))
	}
	resp, raw := changeFeed(t, s, c, left.ID, `"10"`, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	docs := docsOf(t, raw)
	if len(docs) != 3 || docs[0]["_lsn"] != float64(11) {
		t.Fatalf("new docs in left child = %v", docs)
	}
}

func TestMergeJoinsAdjacentRanges(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 3)
	if err := c.WriteItemsToRange("0", 4); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteItemsToRange("1", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Merge("0", "2"); err == nil {
		t.Fatal("merging non-adjacent ranges should fail")
	}
	m, err := c.Merge("0", "1")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "3" || len(m.Parents) != 2 || m.Parents[0] != "0" || m.Parents[1] != "1" || m.MinInclusive != "" || m.MaxExclusive != c.Ranges()[1].MinInclusive {
		t.Fatalf("merged range %+v", m)
	}
	if c.LSN(m.ID) != 7 {
		t.Errorf("merged LSN = %d, want 7 (max of parents)", c.LSN(m.ID))
	}
	for _, gone := range []string{"0", "1"} {
		resp, raw := changeFeed(t, s, c, gone, "", nil)
		wantStatus(t, resp, raw, http.StatusGone)
		if resp.Header.Get("x-ms-substatus") != "1002" {
			t.Errorf("substatus of %s = %s", gone, resp.Header.Get("x-ms-substatus"))
		}
	}
	resp, raw := changeFeed(t, s, c, m.ID, "", map[string]string{"x-ms-max-item-count": "100"})
	wantStatus(t, resp, raw, http.StatusOK)
	if docs := docsOf(t, raw); len(docs) != 11 {
		t.Errorf("merged range has %d items, want 11", len(docs))
	}
	if err := c.WriteItemsToRange(m.ID, 1); err != nil {
		t.Fatal(err)
	}
	if c.LSN(m.ID) != 8 {
		t.Errorf("merged LSN after write = %d, want 8", c.LSN(m.ID))
	}
}

func TestInitialRangesSplitEPKSpaceEvenly(t *testing.T) {
	for n, want := range map[int][]string{
		1: {"", "FF"},
		2: {"", "7F80", "FF"},
		4: {"", "3FC0", "7F80", "BF40", "FF"},
	} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s := newTestServer(t)
			rs := s.Account.CreateDatabase("db").CreateContainer("c", "/pk", n).Ranges()
			for i, r := range rs {
				if r.ID != strconv.Itoa(i) || r.MinInclusive != want[i] || r.MaxExclusive != want[i+1] {
					t.Errorf("range %d = %+v", i, r)
				}
			}
		})
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	s := newTestServer(t)
	db := s.Account.CreateDatabase("db")
	if s.Account.CreateDatabase("db") != db {
		t.Error("CreateDatabase returned a new database for an existing id")
	}
	c := db.CreateContainer("c", "/pk", 2)
	if db.CreateContainer("c", "/other", 5) != c || len(c.Ranges()) != 2 {
		t.Error("CreateContainer changed an existing container")
	}
	if c.Database() != db || c.ID() != "c" || c.RID() == "" || db.RID() == "" {
		t.Error("ids and rids")
	}
}

func TestEPKHashIsDeterministicAndBelowMax(t *testing.T) {
	if epkOf("a") != epkOf("a") || epkOf("a") == epkOf("b") || len(epkOf("a")) != 32 {
		t.Fatal("epkOf")
	}
	for i := 0; i < 2000; i++ {
		if e := epkOf(i); e >= "FF" {
			t.Fatalf("EPK %s of %d is not below FF", e, i)
		}
	}
	if m, ok := midpoint("FE", "FF"); !ok || m != "FE80" {
		t.Errorf("midpoint of [FE, FF) = %q, %v; want FE80", m, ok)
	}
	if m, ok := midpoint("", "FF"); !ok || m != "7F80" {
		t.Errorf("midpoint of the full space = %q", m)
	}
	// Many ranges: every bound sorts below "FF" as a string, ranges are
	// contiguous and ordered, so ordinal EPK comparisons stay consistent.
	bounds := evenBounds(10000)
	for i := 1; i < len(bounds); i++ {
		if bounds[i-1] >= bounds[i] {
			t.Fatalf("bound %d %q is not below bound %d %q", i-1, bounds[i-1], i, bounds[i])
		}
	}
}

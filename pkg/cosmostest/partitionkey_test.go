package cosmostest

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

func TestPartitionKeyForRangeLandsInThatRange(t *testing.T) {
	s := newTestServer(t)
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 4)
	seen := map[string]bool{}
	for _, r := range c.Ranges() {
		pk, err := c.PartitionKeyForRange(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if seen[pk] {
			t.Fatalf("partition key %q returned twice", pk)
		}
		seen[pk] = true
		before := map[string]int64{}
		for _, o := range c.Ranges() {
			before[o.ID] = c.LSN(o.ID)
		}
		hdr, _ := json.Marshal([]string{pk})
		resp, raw := call(t, s, http.MethodPost, "/dbs/db/colls/data/docs",
			map[string]string{hdrPartitionKey: string(hdr)}, map[string]any{"id": "item-" + pk, "pk": pk})
		wantStatus(t, resp, raw, http.StatusCreated)
		for _, o := range c.Ranges() {
			want := before[o.ID]
			if o.ID == r.ID {
				want++
			}
			if got := c.LSN(o.ID); got != want {
				t.Errorf("after a write with pk %q for range %s: range %s LSN %d, want %d", pk, r.ID, o.ID, got, want)
			}
		}
	}

	left, right, err := c.Split("0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PartitionKeyForRange("0"); !errors.Is(err, ErrRangeNotFound) {
		t.Errorf("split parent: err %v, want ErrRangeNotFound", err)
	}
	if _, err := c.PartitionKeyForRange("99"); !errors.Is(err, ErrRangeNotFound) {
		t.Errorf("unknown range: err %v, want ErrRangeNotFound", err)
	}
	for _, child := range []PartitionKeyRange{left, right} {
		pk, err := c.PartitionKeyForRange(child.ID)
		if err != nil {
			t.Fatal(err)
		}
		if epk := epkOf(pk); !epkInRange(epk, child.MinInclusive, child.MaxExclusive) {
			t.Errorf("pk %q (epk %s) is outside range %s [%q, %q)", pk, epk, child.ID, child.MinInclusive, child.MaxExclusive)
		}
	}
}

package leasetest

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type leaseFixture struct {
	srv    *cosmostest.Server
	data   *cosmostest.Container
	leases *cosmostest.Container
}

func newLeaseFixture(t *testing.T, leasePK string) leaseFixture {
	s := cosmostest.NewServer()
	t.Cleanup(s.Close)
	db := s.Account.CreateDatabase("db")
	data := db.CreateContainer("data", "/pk", 2)
	if err := data.WriteItemsToRange("0", 5); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("1", 3); err != nil {
		t.Fatal(err)
	}
	return leaseFixture{srv: s, data: data, leases: db.CreateContainer("leases", leasePK, 1)}
}

func TestLeasePrefixAndIDs(t *testing.T) {
	f := newLeaseFixture(t, "/id")
	db := f.data.Database()
	for _, tc := range []struct {
		format cosmostest.LeaseFormat
		prefix string
	}{
		{cosmostest.DotNetV0, "proc127.0.0.1_" + db.RID() + "_" + f.data.RID()},
		{cosmostest.DotNetV1, "proc127.0.0.1_" + db.RID() + "_" + f.data.RID()},
		{cosmostest.JavaV1, "proc127.0.0.1_" + db.RID() + "_" + f.data.RID()},
		{cosmostest.DotNetV2Library, "proc127.0.0.1_" + db.RID() + "_" + f.data.RID()},
		{cosmostest.JavaV0, "proc127.0.0.1_db_data"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			p := NewWriter("proc", f.data, f.leases, tc.format)
			if p.Prefix() != tc.prefix {
				t.Errorf("prefix = %q, want %q", p.Prefix(), tc.prefix)
			}
			if p.LeaseID("0") != tc.prefix+"..0" {
				t.Errorf("lease id = %q", p.LeaseID("0"))
			}
		})
	}
}

func TestCreateLeasesWritesEachFormat(t *testing.T) {
	for _, tc := range []struct {
		format     cosmostest.LeaseFormat
		tokens     []string
		wantFields []string
		noFields   []string
		check      func(t *testing.T, doc map[string]any)
	}{
		{
			format:     cosmostest.DotNetV0,
			tokens:     []string{"0", "1"},
			wantFields: []string{"id", "version", "LeaseToken", "FeedRange", "Owner", "ContinuationToken", "properties", "timestamp", "Mode"},
			noFields:   []string{"PartitionId", "feedRange"},
			check: func(t *testing.T, doc map[string]any) {
				if doc["version"] != float64(0) || doc["Mode"] != "Incremental Feed" {
					t.Errorf("version/mode %v %v", doc["version"], doc["Mode"])
				}
				fr := doc["FeedRange"].(map[string]any)["Range"].(map[string]any)
				if doc["LeaseToken"] == "0" && (fr["min"] != "" || fr["max"] != "7F80") {
					t.Errorf("FeedRange %v", fr)
				}
			},
		},
		{
			format:     cosmostest.DotNetV1,
			tokens:     []string{"-7F80", "7F80-FF"},
			wantFields: []string{"id", "version", "LeaseToken", "FeedRange", "Owner", "ContinuationToken", "properties", "timestamp", "Mode"},
			check: func(t *testing.T, doc map[string]any) {
				fr := doc["FeedRange"].(map[string]any)["Range"].(map[string]any)
				if doc["version"] != float64(1) || doc["LeaseToken"] != fr["min"].(string)+"-"+fr["max"].(string) {
					t.Errorf("version %v token %v range %v", doc["version"], doc["LeaseToken"], fr)
				}
			},
		},
		{
			format:     cosmostest.JavaV0,
			tokens:     []string{"0", "1"},
			wantFields: []string{"id", "LeaseToken", "ContinuationToken", "timestamp", "Owner"},
			noFields:   []string{"version", "properties", "FeedRange", "feedRange", "Mode"},
		},
		{
			format:     cosmostest.JavaV1,
			tokens:     []string{"-7F80", "7F80-FF"},
			wantFields: []string{"id", "LeaseToken", "ContinuationToken", "timestamp", "Owner", "version", "feedRange"},
			noFields:   []string{"FeedRange", "properties"},
			check: func(t *testing.T, doc map[string]any) {
				r := doc["feedRange"].(map[string]any)["Range"].(map[string]any)
				if r["isMinInclusive"] != true || r["isMaxInclusive"] != false || doc["version"] != float64(1) {
					t.Errorf("feedRange %v", r)
				}
			},
		},
		{
			format:     cosmostest.DotNetV2Library,
			tokens:     []string{"0", "1"},
			wantFields: []string{"id", "PartitionId", "Owner", "ContinuationToken", "properties", "timestamp", "gremlincompatid"},
			noFields:   []string{"version", "LeaseToken"},
			check: func(t *testing.T, doc map[string]any) {
				if doc["gremlincompatid"] != doc["id"] {
					t.Errorf("gremlincompatid %v, id %v", doc["gremlincompatid"], doc["id"])
				}
			},
		},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			f := newLeaseFixture(t, "/id")
			p := NewWriter("proc", f.data, f.leases, tc.format)
			tokens, err := p.CreateLeases(false)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(tokens, ",") != strings.Join(tc.tokens, ",") {
				t.Fatalf("tokens %v, want %v", tokens, tc.tokens)
			}
			for _, tok := range tokens {
				doc, ok := p.Lease(tok)
				if !ok {
					t.Fatalf("no lease %s", tok)
				}
				for _, k := range tc.wantFields {
					if _, ok := doc[k]; !ok {
						t.Errorf("lease %s lacks %s: %v", tok, k, doc)
					}
				}
				for _, k := range tc.noFields {
					if _, ok := doc[k]; ok {
						t.Errorf("lease %s has %s", tok, k)
					}
				}
				if doc["ContinuationToken"] != nil || doc["Owner"] != nil {
					t.Errorf("fresh lease should have null continuation and owner: %v", doc)
				}
				if doc["id"] != p.Prefix()+".."+tok {
					t.Errorf("id %v", doc["id"])
				}
				if tc.check != nil {
					tc.check(t, doc)
				}
			}
			info, ok := f.leases.Get(p.Prefix() + ".info")
			if !ok {
				t.Error("no .info document")
			}
			lock, ok := f.leases.Get(p.Prefix() + ".lock")
			if !ok || lock["ttl"] == nil {
				t.Errorf("lock document %v", lock)
			}
			_ = info
		})
	}
}

func TestCheckpointEncodingPerFormat(t *testing.T) {
	for _, format := range cosmostest.LeaseFormats {
		t.Run(string(format), func(t *testing.T) {
			f := newLeaseFixture(t, "/id")
			p := NewWriter("proc", f.data, f.leases, format)
			tokens, err := p.CreateLeases(false)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Checkpoint(tokens[0], 3); err != nil {
				t.Fatal(err)
			}
			doc, _ := p.Lease(tokens[0])
			if got := continuationEtag(t, format, doc); got != `"3"` {
				t.Errorf("continuation etag %q, want \"3\"", got)
			}
			if err := p.CatchUp(tokens[1]); err != nil {
				t.Fatal(err)
			}
			doc, _ = p.Lease(tokens[1])
			if got := continuationEtag(t, format, doc); got != `"3"` {
				t.Errorf("caught-up etag %q, want \"3\" (LSN of range 1)", got)
			}
			if err := p.SetOwner(tokens[0], "host-a"); err != nil {
				t.Fatal(err)
			}
			doc, _ = p.Lease(tokens[0])
			if doc["Owner"] != "host-a" {
				t.Errorf("owner %v", doc["Owner"])
			}
			if err := p.Checkpoint("nope", 1); err == nil {
				t.Error("checkpoint of a missing lease should fail")
			}
		})
	}
}

// continuationEtag decodes a lease's continuation the way a reader must.
func continuationEtag(t *testing.T, format cosmostest.LeaseFormat, doc map[string]any) string {
	t.Helper()
	raw, _ := doc["ContinuationToken"].(string)
	if format != cosmostest.JavaV1 {
		return raw
	}
	// Java's ChangeFeedState.fromString decodes with Base64.getUrlDecoder().
	b, err := base64.URLEncoding.DecodeString(raw)
	if err != nil {
		t.Fatalf("Java continuation is not URL-safe Base64 with padding: %v", err)
	}
	var st struct {
		V            int
		Rid          string
		Mode         string
		StartFrom    struct{ Type string }
		Continuation struct {
			V            int
			Rid          string
			Continuation []struct {
				Token string    `json:"token"`
				Range javaRange `json:"range"`
			}
			Range javaRange
		}
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.V != 1 || st.Mode != "INCREMENTAL" || st.StartFrom.Type != "BEGINNING" || st.Continuation.V != 1 || st.Rid == "" || st.Continuation.Rid != st.Rid {
		t.Errorf("java state %s", b)
	}
	if len(st.Continuation.Continuation) != 1 {
		t.Fatalf("java state %s", b)
	}
	// routing/Range.java writes both bounds' flags: [min, max).
	if r := st.Continuation.Continuation[0].Range; r != st.Continuation.Range || !r.IsMinInclusive || r.IsMaxInclusive || !strings.Contains(string(b), `"isMaxInclusive":false`) {
		t.Errorf("java state ranges %s", b)
	}
	return st.Continuation.Continuation[0].Token
}

func TestCreateLeasesFromNowCheckpointsCurrentLSN(t *testing.T) {
	f := newLeaseFixture(t, "/partitionKey")
	p := NewWriter("proc", f.data, f.leases, cosmostest.DotNetV0)
	tokens, err := p.CreateLeases(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		doc, _ := p.Lease(tok)
		want := map[string]string{"0": `"5"`, "1": `"3"`}[tok]
		if doc["ContinuationToken"] != want {
			t.Errorf("lease %s continuation %v, want %s", tok, doc["ContinuationToken"], want)
		}
		if doc["partitionKey"] != doc["id"] {
			t.Errorf("partitionKey %v, want the id", doc["partitionKey"])
		}
		// A checkpoint at the current LSN: the lease's feed is empty.
		if want != quotedLSN(f.data.LSN(tok)) {
			t.Errorf("lease %s: range LSN %d", tok, f.data.LSN(tok))
		}
	}
	if _, ok := f.leases.Get(p.Prefix() + ".info"); !ok {
		t.Error("no .info")
	}
	info, _ := f.leases.Get(p.Prefix() + ".info")
	if info["partitionKey"] != info["id"] {
		t.Errorf(".info partitionKey %v", info["partitionKey"])
	}
}

func TestLeaseContainerMustBePartitionedByIDOrPartitionKey(t *testing.T) {
	f := newLeaseFixture(t, "/other")
	if _, err := NewWriter("proc", f.data, f.leases, cosmostest.DotNetV0).CreateLeases(false); err == nil {
		t.Fatal("want an error for a lease container partitioned by /other")
	}
}

func TestReplaceAfterSplitCarriesContinuation(t *testing.T) {
	for _, tc := range []struct {
		format cosmostest.LeaseFormat
		parent string
		want   []string
	}{
		{cosmostest.DotNetV0, "1", []string{"2", "3"}},
		{cosmostest.JavaV0, "1", []string{"2", "3"}},
		{cosmostest.DotNetV2Library, "1", []string{"2", "3"}},
		{cosmostest.DotNetV1, "7F80-FF", []string{"7F80-BF40", "BF40-FF"}},
		{cosmostest.JavaV1, "7F80-FF", []string{"7F80-BF40", "BF40-FF"}},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			f := newLeaseFixture(t, "/id")
			p := NewWriter("proc", f.data, f.leases, tc.format)
			if _, err := p.CreateLeases(false); err != nil {
				t.Fatal(err)
			}
			if err := p.Checkpoint(tc.parent, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := p.ReplaceAfterSplit(tc.parent); err == nil {
				t.Fatal("replacing a lease whose range did not split should fail")
			}
			if _, _, err := f.data.Split("1"); err != nil {
				t.Fatal(err)
			}
			children, err := p.ReplaceAfterSplit(tc.parent)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(children)
			if strings.Join(children, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("children %v, want %v", children, tc.want)
			}
			if _, ok := p.Lease(tc.parent); ok {
				t.Error("parent lease still exists")
			}
			for _, tok := range children {
				doc, ok := p.Lease(tok)
				if !ok {
					t.Fatalf("no child lease %s", tok)
				}
				if got := continuationEtag(t, tc.format, doc); got != `"2"` {
					t.Errorf("child %s continuation %q, want \"2\"", tok, got)
				}
				if err := p.CatchUp(tok); err != nil {
					t.Errorf("catch up child %s: %v", tok, err)
				}
			}
		})
	}
}

func TestEPKLeaseCatchUpAfterMerge(t *testing.T) {
	f := newLeaseFixture(t, "/id")
	p := NewWriter("proc", f.data, f.leases, cosmostest.DotNetV1)
	if _, err := p.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	v0 := NewWriter("v0", f.data, f.leases, cosmostest.DotNetV0)
	if _, err := v0.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.data.Merge("0", "1"); err != nil {
		t.Fatal(err)
	}
	if err := p.CatchUp("-7F80"); err != nil {
		t.Fatal(err)
	}
	doc, _ := p.Lease("-7F80")
	if doc["ContinuationToken"] != `"5"` {
		t.Errorf("continuation after merge %v, want \"5\" (merged range LSN)", doc["ContinuationToken"])
	}
	if _, err := v0.ReplaceAfterSplit("0"); err == nil || !strings.Contains(err.Error(), "merged") {
		t.Errorf("a range-id lease cannot follow a merge: %v", err)
	}
}

// The Java v4 processor checkpoints ChangeFeedState.toString(), which is
// Base64.getUrlEncoder(): the URL-safe alphabet, with padding. (For ASCII
// text the two alphabets differ only where a '>', '?', '~' or DEL ends a
// three-byte group; the state's JSON holds none, so the standard decoder
// reads it too, but the padding must be there.)
func TestJavaStateIsURLSafeBase64WithPadding(t *testing.T) {
	f := newLeaseFixture(t, "/id")
	p := NewWriter("proc", f.data, f.leases, cosmostest.JavaV1)
	tokens, err := p.CreateLeases(false)
	if err != nil {
		t.Fatal(err)
	}
	padded := 0
	for lsn := int64(1); lsn <= 1000; lsn *= 10 {
		if err := p.Checkpoint(tokens[0], lsn); err != nil {
			t.Fatal(err)
		}
		doc, _ := p.Lease(tokens[0])
		written := doc["ContinuationToken"].(string)
		if _, err := base64.URLEncoding.Strict().DecodeString(written); err != nil {
			t.Fatalf("checkpoint %d: %q is not URL-safe Base64 with padding: %v", lsn, written, err)
		}
		if strings.HasSuffix(written, "=") {
			padded++
		}
		if got := continuationEtag(t, cosmostest.JavaV1, doc); got != quotedLSN(lsn) {
			t.Fatalf("checkpoint %d reads back as %s", lsn, got)
		}
	}
	if padded == 0 {
		t.Error("no state of four lengths was padded")
	}
}

// Each library writes the lease's "timestamp" in its own form.
func TestLeaseTimestampsAsTheLibrariesWriteThem(t *testing.T) {
	at := func(sec, nanos int) time.Time { return time.Date(2026, 6, 28, 14, 42, sec, nanos, time.UTC) }
	for _, tc := range []struct {
		name    string
		format  cosmostest.LeaseFormat
		t       time.Time
		updated bool
		want    string
	}{
		{".NET: seven digits", cosmostest.DotNetV0, at(40, 403196200), false, "2026-06-28T14:42:40.4031962Z"},
		{".NET: trailing zeros dropped", cosmostest.DotNetV1, at(40, 403000000), true, "2026-06-28T14:42:40.403Z"},
		{".NET: no fraction", cosmostest.DotNetV2Library, at(40, 0), false, "2026-06-28T14:42:40Z"},
		{"Java created: ZonedDateTime", cosmostest.JavaV0, at(40, 403196000), false, "2026-06-28T14:42:40.403196Z[UTC]"},
		{"Java created: no seconds when zero", cosmostest.JavaV1, at(0, 0), false, "2026-06-28T14:42Z[UTC]"},
		{"Java created: nine digits", cosmostest.JavaV1, at(40, 403196201), false, "2026-06-28T14:42:40.403196201Z[UTC]"},
		{"Java updated: Instant", cosmostest.JavaV1, at(40, 403196000), true, "2026-06-28T14:42:40.403196Z"},
		{"Java updated: milliseconds", cosmostest.JavaV0, at(40, 403000000), true, "2026-06-28T14:42:40.403Z"},
		{"Java updated: seconds always", cosmostest.JavaV0, at(0, 0), true, "2026-06-28T14:42:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Writer{format: tc.format}
			if got := p.timestamp(tc.t, tc.updated); got != tc.want {
				t.Errorf("timestamp = %q, want %q", got, tc.want)
			}
		})
	}
}

package lease

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func encodeJavaState(token string) string {
	state := `{"V":1,"Rid":"coll==","Mode":"INCREMENTAL","StartFrom":{"Type":"BEGINNING"},"Continuation":{"V":1,"Rid":"coll==","Continuation":[{"token":` + token + `,"range":{"min":"","max":"FF"}}],"Range":{"min":"","max":"FF"}}}`
	return base64.StdEncoding.EncodeToString([]byte(state))
}

// Real documents of each writer decode to the same Lease shape.
func TestDecodeEachWriterFormat(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want Lease
	}{
		{".NET v3 v0", `{"id":"p..0","version":0,"LeaseToken":"0","FeedRange":{"Range":{"min":"","max":"FF"}},"Owner":"host-1","ContinuationToken":"\"24\"","properties":{},"Mode":"Incremental Feed"}`,
			Lease{ID: "p..0", Token: "0", Format: DotNetV0, Continuation: `"24"`, Owner: "host-1"}},
		{".NET v3 v1", `{"id":"p..05C1DFFFFFFFFC-FF","version":1,"LeaseToken":"05C1DFFFFFFFFC-FF","FeedRange":{"Range":{"min":"05C1DFFFFFFFFC","max":"FF"}},"Owner":null,"ContinuationToken":"\"100\""}`,
			Lease{ID: "p..05C1DFFFFFFFFC-FF", Token: "05C1DFFFFFFFFC-FF", Format: DotNetV1, EPK: true, Min: "05C1DFFFFFFFFC", Max: "FF", Continuation: `"100"`}},
		{"Java v4 v0", `{"id":"p..3","LeaseToken":"3","ContinuationToken":"\"11\"","timestamp":"x","Owner":"ZKNjph"}`,
			Lease{ID: "p..3", Token: "3", Format: JavaV0, Continuation: `"11"`, Owner: "ZKNjph"}},
		{"Java v4 v1", `{"id":"p..-FF","LeaseToken":"-FF","ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `","Owner":"ZKNjph","version":1,"feedRange":{"Range":{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}}}`,
			Lease{ID: "p..-FF", Token: "-FF", Format: JavaV1, EPK: true, Min: "", Max: "FF", Continuation: `"11"`, Owner: "ZKNjph"}},
		{".NET v2 library", `{"id":"p..7","PartitionId":"7","Owner":"w","ContinuationToken":"\"5\""}`,
			Lease{ID: "p..7", Token: "7", Format: DotNetV2Library, Continuation: `"5"`, Owner: "w"}},
		{"bare LSN continuation", `{"id":"p..1","version":0,"LeaseToken":"1","ContinuationToken":"42"}`,
			Lease{ID: "p..1", Token: "1", Format: DotNetV0, Continuation: `"42"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.doc))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Documents that are not decodable leases are ignored (spec): bookkeeping
// documents, leases without a token or a checkpoint, malformed values.
func TestDecodeIgnoresNonLeases(t *testing.T) {
	for name, doc := range map[string]string{
		"info marker":              `{"id":"p.info"}`,
		"lock":                     `{"id":"p.lock","ttl":60}`,
		"no continuation yet":      `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":null}`,
		"empty continuation":       `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":""}`,
		"no lease token":           `{"id":"p..0","version":0,"ContinuationToken":"\"1\""}`,
		"not JSON":                 `{"id":`,
		"continuation not an etag": `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"abc\""}`,
		"v1 without range":         `{"id":"p..x","version":1,"LeaseToken":"x","ContinuationToken":"\"1\""}`,
		"v1 inverted range":        `{"id":"p..x","version":1,"LeaseToken":"x","FeedRange":{"Range":{"min":"AA","max":"10"}},"ContinuationToken":"\"1\""}`,
		"java state without token": `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaState("null") + `"}`,
		"java state garbage":       `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"!!notbase64!!"}`,
		"unknown version":          `{"id":"p..0","version":7,"LeaseToken":"0","ContinuationToken":"\"1\""}`,
		"LSN overflows int64":      `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"99999999999999999999\""}`,
	} {
		t.Run(name, func(t *testing.T) {
			if l, err := Decode([]byte(doc)); err == nil {
				t.Fatalf("decoded %+v, want it ignored", l)
			}
		})
	}
}

// A lease is ours only when processor, account, database and container all
// match; private-link and regional host names of the same account match.
func TestScopeOwns(t *testing.T) {
	s := Scope{Processor: "orders", Account: "myaccount", DatabaseRID: "dbRID", ContainerRID: "collRID==", DatabaseID: "app_db", ContainerID: "orders_v2"}
	for id, want := range map[string]bool{
		"ordersmyaccount.documents.azure.com_dbRID_collRID==..0":             true,
		"ordersmyaccount.privatelink.documents.azure.com_dbRID_collRID==..0": true,
		"ordersmyaccount-westus2.documents.azure.com_dbRID_collRID==..05-FF": true,
		"ordersmyaccount.documents.azure.com_app_db_orders_v2..3":            true, // Java v0 names
		"ordersmyaccount.documents.azure.com_dbRID_collRID==.info":           false,
		"ordersmyaccount.documents.azure.com_dbRID_collRID==.lock":           false,
		"ordersmyaccount.documents.azure.com_dbRID_collRID==..":              false,
		"orders2myaccount.documents.azure.com_dbRID_collRID==..0":            false, // another processor
		"ordersother.documents.azure.com_dbRID_collRID==..0":                 false, // another account
		"ordersmyaccount-other-thing.documents.azure.com_dbRID_collRID==..0": false,
		"ordersmyaccount.documents.azure.com_dbRID_otherRID==..0":            false, // another container
		"ordersmyaccount.documents.azure.com_app_db_orders..0":               false,
		"billingmyaccount.documents.azure.com_dbRID_collRID==..0":            false,
	} {
		if got := s.Owns(id); got != want {
			t.Errorf("Owns(%q) = %v, want %v", id, got, want)
		}
	}
}

// A page decodes to the same leases in one pass as document by document,
// and a document that does not fit the lease shape is ignored on its own.
func TestDecodePageOnePassAndFallback(t *testing.T) {
	s := Scope{Processor: "p", Account: "acct", DatabaseRID: "db", ContainerRID: "coll"}
	good := []string{
		`{"id":"pacct.documents.azure.com_db_coll..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Owner":"h"}`,
		`{"id":"pacct.documents.azure.com_db_coll..1","version":1,"LeaseToken":"1","FeedRange":{"Range":{"min":"","max":"80"}},"ContinuationToken":"\"7\""}`,
		`{"id":"pacct.documents.azure.com_db_other..2","version":0,"LeaseToken":"2","ContinuationToken":"\"1\""}`, // a stranger
		`{"id":"pacct.documents.azure.com.info"}`,
		`null`,
	}
	join := func(docs []string) []byte {
		return []byte(`{"_rid":"x","Documents":[` + strings.Join(docs, ",") + `],"_count":1}`)
	}
	fast, err := s.decodePage(join(good))
	if err != nil {
		t.Fatal(err)
	}
	var raw queryPage
	if err := json.Unmarshal(join(good), &raw); err != nil {
		t.Fatal(err)
	}
	if slow := s.filter(raw.Documents); !reflect.DeepEqual(fast, slow) || len(fast.Leases) != 2 || fast.Strangers != 1 || fast.Documents != 5 {
		t.Fatalf("one pass %+v, document by document %+v", fast, slow)
	}
	mixed, err := s.decodePage(join(append([]string{`{"id":5}`, `"text"`}, good...)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mixed.Leases, fast.Leases) || mixed.Strangers != 1 || mixed.Documents != 7 {
		t.Fatalf("with non-lease documents: %+v", mixed)
	}
	if _, err := s.decodePage([]byte(`{"Documents":[{"id":"x"}`)); err == nil {
		t.Fatal("a truncated page decoded")
	}
}

func encodeJavaStateWithMode(enc *base64.Encoding, rid, mode, startFrom, token string) string {
	state := `{"V":1,"Rid":"` + rid + `","Mode":"` + mode + `","StartFrom":{"Type":"` + startFrom + `"},"Continuation":{"V":1,"Rid":"` + rid + `","Continuation":[{"token":` + token + `,"range":{"min":"","max":"FF"}}],"Range":{"min":"","max":"FF"}}}`
	return enc.EncodeToString([]byte(state))
}

// Each writer's lease keeps the processor's change feed mode: .NET v3 in
// "Mode" (v0 and v1, any case), Java v4 EPK leases inside the Base64 state;
// writers that record no mode (Java v0, .NET v2 library, legacy .NET) are
// latest version. A value no writer writes is read as latest version and
// kept as unknown so the scaler can say so.
func TestDecodeKeepsTheProcessorsMode(t *testing.T) {
	javaAVAD := encodeJavaStateWithMode(base64.URLEncoding, "coll==", "FULL_FIDELITY", "NOW", `"\"11\""`)
	cases := []struct {
		name        string
		doc         string
		mode        Mode
		unknownMode string
	}{
		{".NET v0 latest version", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Incremental Feed"}`, LatestVersion, ""},
		{".NET v0 all versions and deletes", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Full-Fidelity Feed"}`, AllVersionsAndDeletes, ""},
		{".NET v1 all versions and deletes", `{"id":"p..05-FF","version":1,"LeaseToken":"05-FF","FeedRange":{"Range":{"min":"05","max":"FF"}},"ContinuationToken":"\"7\"","Mode":"Full-Fidelity Feed"}`, AllVersionsAndDeletes, ""},
		{".NET mode in another case", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"full-fidelity feed"}`, AllVersionsAndDeletes, ""},
		{".NET legacy lease without mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\""}`, LatestVersion, ""},
		{".NET null mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":null}`, LatestVersion, ""},
		{"Java v4 v1 incremental", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `"}`, LatestVersion, ""},
		{"Java v4 v1 full fidelity", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + javaAVAD + `"}`, AllVersionsAndDeletes, ""},
		{"Java v4 v0 (no mode)", `{"id":"p..3","LeaseToken":"3","ContinuationToken":"\"11\""}`, LatestVersion, ""},
		{".NET v2 library (no mode)", `{"id":"p..7","PartitionId":"7","ContinuationToken":"\"5\""}`, LatestVersion, ""},
		{".NET unknown mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Everything Feed"}`, LatestVersion, "Everything Feed"},
		{"Java unknown mode", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaStateWithMode(base64.URLEncoding, "coll==", "SOMETHING_NEW", "NOW", `"\"11\""`) + `"}`, LatestVersion, "SOMETHING_NEW"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.doc))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got.Mode != tc.mode || got.UnknownMode != tc.unknownMode {
				t.Fatalf("mode %v (unknown %q), want %v (unknown %q)", got.Mode, got.UnknownMode, tc.mode, tc.unknownMode)
			}
		})
	}
}

// An unknown mode value is kept only up to a bound: it ends up in a log line.
func TestDecodeBoundsAnUnknownMode(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	got, err := Decode([]byte(`{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"` + long + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != LatestVersion || got.UnknownMode == "" || len(got.UnknownMode) > 100 {
		t.Fatalf("mode %v, unknown mode of %d bytes", got.Mode, len(got.UnknownMode))
	}
}

// Java v4 writes its state with the URL-safe Base64 alphabet; a state whose
// encoding uses '-' or '_' must decode, not be dropped as a non-lease.
func TestDecodeJavaStateInURLSafeBase64(t *testing.T) {
	var encoded string
	for pad := ""; len(pad) < 3; pad += "a" {
		if e := encodeJavaStateWithMode(base64.URLEncoding, pad+"~~~???>>>", "FULL_FIDELITY", "NOW", `"\"42\""`); strings.ContainsAny(e, "-_") {
			encoded = e
			break
		}
	}
	if encoded == "" {
		t.Fatal("test setup: no state whose URL-safe encoding differs from the standard one")
	}
	got, err := Decode([]byte(`{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encoded + `"}`))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got.Continuation != `"42"` || got.Mode != AllVersionsAndDeletes || got.Format != JavaV1 {
		t.Fatalf("got %+v", got)
	}
}

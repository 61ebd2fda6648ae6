package emulator

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// The lease documents below are the real writers' shapes, as they would be
// found in a lease container; id "p..<token>" stands for a lease id of
// processor "p" on the scripted account's appdb/orders.

func withScriptedID(doc string) string {
	return strings.Replace(doc, `"id":"p..`, `"id":"`+scriptedPrefix, 1)
}

func encodeJavaState(token string) string {
	state := `{"V":1,"Rid":"coll==","Mode":"INCREMENTAL","StartFrom":{"Type":"BEGINNING"},"Continuation":{"V":1,"Rid":"coll==","Continuation":[{"token":` + token + `,"range":{"min":"","max":"FF"}}],"Range":{"min":"","max":"FF"}}}`
	return base64.StdEncoding.EncodeToString([]byte(state))
}

func encodeJavaStateWithMode(enc *base64.Encoding, rid, mode, startFrom, token string) string {
	state := `{"V":1,"Rid":"` + rid + `","Mode":"` + mode + `","StartFrom":{"Type":"` + startFrom + `"},"Continuation":{"V":1,"Rid":"` + rid + `","Continuation":[{"token":` + token + `,"range":{"min":"","max":"FF"}}],"Range":{"min":"","max":"FF"}}}`
	return enc.EncodeToString([]byte(state))
}

// estimatedLeases returns the leases one estimate found among docs.
func estimatedLeases(t *testing.T, docs ...string) []decodedLease {
	t.Helper()
	a := &scriptedAccount{}
	for _, d := range docs {
		a.leases = append(a.leases, withScriptedID(d))
	}
	in, err := a.inspect(t)
	if err != nil {
		t.Fatalf("estimate: %v", err)
	}
	var out []decodedLease
	for _, l := range in.Leases {
		out = append(out, decodedLease{l.CosmosDBLease, l.ID, l.Owner})
	}
	return out
}

// decodedLease is a counted lease with the id and owner its document holds.
type decodedLease struct {
	azure.CosmosDBLease
	ID, Owner string
}

// Real documents of each writer decode to the same lease shape.
func TestLeasesOfEachWriterFormat(t *testing.T) {
	id := func(token string) string { return scriptedPrefix + token }
	cases := []struct {
		name string
		doc  string
		want decodedLease
	}{
		{".NET v3 v0", `{"id":"p..0","version":0,"LeaseToken":"0","FeedRange":{"Range":{"min":"","max":"FF"}},"Owner":"host-1","ContinuationToken":"\"24\"","properties":{},"Mode":"Incremental Feed"}`,
			decodedLease{ID: id("0"), Owner: "host-1", CosmosDBLease: azure.CosmosDBLease{Token: "0", Continuation: `"24"`}}},
		{".NET v3 v1", `{"id":"p..05C1DFFFFFFFFC-FF","version":1,"LeaseToken":"05C1DFFFFFFFFC-FF","FeedRange":{"Range":{"min":"05C1DFFFFFFFFC","max":"FF"}},"Owner":null,"ContinuationToken":"\"100\""}`,
			decodedLease{ID: id("05C1DFFFFFFFFC-FF"), CosmosDBLease: azure.CosmosDBLease{Token: "05C1DFFFFFFFFC-FF", EPK: true, Min: "05C1DFFFFFFFFC", Max: "FF", Continuation: `"100"`}}},
		{"Java v4 v0", `{"id":"p..3","LeaseToken":"3","ContinuationToken":"\"11\"","timestamp":"x","Owner":"ZKNjph"}`,
			decodedLease{ID: id("3"), Owner: "ZKNjph", CosmosDBLease: azure.CosmosDBLease{Token: "3", Continuation: `"11"`}}},
		{"Java v4 v1", `{"id":"p..-FF","LeaseToken":"-FF","ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `","Owner":"ZKNjph","version":1,"feedRange":{"Range":{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}}}`,
			decodedLease{ID: id("-FF"), Owner: "ZKNjph", CosmosDBLease: azure.CosmosDBLease{Token: "-FF", EPK: true, Min: "", Max: "FF", Continuation: `"11"`}}},
		{".NET v2 library", `{"id":"p..7","PartitionId":"7","Owner":"w","ContinuationToken":"\"5\""}`,
			decodedLease{ID: id("7"), Owner: "w", CosmosDBLease: azure.CosmosDBLease{Token: "7", Continuation: `"5"`}}},
		{"bare LSN continuation", `{"id":"p..1","version":0,"LeaseToken":"1","ContinuationToken":"42"}`,
			decodedLease{ID: id("1"), CosmosDBLease: azure.CosmosDBLease{Token: "1", Continuation: `"42"`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := estimatedLeases(t, tc.doc)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// All of them in one lease container: one estimate reads each in its format.
	var docs []string
	for _, tc := range cases {
		docs = append(docs, tc.doc)
	}
	if got := estimatedLeases(t, docs...); len(got) != len(cases) {
		t.Fatalf("mixed formats: %d leases, want %d: %+v", len(got), len(cases), got)
	}
}

// Documents that are not decodable leases are ignored (spec): bookkeeping
// documents, leases without a token or a checkpoint, malformed values.
func TestNonLeasesAreIgnored(t *testing.T) {
	for name, doc := range map[string]string{
		"info marker":              `{"id":"p..info"}`,
		"lock":                     `{"id":"p..lock","ttl":60}`,
		"no continuation yet":      `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":null}`,
		"empty continuation":       `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":""}`,
		"no lease token":           `{"id":"p..0","version":0,"ContinuationToken":"\"1\""}`,
		"not a lease's shape":      `{"id":"p..0","version":"zero","LeaseToken":0,"ContinuationToken":1}`,
		"continuation not an etag": `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"abc\""}`,
		"v1 without range":         `{"id":"p..x","version":1,"LeaseToken":"x","ContinuationToken":"\"1\""}`,
		"v1 inverted range":        `{"id":"p..x","version":1,"LeaseToken":"x","FeedRange":{"Range":{"min":"AA","max":"10"}},"ContinuationToken":"\"1\""}`,
		"java state without token": `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaState("null") + `"}`,
		"java state garbage":       `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"!!notbase64!!"}`,
		"unknown version":          `{"id":"p..0","version":7,"LeaseToken":"0","ContinuationToken":"\"1\""}`,
		"LSN overflows int64":      `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"99999999999999999999\""}`,
	} {
		t.Run(name, func(t *testing.T) {
			if got := estimatedLeases(t, doc); len(got) != 0 {
				t.Fatalf("read %+v, want it ignored", got)
			}
		})
	}
}

// A lease is ours only when processor, account, database and container all
// match; the account is the host's first label (so a private-link name of
// the same account matches), and Java v4 PK-range leases name the database
// and container.
func TestLeaseOwnership(t *testing.T) {
	a := &scriptedAccount{}
	for id := range map[string]bool{} {
		_ = id
	}
	ids := map[string]bool{
		"ordersmyaccount.documents.azure.com_dbRID_collRID==..0":             true,
		"ordersmyaccount.privatelink.documents.azure.com_dbRID_collRID==..1": true,
		"ordersMyAccount.documents.azure.com_dbRID_collRID==..2":             true,
		"ordersmyaccount-westus2.documents.azure.com_dbRID_collRID==..05-FF": false, // another host name: the processor's endpoint must be the scaler's
		"ordersmyaccount-prod.documents.azure.com_dbRID_collRID==..05-FF":    false, // another account
		"ordersmyaccount.documents.azure.com_app_db_orders_v2..3":            true,  // Java v0 names
		"ordersmyaccount.documents.azure.com_dbRID_collRID==.info":           false,
		"ordersmyaccount.documents.azure.com_dbRID_collRID==.lock":           false,
		"ordersmyaccount.documents.azure.com_dbRID_collRID==..":              false,
		"orders2myaccount.documents.azure.com_dbRID_collRID==..4":            false, // another processor
		"ordersother.documents.azure.com_dbRID_collRID==..5":                 false, // another account
		"ordersmyaccount-other-thing.documents.azure.com_dbRID_collRID==..6": false,
		"ordersmyaccount.documents.azure.com_dbRID_otherRID==..7":            false, // another container
		"ordersmyaccount.documents.azure.com_app_db_orders..8":               false,
		"billingmyaccount.documents.azure.com_dbRID_collRID==..9":            false,
	}
	var want []string
	for id, ours := range ids {
		_, token, _ := strings.Cut(id, "..")
		a.leases = append(a.leases, `{"id":"`+id+`","version":0,"LeaseToken":"`+token+`","ContinuationToken":"\"1\""}`)
		if ours {
			want = append(want, id)
		}
	}
	e, err := scriptedInspection(t, a, azure.CosmosDBContainers{Database: "app_db", Container: "orders_v2", LeaseDatabase: "app_db", LeaseContainer: "leases", Processor: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range e.Leases {
		got[l.ID] = true
	}
	for id, ours := range ids {
		if got[id] != ours {
			t.Errorf("lease %q counted: %v, want %v", id, got[id], ours)
		}
	}
	if len(e.Leases) != len(want) {
		t.Errorf("%d leases, want %d", len(e.Leases), len(want))
	}
}

// A page holding documents that are not leases at all still yields its
// leases; a truncated page fails the estimate.
func TestLeasePageWithOtherDocuments(t *testing.T) {
	a := &scriptedAccount{leases: []string{
		`{"id":5}`, `"text"`, `null`, `[]`,
		withScriptedID(`{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Owner":"h"}`),
		withScriptedID(`{"id":"p..1","version":1,"LeaseToken":"1","FeedRange":{"Range":{"min":"","max":"80"}},"ContinuationToken":"\"7\""}`),
		`{"id":"pmyaccount.documents.azure.com_dbRID_other..2","version":0,"LeaseToken":"2","ContinuationToken":"\"1\""}`, // a stranger
		`{"id":"pmyaccount.documents.azure.com.info"}`,
	}}
	e, err := a.estimate(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Leases) != 2 {
		t.Fatalf("%d leases, want 2: %+v", len(e.Leases), e.Leases)
	}
	a.page = `{"Documents":[{"id":"x"}`
	if _, err := a.estimate(t); err == nil || !strings.Contains(err.Error(), "malformed response body") {
		t.Fatalf("a truncated page: %v, want a malformed body error", err)
	}
}

// Each writer's lease keeps the processor's change feed mode: .NET v3 in
// "Mode" (v0 and v1, any case), Java v4 EPK leases inside the Base64 state;
// writers that record no mode (Java v0, .NET v2 library, legacy .NET) are
// latest version. A value no writer writes is read as latest version.
func TestLeasesKeepTheProcessorsMode(t *testing.T) {
	javaAVAD := encodeJavaStateWithMode(base64.URLEncoding, "coll==", "FULL_FIDELITY", "NOW", `"\"11\""`)
	cases := []struct {
		name string
		doc  string
		avad bool
	}{
		{".NET v0 latest version", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Incremental Feed"}`, false},
		{".NET v0 all versions and deletes", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Full-Fidelity Feed"}`, true},
		{".NET v1 all versions and deletes", `{"id":"p..05-FF","version":1,"LeaseToken":"05-FF","FeedRange":{"Range":{"min":"05","max":"FF"}},"ContinuationToken":"\"7\"","Mode":"Full-Fidelity Feed"}`, true},
		{".NET mode in another case", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"full-fidelity feed"}`, true},
		{".NET legacy lease without mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\""}`, false},
		{".NET null mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":null}`, false},
		{"Java v4 v1 incremental", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `"}`, false},
		{"Java v4 v1 full fidelity", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + javaAVAD + `"}`, true},
		{"Java v4 v0 (no mode)", `{"id":"p..3","LeaseToken":"3","ContinuationToken":"\"11\""}`, false},
		{".NET v2 library (no mode)", `{"id":"p..7","PartitionId":"7","ContinuationToken":"\"5\""}`, false},
		{".NET unknown mode", `{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Everything Feed"}`, false},
		{"Java unknown mode", `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaStateWithMode(base64.URLEncoding, "coll==", "SOMETHING_NEW", "NOW", `"\"11\""`) + `"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := estimatedLeases(t, tc.doc)
			if len(got) != 1 || got[0].AllVersionsAndDeletes != tc.avad {
				t.Fatalf("got %+v, want all versions and deletes %v", got, tc.avad)
			}
		})
	}
}

// Java v4 writes its state with the URL-safe Base64 alphabet; a state whose
// encoding uses '-' or '_' must decode, not be dropped as a non-lease.
func TestJavaStateInURLSafeBase64(t *testing.T) {
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
	got := estimatedLeases(t, `{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"`+encoded+`"}`)
	if len(got) != 1 || got[0].Continuation != `"42"` || !got[0].AllVersionsAndDeletes || !got[0].EPK {
		t.Fatalf("got %+v", got)
	}
}

// FuzzLeaseDocument feeds the estimator arbitrary lease documents, seeded
// with every real writer's format. Whatever the input, the estimate either
// fails or holds leases that carry a token, a quoted numeric etag and, for EPK leases, an ordered range.
func FuzzLeaseDocument(f *testing.F) {
	for _, seed := range []string{
		`"version":0,"LeaseToken":"0","FeedRange":{"Range":{"min":"","max":"FF"}},"Owner":"h","ContinuationToken":"\"24\"","properties":{},"Mode":"Incremental Feed"`,
		`"version":1,"LeaseToken":"05C1DFFFFFFFFC-FF","FeedRange":{"Range":{"min":"05C1DFFFFFFFFC","max":"FF"}},"Owner":null,"ContinuationToken":"\"100\""`,
		`"LeaseToken":"3","ContinuationToken":"\"11\"","timestamp":"x","Owner":"ZKNjph"`,
		`"LeaseToken":"-FF","ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `","Owner":"Z","version":1,"feedRange":{"Range":{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}}`,
		`"PartitionId":"7","Owner":"w","ContinuationToken":"\"5\""`,
		`"version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Full-Fidelity Feed"`,
		`"LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaStateWithMode(base64.URLEncoding, "c==", "FULL_FIDELITY", "NOW", `"\"9\""`) + `"`,
		`"ttl":60`, `"version":1e400`, `"LeaseToken":[]`,
	} {
		f.Add("0", seed)
	}
	f.Fuzz(func(t *testing.T, token, fields string) {
		a := &scriptedAccount{leases: []string{leaseDoc(token, fields)}}
		e, err := a.estimate(t)
		if err != nil {
			return // not a page the service would send, or a lease it would refuse
		}
		for _, l := range e.Leases {
			if l.Token == "" {
				t.Fatalf("lease without token from %q", fields)
			}
			digits := strings.Trim(l.Continuation, `"`)
			if len(l.Continuation) != len(digits)+2 || digits == "" || strings.Trim(digits, "0123456789") != "" {
				t.Fatalf("continuation %q is not a quoted LSN", l.Continuation)
			}
			if l.EPK && (l.Max == "" || l.Min >= l.Max) {
				t.Fatalf("EPK lease with range [%q, %q)", l.Min, l.Max)
			}
		}
	})
}

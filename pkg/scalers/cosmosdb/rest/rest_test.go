package rest

import (
	"net/http"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
)

// testKey is base64 for "secret-key-for-tests".
const testKey = "c2VjcmV0LWtleS1mb3ItdGVzdHM="

func testAccount(t testing.TB) *account.Account {
	t.Helper()
	a, _, err := account.Resolve(account.Settings{Connection: "AccountEndpoint=https://account.documents.azure.com:443/;AccountKey=" + testKey + ";"}, account.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A signature covers the resource type and link: for a resource path the
// type is the next-to-last segment and the link the whole path; for a feed
// the type is the last segment and the link its parent.
func TestResource(t *testing.T) {
	c := NewClient(testAccount(t), ClientOptions{})
	for _, tc := range []struct {
		segments       []string
		url, typ, link string
	}{
		{nil, "https://account.documents.azure.com:443/", "", ""},
		{[]string{"dbs", "d"}, "https://account.documents.azure.com:443/dbs/d", "dbs", "dbs/d"},
		{[]string{"dbs", "d", "colls", "c"}, "https://account.documents.azure.com:443/dbs/d/colls/c", "colls", "dbs/d/colls/c"},
		{[]string{"dbs", "d", "colls", "c", "docs"}, "https://account.documents.azure.com:443/dbs/d/colls/c/docs", "docs", "dbs/d/colls/c"},
		{[]string{"dbs", "d", "colls", "c", "pkranges"}, "https://account.documents.azure.com:443/dbs/d/colls/c/pkranges", "pkranges", "dbs/d/colls/c"},
		{[]string{"dbs", "d", "colls", "c", "docs", "item 1"}, "https://account.documents.azure.com:443/dbs/d/colls/c/docs/item%201", "docs", "dbs/d/colls/c/docs/item 1"},
	} {
		r := c.Resource(tc.segments...)
		if r.URL != tc.url || r.Type != tc.typ || r.Link != tc.link {
			t.Errorf("Resource(%q) = %+v; want %q, %q, %q", tc.segments, *r, tc.url, tc.typ, tc.link)
		}
	}
}

// The per-client caches must give exactly what computing afresh gives, for
// every change of verb, resource or date.
func TestSigningCaches(t *testing.T) {
	key := []byte("secret-key-for-tests")
	sigs, dates := &signatureCache{}, &dateCache{}
	docs := &Resource{Type: "docs", Link: "dbs/d/colls/c"}
	pkranges := &Resource{Type: "pkranges", Link: "dbs/d/colls/c"}
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 900_000_000, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		verb string
		r    *Resource
		at   time.Time
	}{
		{"GET", docs, t0},
		{"GET", docs, t0.Add(50 * time.Millisecond)},
		{"GET", docs, t0.Add(150 * time.Millisecond)}, // next second
		{"POST", docs, t0.Add(150 * time.Millisecond)},
		{"GET", pkranges, t0.Add(150 * time.Millisecond)},
		{"GET", docs, t0.Add(150 * time.Millisecond)},
	} {
		date := dates.format(tc.at)[0]
		if want := tc.at.UTC().Format(http.TimeFormat); date != want {
			t.Fatalf("date %q, want %q", date, want)
		}
		if got, want := sigs.authorization(key, tc.verb, tc.r, date)[0], signMasterKey(key, tc.verb, tc.r.Type, tc.r.Link, date); got != want {
			t.Fatalf("%s %+v at %s: cached %q, want %q", tc.verb, *tc.r, date, got, want)
		}
	}
}

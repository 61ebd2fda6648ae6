package account

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const testKey = "c2VjcmV0LWtleS1mb3ItdGVzdHM=" // base64, decodes to a test secret

func TestParseConnectionString(t *testing.T) {
	u, k, err := ParseConnectionString(" accountendpoint=https://myaccount.documents.azure.com:443/ ; AccountKey=" + testKey + "; ApplicationName=x;")
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "https://myaccount.documents.azure.com:443/" || string(k) != "secret-key-for-tests" {
		t.Fatalf("got %s and %q", u, k)
	}
	for _, bad := range []string{"", "AccountKey=" + testKey, "AccountEndpoint=https://a.documents.azure.com/", "garbage;" + testKey,
		"AccountEndpoint=https://a.documents.azure.com/;AccountKey=%%%" + testKey, "AccountEndpoint=https:///;AccountKey=" + testKey} {
		_, _, err := ParseConnectionString(bad)
		if err == nil {
			t.Errorf("ParseConnectionString(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("error quotes the key: %v", err)
		}
	}
}

func TestResourceOfPath(t *testing.T) {
	for path, want := range map[string][2]string{
		"/":                          {"", ""},
		"/dbs/d":                     {"dbs", "dbs/d"},
		"/dbs/d/colls/c":             {"colls", "dbs/d/colls/c"},
		"/dbs/d/colls/c/docs":        {"docs", "dbs/d/colls/c"},
		"/dbs/d/colls/c/pkranges":    {"pkranges", "dbs/d/colls/c"},
		"/dbs/d/colls/c/docs/item 1": {"docs", "dbs/d/colls/c/docs/item 1"},
	} {
		typ, link := resourceOf(path)
		if typ != want[0] || link != want[1] {
			t.Errorf("resourceOf(%q) = %q, %q; want %q, %q", path, typ, link, want[0], want[1])
		}
	}
}

func TestNameFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"myaccount.documents.azure.com":             "myaccount",
		"MyAccount.privatelink.documents.azure.com": "myaccount",
		"127.0.0.1": "127.0.0.1",
		"localhost": "localhost",
		"::1":       "::1",
	} {
		if got := NameFromHost(host); got != want {
			t.Errorf("NameFromHost(%q) = %q, want %q", host, got, want)
		}
	}
}

// Known clouds take the token resource and authority from KEDA's Azure
// environments; the scope is "<resource>/.default". Private clouds name both.
func TestCloudEndpoints(t *testing.T) {
	for _, tc := range []struct {
		settings            Settings
		resource, authority string
	}{
		{Settings{}, "https://cosmos.azure.com", "https://login.microsoftonline.com/"},
		{Settings{Cloud: "AzureUSGovernmentCloud"}, "https://cosmos.azure.com", "https://login.microsoftonline.us/"},
		{Settings{Cloud: "azurechinacloud"}, "https://cosmos.azure.com", "https://login.chinacloudapi.cn/"},
		{Settings{Cloud: "Private", CosmosDBResourceURL: "https://cosmos.example", ActiveDirectoryEndpoint: "https://login.example/"}, "https://cosmos.example", "https://login.example/"},
		{Settings{Cloud: "AzurePublicCloud", CosmosDBResourceURL: "https://ignored.example"}, "https://cosmos.azure.com", "https://login.microsoftonline.com/"},
	} {
		resource, authority, err := cloudEndpoints(tc.settings)
		if err != nil || resource != tc.resource || authority != tc.authority {
			t.Errorf("cloudEndpoints(%+v) = %q, %q, %v; want %q, %q", tc.settings, resource, authority, err, tc.resource, tc.authority)
		}
	}
}

// The per-client caches must give exactly what computing afresh gives, for
// every change of verb, path or date.
func TestTryPolicyCaches(t *testing.T) {
	key := []byte("secret-key-for-tests")
	sigs, dates := &signatureCache{}, &dateCache{}
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 900_000_000, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		verb, path string
		at         time.Time
	}{
		{"GET", "/dbs/d/colls/c/docs", t0},
		{"GET", "/dbs/d/colls/c/docs", t0.Add(50 * time.Millisecond)},
		{"GET", "/dbs/d/colls/c/docs", t0.Add(150 * time.Millisecond)}, // next second
		{"POST", "/dbs/d/colls/c/docs", t0.Add(150 * time.Millisecond)},
		{"GET", "/dbs/d/colls/c/pkranges", t0.Add(150 * time.Millisecond)},
		{"GET", "/dbs/d/colls/c/docs", t0.Add(150 * time.Millisecond)},
	} {
		date := dates.format(tc.at)[0]
		if want := tc.at.UTC().Format(http.TimeFormat); date != want {
			t.Fatalf("date %q, want %q", date, want)
		}
		typ, link := resourceOf(tc.path)
		if got, want := sigs.authorization(key, tc.verb, tc.path, date)[0], signMasterKey(key, tc.verb, typ, link, date); got != want {
			t.Fatalf("%s %s at %s: cached %q, want %q", tc.verb, tc.path, date, got, want)
		}
	}
}

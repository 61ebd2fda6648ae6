package cosmostest

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestResourceTypeAndLink(t *testing.T) {
	for _, tc := range []struct{ path, typ, link string }{
		{"/", "", ""},
		{"/dbs/d", "dbs", "dbs/d"},
		{"/dbs/d/colls/c", "colls", "dbs/d/colls/c"},
		{"/dbs/d/colls/c/docs", "docs", "dbs/d/colls/c"},
		{"/dbs/d/colls/c/docs/i", "docs", "dbs/d/colls/c/docs/i"},
		{"/dbs/d/colls/c/pkranges", "pkranges", "dbs/d/colls/c"},
		{"/dbs", "dbs", ""},
	} {
		typ, link := resourceTypeAndLink(tc.path)
		if typ != tc.typ || link != tc.link {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.path, typ, link, tc.typ, tc.link)
		}
	}
}

func TestStringToSignLowercasesAllButTheLink(t *testing.T) {
	// Verb, resource type and date are lowercased; the resource link keeps
	// its case (ids are case-sensitive).
	key := base64.StdEncoding.EncodeToString([]byte("test-key-for-cosmostest"))
	date := "Thu, 27 Apr 2017 00:51:12 GMT"
	got, err := MasterKeyAuthorization(key, "GET", "/dbs/ToDoList", date)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := url.QueryUnescape(got)
	if !strings.HasPrefix(dec, "type=master&ver=1.0&sig=") {
		t.Fatalf("header %q", dec)
	}
	want := stringToSign("GET", "dbs", "dbs/ToDoList", date)
	if want != "get\ndbs\ndbs/ToDoList\nthu, 27 apr 2017 00:51:12 gmt\n\n" {
		t.Fatalf("string to sign %q", want)
	}
}

func TestMasterKeyAuthorization(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("db")
	other := base64.StdEncoding.EncodeToString([]byte("not the key"))
	badSig, _ := MasterKeyAuthorization(other, "GET", "/dbs/db", time.Now().UTC().Format(http.TimeFormat))
	wrongPath, _ := MasterKeyAuthorization(s.Key(), "GET", "/dbs/other", time.Now().UTC().Format(http.TimeFormat))
	for _, tc := range []struct {
		name   string
		at     time.Time
		hdr    map[string]string
		status int
	}{
		{"good signature", time.Now(), nil, http.StatusOK},
		{"date within skew", time.Now().Add(-10 * time.Minute), nil, http.StatusOK},
		{"signed with another key", time.Now(), map[string]string{"Authorization": badSig}, http.StatusUnauthorized},
		{"signed for another resource", time.Now(), map[string]string{"Authorization": wrongPath}, http.StatusUnauthorized},
		{"missing date", time.Now(), map[string]string{"x-ms-date": ""}, http.StatusUnauthorized},
		{"skewed date", time.Now().Add(-20 * time.Minute), nil, http.StatusUnauthorized},
		{"future date", time.Now().Add(20 * time.Minute), nil, http.StatusUnauthorized},
		{"missing authorization", time.Now(), map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"garbage authorization", time.Now(), map[string]string{"Authorization": "Bearer xyz"}, http.StatusUnauthorized},
		{"aad without verifier", time.Now(), map[string]string{"Authorization": url.QueryEscape("type=aad&ver=1.0&sig=tok")}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := callAt(t, s, tc.at, http.MethodGet, "/dbs/db", tc.hdr, nil)
			wantStatus(t, resp, raw, tc.status)
			if tc.status == http.StatusUnauthorized {
				body := decode(t, raw)
				if body["code"] != "Unauthorized" || body["message"] == "" {
					t.Errorf("body %s", raw)
				}
				if strings.Contains(string(raw), s.Key()) {
					t.Error("error body echoes the key")
				}
			}
		})
	}
	if n := s.Handler.Count(kindDatabase); n != 10 {
		t.Errorf("logged %d database requests, want 10 (401s included)", n)
	}
	for _, r := range s.Handler.Requests() {
		if a := r.Header.Get("Authorization"); a != "" && !strings.HasSuffix(a, "sig=REDACTED") {
			t.Errorf("request log keeps the signature: %q", a)
		}
	}
}

func TestMaxClockSkewOption(t *testing.T) {
	s := newTestServer(t, withMaxClockSkew(time.Minute))
	s.Account.CreateDatabase("db")
	resp, raw := callAt(t, s, time.Now().Add(-2*time.Minute), http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, http.StatusUnauthorized)
}

func TestWithKeyAndAccountName(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	s := newTestServer(t, WithKey(key), WithAccountName("acct"))
	if s.Key() != key || s.Handler.cfg.accountName != "acct" {
		t.Fatal("options not applied")
	}
	if want := "AccountEndpoint=" + s.URL() + ";AccountKey=" + key + ";"; s.ConnectionString() != want {
		t.Errorf("connection string %q", s.ConnectionString())
	}
	if s.Account.Host() != "127.0.0.1" || !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/") {
		t.Errorf("host %q url %q", s.Account.Host(), s.URL())
	}
	resp, raw := call(t, s, http.MethodGet, "/", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if decode(t, raw)["id"] != "acct" {
		t.Errorf("account %s", raw)
	}
}

func TestAADTokensGoThroughVerifier(t *testing.T) {
	s := newTestServer(t, WithTokenVerifier(func(tok string) error {
		if tok != "good-token" {
			return errors.New("unknown token")
		}
		return nil
	}))
	s.Account.CreateDatabase("db")
	for _, tc := range []struct {
		token  string
		status int
	}{{"good-token", http.StatusOK}, {"bad-token", http.StatusUnauthorized}} {
		resp, raw := call(t, s, http.MethodGet, "/dbs/db", map[string]string{
			"Authorization": url.QueryEscape("type=aad&ver=1.0&sig=" + tc.token),
		}, nil)
		wantStatus(t, resp, raw, tc.status)
		if strings.Contains(string(raw), tc.token) {
			t.Errorf("response echoes the token: %s", raw)
		}
	}
	if got := s.Handler.Requests()[0].Header.Get("Authorization"); got != "type=aad&ver=1.0&sig=REDACTED" {
		t.Errorf("logged authorization %q", got)
	}
}

// The server remembers the last signature it accepted; reusing it for
// another verb, path or date, or after the date has drifted out of the
// allowed skew, must still fail.
func TestAcceptedSignatureIsNotReusable(t *testing.T) {
	s := newTestServer(t, withMaxClockSkew(time.Minute))
	s.Account.CreateDatabase("db")
	s.Account.CreateDatabase("other")
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := MasterKeyAuthorization(s.Key(), http.MethodGet, "/dbs/db", date)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path, date string) int {
		t.Helper()
		req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := 0; i < 2; i++ { // the second time from the memo
		if got := send(http.MethodGet, "/dbs/db", date); got != http.StatusOK {
			t.Fatalf("signed request: status %d", got)
		}
	}
	later := time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct{ method, path, date string }{
		{http.MethodGet, "/dbs/other", date},
		{http.MethodDelete, "/dbs/db", date},
		{http.MethodGet, "/dbs/db", later},
	} {
		if got := send(tc.method, tc.path, tc.date); got != http.StatusUnauthorized {
			t.Errorf("%s %s at %s with the signature of GET /dbs/db: status %d, want 401", tc.method, tc.path, tc.date, got)
		}
	}
	// A remembered signature whose date has left the allowed skew is not
	// taken from the memo: the full check decides (here: the date is fine).
	s.Handler.lastAuth.mu.Lock()
	s.Handler.lastAuth.at = s.Handler.lastAuth.at.Add(-2 * time.Minute)
	s.Handler.lastAuth.mu.Unlock()
	if got := send(http.MethodGet, "/dbs/db", date); got != http.StatusOK {
		t.Errorf("fresh date after a stale memo: status %d", got)
	}
}

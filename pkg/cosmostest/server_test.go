package cosmostest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestTLSServerTrustsOnlyItsOwnCertificate(t *testing.T) {
	s := NewTLSServer()
	defer s.Close()
	s.Account.CreateDatabase("db")
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") || s.CertPEM() == nil {
		t.Fatalf("url %q certificate %q", s.URL(), s.CertPEM())
	}
	resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Errorf("want HTTP/1.1 over TLS, got %s tls=%v", resp.Proto, resp.TLS != nil)
	}
	untrusting := &http.Client{Transport: &http.Transport{}}
	defer untrusting.CloseIdleConnections()
	if _, err := send(s, untrusting, context.Background(), "/dbs/db"); err == nil {
		t.Error("a client without the server's certificate connected")
	}
}

func TestPlainServerHasNoCertificate(t *testing.T) {
	s := newTestServer(t)
	if s.CertPEM() != nil || !strings.HasPrefix(s.URL(), "http://") {
		t.Errorf("url %q certificate %q", s.URL(), s.CertPEM())
	}
}

func TestCloseIsIdempotentAndRefusesLaterRequests(t *testing.T) {
	s := NewServer()
	s.Account.CreateDatabase("db")
	s.Close()
	s.Close()
	if _, err := send(s, &http.Client{}, context.Background(), "/dbs/db"); err == nil {
		t.Error("a closed server answered")
	}
}

func TestTwoServersAreTwoAccounts(t *testing.T) {
	a := newTestServer(t, WithAccountName("a"))
	b := newTestServer(t, WithAccountName("b"))
	a.Account.CreateDatabase("db")
	if a.URL() == b.URL() {
		t.Fatal("servers share a URL")
	}
	if a.Key() != EmulatorKey || b.Key() != EmulatorKey {
		t.Fatal("the default key is not the emulator's published key")
	}
	resp, raw := call(t, b, http.MethodGet, "/dbs/db", nil, nil)
	wantStatus(t, resp, raw, http.StatusNotFound)
	if a.Handler.Count("") != 0 || b.Handler.Count("") != 1 {
		t.Errorf("counts a=%d b=%d", a.Handler.Count(""), b.Handler.Count(""))
	}
}

func TestRequestLogLimitKeepsTheMostRecentRequests(t *testing.T) {
	s := NewServer(WithRequestLogLimit(3))
	defer s.Close()
	s.Account.CreateDatabase("db")
	for i := 0; i < 10; i++ {
		resp, raw := call(t, s, http.MethodGet, "/dbs/db", nil, nil)
		wantStatus(t, resp, raw, http.StatusOK)
	}
	resp, raw := call(t, s, http.MethodGet, "/dbs/missing", nil, nil)
	wantStatus(t, resp, raw, http.StatusNotFound)

	log := s.Handler.Requests()
	if len(log) < 3 || len(log) > 6 {
		t.Fatalf("log holds %d requests, want between 3 and 6 (limit 3)", len(log))
	}
	if last := log[len(log)-1]; last.Path != "/dbs/missing" || last.Status != http.StatusNotFound {
		t.Errorf("last logged request %s %d, want the most recent one (/dbs/missing 404)", last.Path, last.Status)
	}
	for i := 1; i < len(log); i++ {
		if log[i].At.Before(log[i-1].At) {
			t.Errorf("log out of order at %d", i)
		}
	}
}

// The service's own response headers are lower case (reply.set writes them
// as given).
func TestResponseHeadersLowerCase(t *testing.T) {
	for _, k := range []string{
		hdrActivityID, hdrRequestCharge, hdrSessionToken, hdrSubStatus, hdrRetryAfterMs, hdrContinuation,
		hdrItemCount, hdrETag, hdrContentPath, hdrAltContentPath, hdrLSN,
	} {
		if l := strings.ToLower(k); l != k {
			t.Errorf("response header %q is not lower case", k)
		}
	}
}

// Request headers are read by map lookup (headerValue), which finds only the
// canonical names net/http stores them under.
func TestRequestHeaderNamesCanonical(t *testing.T) {
	for _, k := range []string{
		hdrContentType, hdrContentLength, hdrClientActivityID, hdrClientContinuation, hdrMaxItemCount, hdrPartitionKey,
		hdrPartitionKeyRangeID, hdrIsQuery, hdrIsUpsert, hdrCrossPartition, hdrReadKeyType, hdrStartEPK, hdrEndEPK,
		hdrAIM, hdrDate, hdrPrefer, hdrOfferThroughput, hdrAutopilotSettings, hdrQueryPlanRequest, hdrWireFormat, hdrIfModifiedSince,
	} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("request header %q is not canonical (%q)", k, c)
		}
	}
}

// The chunked request log keeps arrival order across chunks and, with a
// limit, between limit and 2*limit of the newest entries.
func TestRequestLogChunks(t *testing.T) {
	for _, limit := range []int{0, 1, 5, 16, 100, 3000} {
		s := newHandler(newAccount("", false), config{requestLog: limit}, nil)
		const total = 5000
		for i := 0; i < total; i++ {
			kind := KindQuery
			if i%3 == 0 {
				kind = KindChangeFeed
			}
			s.record(Request{Kind: kind, RangeID: strconv.Itoa(i)}, http.StatusOK)
		}
		log := s.Requests()
		if limit == 0 && len(log) != total || limit > 0 && (len(log) < limit || len(log) > 2*limit) {
			t.Fatalf("limit %d: %d entries", limit, len(log))
		}
		changeFeed := 0
		for i, r := range log {
			if want := strconv.Itoa(total - len(log) + i); r.RangeID != want || r.Status != http.StatusOK {
				t.Fatalf("limit %d: entry %d is %q (status %d), want %q", limit, i, r.RangeID, r.Status, want)
			}
			if r.Kind == KindChangeFeed {
				changeFeed++
			}
		}
		if s.Count("") != len(log) || s.Count(KindChangeFeed) != changeFeed || s.Count(KindQuery) != len(log)-changeFeed {
			t.Errorf("limit %d: counts %d/%d/%d for %d entries, %d change feed", limit,
				s.Count(""), s.Count(KindChangeFeed), s.Count(KindQuery), len(log), changeFeed)
		}
		s.ResetRequests()
		if s.Count("") != 0 || len(s.Requests()) != 0 {
			t.Errorf("limit %d: log not empty after ResetRequests", limit)
		}
	}
}

package cosmostest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// pemClient is a client that trusts only the certificate in certPEM, as a
// process given it through SSL_CERT_FILE would.
func pemClient(t *testing.T, certPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatalf("CertPEM holds no certificate: %q", certPEM)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func parseCertPEM(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("CertPEM is not one PEM certificate: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func hasIP(ips []net.IP, want string) bool {
	return slices.ContainsFunc(ips, func(ip net.IP) bool { return ip.Equal(net.ParseIP(want)) })
}

// getAccount reads GET / with a master-key signature through client.
func getAccount(t *testing.T, s *Server, client *http.Client) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	auth, err := MasterKeyAuthorization(s.Key(), http.MethodGet, "/", date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET / through a client trusting CertPEM: status %d", resp.StatusCode)
	}
	return nil
}

func TestWithAddressListensThereAndTheCertificateNamesIt(t *testing.T) {
	// 127.0.0.2 is a loopback address on Linux but not one of the
	// certificate's default SANs (127.0.0.1, ::1, localhost).
	probe, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 is not usable here: %v", err)
	}
	_ = probe.Close()

	s := NewTLSServer(WithAddress("127.0.0.2:0"))
	defer s.Close()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "https" || u.Hostname() != "127.0.0.2" || u.Port() == "0" || u.Port() == "" || u.Path != "/" {
		t.Fatalf("URL %q: want https://127.0.0.2:<bound port>/", s.URL())
	}
	if s.Account.Host() != "127.0.0.2" {
		t.Errorf("Host %q", s.Account.Host())
	}
	cert := parseCertPEM(t, s.CertPEM())
	if !hasIP(cert.IPAddresses, "127.0.0.2") || !hasIP(cert.IPAddresses, "127.0.0.1") || !hasIP(cert.IPAddresses, "::1") {
		t.Errorf("certificate IP SANs %v: want 127.0.0.2 and the loopback ones", cert.IPAddresses)
	}
	if err := cert.VerifyHostname("127.0.0.2"); err != nil {
		t.Error(err)
	}
	// A client that trusts only the PEM connects by the listen address.
	if err := getAccount(t, s, pemClient(t, s.CertPEM())); err != nil {
		t.Fatalf("client trusting CertPEM: %v", err)
	}
	// So does the server's own client.
	resp, raw := call(t, s, http.MethodGet, "/", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if got := decode(t, raw)["writableLocations"].([]any)[0].(map[string]any)["databaseAccountEndpoint"]; got != s.URL() {
		t.Errorf("account endpoint %v, want %s", got, s.URL())
	}
	// A client trusting another server's certificate does not.
	other := NewTLSServer()
	defer other.Close()
	if err := getAccount(t, s, pemClient(t, other.CertPEM())); err == nil {
		t.Error("a client trusting another server's certificate connected")
	}
}

func TestWithAddressFixedPortAndPlainHTTP(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	_ = probe.Close()

	s := NewServer(WithAddress(addr))
	defer s.Close()
	if s.URL() != "http://"+addr+"/" {
		t.Errorf("URL %q, want http://%s/", s.URL(), addr)
	}
	if s.CertPEM() != nil {
		t.Error("a plain HTTP server has a certificate")
	}
	resp, raw := call(t, s, http.MethodGet, "/", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)

	// The port is taken now: a second server panics with the address.
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "listen on "+addr) {
			t.Errorf("second server on %s: panic %v", addr, r)
		}
	}()
	NewServer(WithAddress(addr)).Close()
}

func TestCertPEMIsACopyOfTheServedCertificate(t *testing.T) {
	s := NewTLSServer()
	defer s.Close()
	p := s.CertPEM()
	cert := parseCertPEM(t, p)
	p[0] = 'X'
	if !strings.HasPrefix(string(s.CertPEM()), "-----BEGIN CERTIFICATE-----") {
		t.Error("CertPEM returned the server's own slice")
	}
	if err := getAccount(t, s, pemClient(t, s.CertPEM())); err != nil {
		t.Fatalf("client trusting CertPEM: %v", err)
	}
	if !cert.NotAfter.After(cert.NotBefore) || !hasIP(cert.IPAddresses, "127.0.0.1") {
		t.Errorf("certificate %v %v", cert.NotBefore, cert.IPAddresses)
	}
}

func TestWildcardAddressServesLoopback(t *testing.T) {
	s := NewTLSServer(WithAddress("0.0.0.0:0"))
	defer s.Close()
	// Go binds 0.0.0.0 dual-stack where it can and then reports [::].
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsUnspecified() || u.Port() == "0" {
		t.Errorf("URL %q: want the bound wildcard address", s.URL())
	}
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+u.Port()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := pemClient(t, s.CertPEM()).Do(req)
	if err != nil {
		t.Fatalf("by 127.0.0.1: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned request: status %d", resp.StatusCode)
	}
}

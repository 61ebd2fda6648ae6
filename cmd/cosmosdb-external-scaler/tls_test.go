package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for 127.0.0.1 (server) or a
// client identity.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func clientTLS(t *testing.T, trust *testCA, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(trust.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// Mutual TLS: a client with a certificate from the client CA is served;
// one without a certificate, or not trusting the server, is not. A rotated
// server certificate is served to new connections without a restart.
func TestMutualTLS(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	dir := t.TempDir()
	certPEM, keyPEM := serverCA.issue(t, "cosmosdb-external-scaler", true)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "client-ca.crt": clientCA.pem})
	files := tlsFiles{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), clientCA: filepath.Join(dir, "client-ca.crt")}
	cfg, err := serverTLSConfig(files, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	kedaCert, kedaKey := clientCA.issue(t, "keda-operator", false)
	good := clientTLS(t, serverCA, kedaCert, kedaKey)
	f := newFixtureWith(t, credentials.NewTLS(cfg), credentials.NewTLS(good))
	ctx := testContext(t)
	if _, err := f.client.GetMetricSpec(ctx, ref(metadata())); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}

	for name, c := range map[string]*tls.Config{
		"no client certificate":     clientTLS(t, serverCA, nil, nil),
		"does not trust the server": clientTLS(t, clientCA, kedaCert, kedaKey),
	} {
		conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(credentials.NewTLS(c)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = pb.NewExternalScalerClient(conn).GetMetricSpec(ctx, ref(metadata()))
		_ = conn.Close()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable", name, err)
		}
	}

	// Rotate the server certificate in place.
	certPEM, keyPEM = serverCA.issue(t, "rotated", true)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	later := time.Now().Add(time.Minute)
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.Chtimes(filepath.Join(dir, name), later, later); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := tls.Dial("tcp", f.addr, good.Clone())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "rotated" {
		t.Fatalf("after rotation the server presents %q", cn)
	}
}

func TestTLSFlagCombinations(t *testing.T) {
	for _, files := range []tlsFiles{
		{cert: "tls.crt"},
		{key: "tls.key"},
		{clientCA: "ca.crt"},
		{cert: "missing.crt", key: "missing.key"},
	} {
		if _, err := serverTLSConfig(files, 0, slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("%+v accepted", files)
		}
	}
	if cfg, err := serverTLSConfig(tlsFiles{}, 0, nil); cfg != nil || err != nil {
		t.Errorf("no TLS flags: %v %v", cfg, err)
	}
}

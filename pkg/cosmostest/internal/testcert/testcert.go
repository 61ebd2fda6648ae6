// Package testcert makes the throw-away TLS certificates of the cosmostest
// servers: a self-signed one for the Cosmos DB endpoint and a small CA that
// mints one certificate per host name for the Entra ID test issuer.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// SelfSigned makes a throw-away certificate valid for a day for the
// loopback addresses, "localhost" and each of hosts: an IP address becomes an
// IP SAN, anything else a DNS SAN. An unspecified address ("0.0.0.0", "::")
// also adds the addresses of every local interface, so clients can connect
// by whichever of them routes to a wildcard listener. It returns the
// certificate's PEM too.
func SelfSigned(hosts ...string) (tls.Certificate, []byte, error) {
	return SelfSignedFor(24*time.Hour, hosts...)
}

// SelfSignedFor is SelfSigned with a certificate valid for validity, for a
// server that keeps its certificate across restarts (cosmoslag serve).
func SelfSignedFor(validity time.Duration, hosts ...string) (tls.Certificate, []byte, error) {
	ips, names := subjectAltNames(hosts)
	cert, key, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "cosmostest server"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           ips,
		DNSNames:              names,
	}, nil, nil, validity)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, pemOf(cert), nil
}

// issue signs tmpl, valid from an hour ago for validity, with a fresh key:
// by parent's key, or by its own (self-signed) when parent is nil.
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = randomSerial()
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(validity)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func pemOf(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// subjectAltNames returns the loopback addresses and "localhost" plus hosts
// (IPs and names, each once), and for unspecified addresses the addresses of
// the local interfaces.
func subjectAltNames(hosts []string) ([]net.IP, []string) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	names := []string{"localhost"}
	addIP := func(ip net.IP) {
		for _, have := range ips {
			if have.Equal(ip) {
				return
			}
		}
		ips = append(ips, ip)
	}
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if at := strings.IndexByte(h, '%'); at >= 0 && net.ParseIP(h[:at]) != nil {
			h = h[:at] // an IPv6 zone is not part of the address
		}
		ip := net.ParseIP(h)
		if ip == nil {
			if !slices.Contains(names, strings.ToLower(h)) {
				names = append(names, strings.ToLower(h))
			}
			continue
		}
		addIP(ip)
		if ip.IsUnspecified() {
			addrs, _ := net.InterfaceAddrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					addIP(n.IP)
				}
			}
		}
	}
	return ips, names
}

// CA is a throw-away certificate authority that mints server certificates
// on demand, one per host name (or IP address).
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu    sync.Mutex
	leafs map[string]*tls.Certificate
}

// NewCA makes a CA valid for a day.
func NewCA() (*CA, error) {
	cert, key, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "cosmostest throw-away CA"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pemOf(cert), leafs: map[string]*tls.Certificate{}}, nil
}

// Leaf returns a certificate for host; "" means the loopback addresses.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leafs[host]; ok {
		return c, nil
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "cosmostest " + host},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" && host != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	cert, key, err := issue(tmpl, ca.cert, ca.key, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{cert.Raw, ca.cert.Raw}, PrivateKey: key}
	ca.leafs[host] = c
	return c, nil
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// PEM is the CA certificate in PEM form (a copy), for SSL_CERT_FILE.
func (ca *CA) PEM() []byte { return append([]byte{}, ca.pem...) }

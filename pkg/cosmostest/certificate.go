package cosmostest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/testcert"
)

// SelfSignedCertificate makes a self-signed server certificate valid for
// validity, naming the loopback addresses, "localhost" and hosts (as
// WithAddress's certificate does), and returns it and its private key as
// PEM, for a process to keep on disk and serve again with WithCertificate.
func SelfSignedCertificate(validity time.Duration, hosts ...string) (certPEM, keyPEM []byte, err error) {
	cert, certPEM, err := testcert.SelfSignedFor(validity, hosts...)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// serverCertificate returns the certificate a TLS server presents: given
// (WithCertificate) or a fresh self-signed one for hosts; with the PEM of its
// leaf, which clients trust.
func serverCertificate(given *tls.Certificate, hosts ...string) (tls.Certificate, []byte, error) {
	if given == nil {
		cert, certPEM, err := testcert.SelfSigned(hosts...)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("cosmostest: generate certificate: %w", err)
		}
		return cert, certPEM, nil
	}
	if len(given.Certificate) == 0 {
		return tls.Certificate{}, nil, errors.New("cosmostest: WithCertificate: the certificate is empty")
	}
	leaf, err := x509.ParseCertificate(given.Certificate[0])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cosmostest: WithCertificate: %w", err)
	}
	return *given, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), nil
}

package serve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// keptCertificate loads the certificate and key serve keeps across
// restarts, or, when neither file exists yet, makes a self-signed one for
// addr's host and writes both (the key first, readable by its owner only).
// A kept certificate that has expired or does not name addr's host is
// refused: clients would reject it anyway, with a less helpful message.
func keptCertificate(certFile, keyFile, addr string) (cert tls.Certificate, created bool, err error) {
	certExists, err := fileExists(certFile)
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("--cert-file: %w", err)
	}
	keyExists, err := fileExists(keyFile)
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("--key-file: %w", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	switch {
	case certExists != keyExists:
		return tls.Certificate{}, false, fmt.Errorf("only one of --cert-file %s and --key-file %s exists: restore the other, or remove it to have both written anew", certFile, keyFile)
	case !certExists:
		certPEM, keyPEM, err := cosmostest.SelfSignedCertificate(keptCertificateValidity, host)
		if err != nil {
			return tls.Certificate{}, false, fmt.Errorf("generate a certificate: %w", err)
		}
		if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
			return tls.Certificate{}, false, fmt.Errorf("--key-file: %w", err)
		}
		if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
			return tls.Certificate{}, false, fmt.Errorf("--cert-file: %w", err)
		}
		created = true
	}
	cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("--cert-file/--key-file: %w", err)
	}
	leaf := cert.Leaf
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return tls.Certificate{}, false, fmt.Errorf("--cert-file %s is valid from %s to %s, not now: remove both files to have a new one written", certFile, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if host != "" && !net.ParseIP(host).IsUnspecified() {
		if err := leaf.VerifyHostname(host); err != nil {
			return tls.Certificate{}, false, fmt.Errorf("--cert-file %s does not name the --addr host: %w", certFile, err)
		}
	}
	return cert, created, nil
}

func fileExists(name string) (bool, error) {
	_, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

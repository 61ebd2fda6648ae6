package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// tlsFiles are the --tls-* flags.
type tlsFiles struct {
	cert, key string // server certificate and key (PEM)
	clientCA  string // CA bundle for client certificates; set: mutual TLS
}

// serverTLSConfig returns nil when TLS is off. The key pair is re-read
// when either file changes (checked at most every recheck), so a rotated
// certificate (cert-manager, a re-mounted Secret) is served without a
// restart. The client CA is read once.
func serverTLSConfig(f tlsFiles, recheck time.Duration, log *slog.Logger) (*tls.Config, error) {
	if f.cert == "" && f.key == "" {
		if f.clientCA != "" {
			return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	if f.cert == "" || f.key == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	kp := &keyPairReloader{certFile: f.cert, keyFile: f.key, recheck: recheck, log: log}
	if err := kp.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.getCertificate}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca: no PEM certificate in %s", f.clientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

type keyPairReloader struct {
	certFile, keyFile string
	recheck           time.Duration
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string // modification times and sizes of both files
	lastCheck time.Time
}

func (k *keyPairReloader) fileStamp() (string, error) {
	var stamp string
	for _, name := range []string{k.certFile, k.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return "", err
		}
		stamp += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return stamp, nil
}

func (k *keyPairReloader) load() error {
	stamp, err := k.fileStamp()
	if err != nil {
		return fmt.Errorf("TLS key pair: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("TLS key pair: %w", err)
	}
	k.cert, k.stamp, k.lastCheck = &cert, stamp, time.Now()
	return nil
}

func (k *keyPairReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Since(k.lastCheck) >= k.recheck {
		k.lastCheck = time.Now()
		if stamp, err := k.fileStamp(); err == nil && stamp != k.stamp {
			if err := k.load(); err != nil {
				// Keep serving the previous pair; a half-written update is
				// picked up at a later check.
				k.log.Warn("TLS key pair changed but could not be loaded; serving the previous one", "error", err)
			} else {
				k.log.Info("TLS key pair reloaded", "cert", k.certFile)
			}
		}
	}
	return k.cert, nil
}

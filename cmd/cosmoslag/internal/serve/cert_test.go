package serve

import (
	"bytes"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
)

// With --cert-file and --key-file, serve writes its certificate on first
// start and serves the same one after a restart on the same address: a
// client that trusted it keeps working. Without them a restart makes a new
// certificate, which that client refuses.
func TestServeKeepsItsCertificateAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	addr := freeLoopbackAddr(t)
	kept := []string{"--addr", addr, "--cert-file", certFile, "--key-file", keyFile}

	var client *http.Client // trusts what the first start wrote to --ca-file
	var endpoint string
	t.Run("first start writes the certificate and key", func(t *testing.T) {
		s := startServe(t, kept...)
		client, endpoint = s.Client, s.Endpoint
		assertTrusted(t, client, endpoint)
		info, err := os.Stat(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
		}
		if !strings.Contains(s.Stderr.String(), "wrote a new certificate to "+certFile) {
			t.Errorf("stderr does not say the certificate was written:\n%s", s.Stderr)
		}
	})
	written, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a restart serves the kept certificate", func(t *testing.T) {
		s := startServe(t, kept...)
		if s.Endpoint != endpoint {
			t.Fatalf("endpoint %s after the restart, want %s", s.Endpoint, endpoint)
		}
		client.CloseIdleConnections() // the old server's connections are gone
		assertTrusted(t, client, endpoint)
		if strings.Contains(s.Stderr.String(), "wrote a new certificate") {
			t.Errorf("the restart wrote a new certificate:\n%s", s.Stderr)
		}
	})
	if again, err := os.ReadFile(certFile); err != nil || !bytes.Equal(again, written) {
		t.Fatalf("the certificate file changed across the restart (%v)", err)
	}

	t.Run("a restart without them is not trusted", func(t *testing.T) {
		startServe(t, "--addr", addr)
		client.CloseIdleConnections()
		resp, err := client.Get(endpoint)
		if err == nil {
			resp.Body.Close()
			t.Fatal("the client trusted a new certificate")
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("got %v, want an unknown authority", err)
		}
	})
}

// Certificate files that cannot serve are refused before listening, with
// exit status 1 and a message naming the flag.
func TestServeCertificateFileErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	code, _, stderr := runCmd(t, "serve", "--cert-file", certFile)
	if code != cli.ExitBadArgs || !strings.Contains(stderr, "--cert-file and --key-file go together") {
		t.Errorf("--cert-file alone: %d %q", code, stderr)
	}
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "serve", "--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--cert-file", certFile, "--key-file", keyFile)
	if code != cli.ExitFailed || !strings.Contains(stderr, "only one of --cert-file") {
		t.Errorf("certificate without key: %d %q", code, stderr)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "serve", "--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--cert-file", certFile, "--key-file", keyFile)
	if code != cli.ExitFailed || !strings.Contains(stderr, "--cert-file/--key-file") {
		t.Errorf("unreadable pair: %d %q", code, stderr)
	}
}

func assertTrusted(t *testing.T, client *http.Client, endpoint string) {
	t.Helper()
	resp, err := client.Get(endpoint)
	if err != nil {
		t.Fatalf("GET %s: %v", endpoint, err)
	}
	resp.Body.Close()
}

// freeLoopbackAddr is a loopback address with a port free right now, so
// that two runs of serve can bind the same one.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

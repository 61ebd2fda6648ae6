package check

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// A server whose certificate this machine does not trust: check and tune
// fail at the first try, not after the client's retries, and the error
// names the fix (--ca-file, SSL_CERT_FILE).
func TestCertificateErrorsAreNotRetriedAndNameTheFix(t *testing.T) {
	// A TLS server with a certificate of its own CA, counting connections:
	// each try is one (the handshake fails before any request).
	var connections atomic.Int64
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			connections.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	const key = "c2VjcmV0LWtleS1mb3ItdGhlLXRscy10ZXN0"
	connection := "AccountEndpoint=" + srv.URL + "/;AccountKey=" + key + ";"
	so := clitest.WriteMinimalScaledObject(t, "")
	for _, args := range [][]string{
		{"check", "-f", so, "--set", "connection=" + connection},
		{"tune", "-f", so, "--set", "connection=" + connection, "--budget", "30s", "--window", "2s", "--interval", "1s"},
	} {
		for _, output := range []string{"table", "json"} {
			before := connections.Load()
			code, stdout, stderr := runCmd(t, append(args, "-o", output)...)
			if n := connections.Load() - before; n != 1 {
				t.Errorf("%s -o %s: %d connections (tries), want 1", args[0], output, n)
			}
			msg := stderr
			if output == "json" {
				var doc struct{ Error string }
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("%s -o json: %v\n%s", args[0], err, stdout)
				}
				msg = doc.Error
			}
			if code != cli.ExitFailed {
				t.Errorf("%s -o %s: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", args[0], output, code, stdout, stderr)
			}
			for _, re := range []string{`x509: certificate signed by unknown authority`, `not retried`, `--ca-file FILE`, `SSL_CERT_FILE=FILE`} {
				if !regexp.MustCompile(re).MatchString(msg) {
					t.Errorf("%s -o %s: the error does not match %s: %s", args[0], output, re, msg)
				}
			}
			if strings.Contains(msg, "context canceled") {
				t.Errorf("%s -o %s: the error names the cancelled context, not the cause: %s", args[0], output, msg)
			}
			clitest.AssertNoSecret(t, key, stdout, stderr)
		}
	}
}

// The fix works: with SSL_CERT_FILE naming the CA file serve writes,
// check reaches the server. (A child process: Go reads SSL_CERT_FILE once
// per process.)
func TestCheckTrustsTheCAFileThroughSSLCertFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	s := startServe(t)
	s.ControlJSON(t, "POST", "/control/containers", map[string]any{"database": "shop", "id": "orders", "partitionKeyPath": "/pk", "ranges": 1}, 201, nil)
	s.ControlJSON(t, "POST", "/control/containers", map[string]any{"database": "shop", "id": "leases", "partitionKeyPath": "/id"}, 201, nil)
	s.ControlJSON(t, "POST", "/control/processors", map[string]any{"name": "p", "database": "shop", "monitored": "orders", "leases": "leases", "startFromNow": true}, 201, nil)
	lines := clitest.ReadServeLines(t, s, 3)
	conn, _ := strings.CutPrefix(lines[0], "connection string ")
	env, _ := strings.CutPrefix(lines[2], "trust it ")
	env, _, _ = strings.Cut(env, " ")

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "COSMOSLAG_RUN_HELPER=check -f "+clitest.WriteMinimalScaledObject(t, "")+" -o json --set connection="+conn, env)
	out, err := cmd.Output()
	var r checkReport
	if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || len(r.Leases) != 1 {
		t.Errorf("check with %s: %v, %v\n%s", env, err, jerr, out)
	}
}

// runHelper runs the command args (space-separated) names, one of the
// tests' commands, for a test's child process (TestMain runs it when
// COSMOSLAG_RUN_HELPER is set).
func runHelper(args string) int {
	fields := strings.Fields(args)
	return commands[fields[0]](context.Background(), fields[1:], os.Stdout, os.Stderr)
}

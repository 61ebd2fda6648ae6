package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// serve prints, after its two ready lines, how to connect: a connection
// string with the emulator's well-known key, the CA file and the
// SSL_CERT_FILE line; a --key of one's own is never printed.
func TestServePrintsHowToConnect(t *testing.T) {
	s := startServe(t)
	lines := readServeLines(t, s, 3)
	if want := "connection string AccountEndpoint=" + s.endpoint + ";AccountKey=" + emulatorKey + ";"; lines[0] != want {
		t.Errorf("line 3 %q, want %q", lines[0], want)
	}
	if want := "ca file " + s.caFile; lines[1] != want {
		t.Errorf("line 4 %q, want %q", lines[1], want)
	}
	if want := "trust it SSL_CERT_FILE=" + s.caFile + " "; !strings.HasPrefix(lines[2], want) {
		t.Errorf("line 5 %q, want it to start %q", lines[2], want)
	}

	const key = "dGVzdC1vbmx5LWtleS10ZXN0LW9ubHkta2V5LXRlc3Qtb25seS1rZXk="
	s = startServe(t, "--key", key)
	lines = readServeLines(t, s, 1)
	if want := "connection string AccountEndpoint=" + s.endpoint + ";AccountKey=<the --key value>;"; lines[0] != want {
		t.Errorf("with --key: %q, want %q", lines[0], want)
	}
	if strings.Contains(s.stdout.String()+s.stderr.String(), key) {
		t.Error("the --key was printed")
	}
}

// readServeLines reads the n stdout lines after serve's two ready lines.
func readServeLines(t *testing.T, s *served, n int) []string {
	t.Helper()
	var lines []string
	for len(lines) < n {
		select {
		case line := <-s.stdout.Lines():
			lines = append(lines, line)
		case <-time.After(10 * time.Second):
			t.Fatalf("serve printed %q after its ready lines; want %d line(s)", lines, n)
		}
	}
	return lines
}

// A server whose certificate this machine does not trust: check and tune
// fail at the first try, not after the client's retries, and the error
// names the fix (--ca-file, SSL_CERT_FILE).
func TestCertificateErrorsAreNotRetriedAndNameTheFix(t *testing.T) {
	srv := cosmostest.NewTLSServer()
	t.Cleanup(srv.Close)
	so := writeMinimalScaledObject(t, "")
	for _, args := range [][]string{
		{"check", "-f", so, "--set", "connection=" + srv.ConnectionString()},
		{"tune", "-f", so, "--set", "connection=" + srv.ConnectionString(), "--budget", "30s", "--window", "2s", "--interval", "1s"},
	} {
		for _, output := range []string{"table", "json"} {
			code, stdout, stderr := runCmd(t, append(args, "-o", output)...)
			msg := stderr
			if output == "json" {
				var doc struct{ Error string }
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("%s -o json: %v\n%s", args[0], err, stdout)
				}
				msg = doc.Error
			}
			if code != exitFailed {
				t.Errorf("%s -o %s: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", args[0], output, code, stdout, stderr)
			}
			for _, re := range []string{`\(tries: 1 in \d+m?s\)`, `x509: certificate signed by unknown authority`, `not retried`, `--ca-file FILE`, `SSL_CERT_FILE=FILE`} {
				if !regexp.MustCompile(re).MatchString(msg) {
					t.Errorf("%s -o %s: the error does not match %s: %s", args[0], output, re, msg)
				}
			}
			if strings.Contains(msg, "context canceled") {
				t.Errorf("%s -o %s: the error names the cancelled context, not the cause: %s", args[0], output, msg)
			}
			assertNoSecret(t, srv.Key(), stdout, stderr)
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
	s.controlJSON(t, "POST", "/control/containers", map[string]any{"database": "shop", "id": "orders", "partitionKeyPath": "/pk", "ranges": 1}, 201, nil)
	s.controlJSON(t, "POST", "/control/containers", map[string]any{"database": "shop", "id": "leases", "partitionKeyPath": "/id"}, 201, nil)
	s.controlJSON(t, "POST", "/control/processors", map[string]any{"name": "p", "database": "shop", "monitored": "orders", "leases": "leases", "startFromNow": true}, 201, nil)
	lines := readServeLines(t, s, 3)
	conn, _ := strings.CutPrefix(lines[0], "connection string ")
	env, _ := strings.CutPrefix(lines[2], "trust it ")
	env, _, _ = strings.Cut(env, " ")

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "COSMOSLAG_RUN_HELPER=check -f "+writeMinimalScaledObject(t, "")+" -o json --set connection="+conn, env)
	out, err := cmd.Output()
	var r checkReport
	if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || len(r.Leases) != 1 {
		t.Errorf("check with %s: %v, %v\n%s", env, err, jerr, out)
	}
}

// runHelper runs cosmoslag with args (space-separated), for a test's
// child process (TestMain runs it when COSMOSLAG_RUN_HELPER is set).
func runHelper(args string) int {
	return run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr)
}

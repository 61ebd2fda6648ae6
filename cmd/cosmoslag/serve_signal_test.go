package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeHelperProcess is the serve process of TestServeStopsOnSignal.
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv("COSMOSLAG_SERVE_HELPER") != "1" {
		t.Skip("helper process for TestServeStopsOnSignal")
	}
	os.Args = []string{"cosmoslag", "serve", "--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0"}
	main() // exits
}

func TestServeStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$")
			cmd.Env = append(os.Environ(), "COSMOSLAG_SERVE_HELPER=1")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			lines := bufio.NewScanner(stdout)
			var control string
			for control == "" && lines.Scan() {
				if v, ok := strings.CutPrefix(lines.Text(), "control api "); ok {
					control = v
				}
			}
			if control == "" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("no control line; stderr:\n%s", stderr.String())
			}
			resp, err := http.Get(control + "/control/healthz")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() {
				_, _ = io.Copy(io.Discard, stdout) // until the process closes it; Wait closes the pipe
				errc <- cmd.Wait()
			}()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("exit after %v: %v; stderr:\n%s", sig, err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no exit after %v", sig)
			}
			if !strings.Contains(stderr.String(), "cosmoslag serve: stopped") || !strings.Contains(stderr.String(), "GET /control/healthz 200") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

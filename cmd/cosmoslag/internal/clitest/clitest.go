// Package clitest holds the helpers the tests of cosmoslag's commands
// share. It imports no command: each command's tests name the commands
// they run (Run's commands), so no command's code depends on another's.
package clitest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// Command is a command's entry point, as cmd/cosmoslag dispatches to it.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Run runs the command args[0] names, one of commands, in-process with
// the rest of args, and returns its exit code and output.
func Run(t *testing.T, commands map[string]Command, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if len(args) == 0 || commands[args[0]] == nil {
		t.Fatalf("clitest.Run: %q is not one of the commands this test runs", args)
	}
	var out, errOut bytes.Buffer
	code = commands[args[0]](context.Background(), args[1:], &out, &errOut)
	return code, out.String(), errOut.String()
}

func WriteFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// NewShopAccount is an embedded account with database shop: container
// orders over ranges physical ranges, container leases, and the lease
// writer of processor order-projector in format (no lease written yet).
func NewShopAccount(t *testing.T, ranges int, format cosmostest.LeaseFormat) (*cosmostest.Server, *cosmostest.Container, *leasetest.Writer) {
	t.Helper()
	srv := cosmostest.NewServer()
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("shop")
	data := db.CreateContainer("orders", "/pk", ranges)
	leases := db.CreateContainer("leases", "/id", 1)
	return srv, data, leasetest.NewWriter("order-projector", data, leases, format)
}

func AssertNoSecret(t *testing.T, secret string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, secret) {
			t.Errorf("a secret appears in the output:\n%s", o)
		}
	}
}

// WriteMinimalScaledObject writes a ScaledObject with one azure-cosmosdb
// trigger; extra is appended inside its flow-style metadata map.
func WriteMinimalScaledObject(t *testing.T, extra string) string {
	t.Helper()
	return WriteFile(t, t.TempDir(), "so.yaml", `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders}
spec:
  scaleTargetRef: {name: orders}
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: p`+extra+`}
`)
}

func OneJSONDocument(t *testing.T, stdout string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON document: %v\n%s", err, stdout)
	}
	if rest, _ := dec.Token(); rest != nil || dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", stdout)
	}
	return doc
}

const ScaledObjectYAML = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: order-projector
  namespace: shop
spec:
  scaleTargetRef:
    name: order-projector
  minReplicaCount: 0
  maxReplicaCount: 8
  triggers:
    - type: cpu
      metricType: Utilization
      metadata:
        value: "60"
    - type: azure-cosmosdb
      name: orders
      metadata:
        databaseId: shop
        containerId: orders
        leaseDatabaseId: shop
        leaseContainerId: leases
        processorName: order-projector
        changeFeedLagThreshold: "50"
      authenticationRef:
        name: cosmos-auth
`

const TriggerAuthYAML = `apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmos-auth
  namespace: shop
spec:
  secretTargetRef:
    - parameter: connection
      name: cosmos-secrets
      key: connectionString
`

// Served is a running "cosmoslag serve".
type Served struct {
	Key      string // the account key Cosmos signs with
	Endpoint string // https://127.0.0.1:port/
	Control  string // http://127.0.0.1:port
	CAFile   string
	Client   *http.Client // trusts only the CA file
	Stdout   *testhelp.SyncBuffer
	Stderr   *testhelp.SyncBuffer
}

// StartServe runs serve (the serve command's entry point) in-process on
// free loopback ports, waits for its two ready lines, and on cleanup
// cancels it and expects exit 0. Cosmos signs with key.
func StartServe(t *testing.T, serve Command, key string, extra ...string) *Served {
	t.Helper()
	s := &Served{Key: key, CAFile: filepath.Join(t.TempDir(), "ca.pem"), Stdout: testhelp.NewSyncBuffer(100), Stderr: testhelp.NewSyncBuffer(100)}
	args := append([]string{"--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--ca-file", s.CAFile}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- serve(ctx, args, s.Stdout, s.Stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != cli.ExitOK {
				t.Errorf("serve exited %d after cancel; stderr:\n%s", code, s.Stderr)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not stop after cancel")
		}
		if !strings.Contains(s.Stderr.String(), "cosmoslag serve: stopped") {
			t.Errorf("no stop message; stderr:\n%s", s.Stderr)
		}
	})
	timeout := time.After(10 * time.Second)
	for s.Endpoint == "" || s.Control == "" {
		select {
		case line := <-s.Stdout.Lines():
			if v, ok := strings.CutPrefix(line, "cosmos endpoint "); ok {
				s.Endpoint = v
			} else if v, ok := strings.CutPrefix(line, "control api "); ok {
				s.Control = v
			} else {
				t.Fatalf("unexpected stdout line %q", line)
			}
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d before it was ready; stderr:\n%s", code, s.Stderr)
		case <-timeout:
			t.Fatalf("serve not ready; stdout %q stderr %q", s.Stdout, s.Stderr)
		}
	}
	pemBytes, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatalf("the CA file is not there once serve is ready: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("the CA file holds no certificate: %q", pemBytes)
	}
	s.Client = &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	t.Cleanup(s.Client.CloseIdleConnections)
	return s
}

// ControlCall sends a control request; body is marshalled unless it is a string.
func (s *Served) ControlCall(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.Control+path, testhelp.Body(t, body))
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := send(t, http.DefaultTransport.RoundTrip, req)
	return resp.StatusCode, raw
}

// send sends req with do and reads the whole answer.
func send(t *testing.T, do func(*http.Request) (*http.Response, error), req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// ControlJSON sends a control request, expects status and decodes the reply into out.
func (s *Served) ControlJSON(t *testing.T, method, path string, body any, status int, out any) {
	t.Helper()
	code, raw := s.ControlCall(t, method, path, body)
	if code != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
}

// Cosmos sends a master-key signed Cosmos DB REST request through the
// client that trusts only the CA file.
func (s *Served) Cosmos(t *testing.T, method, path string, hdr map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.Endpoint, "/")+path, testhelp.Body(t, body))
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(s.Key, method, path, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return send(t, s.Client.Do, req)
}

// ReadServeLines reads the n stdout lines after serve's two ready lines.
func ReadServeLines(t *testing.T, s *Served, n int) []string {
	t.Helper()
	var lines []string
	for len(lines) < n {
		select {
		case line := <-s.Stdout.Lines():
			lines = append(lines, line)
		case <-time.After(10 * time.Second):
			t.Fatalf("serve printed %q after its ready lines; want %d line(s)", lines, n)
		}
	}
	return lines
}

const errorsScaledObjectYAML = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: order-projector, namespace: shop}
spec:
  scaleTargetRef: {name: order-projector}
  triggers:
    - type: azure-cosmosdb
      metadata:
        databaseId: shop
        containerId: orders
        leaseDatabaseId: shop
        leaseContainerId: leases
        processorName: order-projector
%METADATA%      authenticationRef: {name: cosmos-auth}
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata: {name: cosmos-auth, namespace: shop}
spec:
  secretTargetRef:
%PARAMS%---
apiVersion: v1
kind: Secret
metadata: {name: cosmos-secrets, namespace: shop}
stringData:
  connectionString: "%CONNECTION%"
  key: "%KEY%"
`

func ErrorsManifest(metadata, params, connection, key string) string {
	return strings.NewReplacer("%METADATA%", metadata, "%PARAMS%", params, "%CONNECTION%", connection, "%KEY%", key).Replace(errorsScaledObjectYAML)
}

// NewTestAccount is a test Cosmos DB account on the embedded server: a processor
// with one lease 7 changes behind and one whose range has split.
func NewTestAccount(t *testing.T) *cosmostest.Server {
	t.Helper()
	srv, data, proc := NewShopAccount(t, 2, "dotnet-v0")
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("0", 7); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("1", 4); err != nil {
		t.Fatal(err)
	}
	if err := proc.SetOwner("0", "host-a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := data.Split("1"); err != nil {
		t.Fatal(err)
	}
	return srv
}

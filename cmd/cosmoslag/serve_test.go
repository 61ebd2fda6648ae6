package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// served is a running "cosmoslag serve".
type served struct {
	endpoint string // https://127.0.0.1:port/
	control  string // http://127.0.0.1:port
	caFile   string
	client   *http.Client // trusts only the CA file
	stdout   *testhelp.SyncBuffer
	stderr   *testhelp.SyncBuffer
}

// startServe runs serve in-process on free loopback ports, waits for its
// two ready lines, and on cleanup cancels it and expects exit 0.
func startServe(t *testing.T, extra ...string) *served {
	t.Helper()
	s := &served{caFile: filepath.Join(t.TempDir(), "ca.pem"), stdout: testhelp.NewSyncBuffer(100), stderr: testhelp.NewSyncBuffer(100)}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--ca-file", s.caFile}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, s.stdout, s.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("serve exited %d after cancel; stderr:\n%s", code, s.stderr)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not stop after cancel")
		}
		if !strings.Contains(s.stderr.String(), "cosmoslag serve: stopped") {
			t.Errorf("no stop message; stderr:\n%s", s.stderr)
		}
	})
	timeout := time.After(10 * time.Second)
	for s.endpoint == "" || s.control == "" {
		select {
		case line := <-s.stdout.Lines():
			if v, ok := strings.CutPrefix(line, "cosmos endpoint "); ok {
				s.endpoint = v
			} else if v, ok := strings.CutPrefix(line, "control api "); ok {
				s.control = v
			} else {
				t.Fatalf("unexpected stdout line %q", line)
			}
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d before it was ready; stderr:\n%s", code, s.stderr)
		case <-timeout:
			t.Fatalf("serve not ready; stdout %q stderr %q", s.stdout, s.stderr)
		}
	}
	pemBytes, err := os.ReadFile(s.caFile)
	if err != nil {
		t.Fatalf("the CA file is not there once serve is ready: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("the CA file holds no certificate: %q", pemBytes)
	}
	s.client = &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	t.Cleanup(s.client.CloseIdleConnections)
	return s
}

// controlCall sends a control request; body is marshalled unless it is a string.
func (s *served) controlCall(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.control+path, testhelp.Body(t, body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// controlJSON sends a control request, expects status and decodes the reply into out.
func (s *served) controlJSON(t *testing.T, method, path string, body any, status int, out any) {
	t.Helper()
	code, raw := s.controlCall(t, method, path, body)
	if code != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
}

// cosmos sends a master-key signed Cosmos DB REST request through the
// client that trusts only the CA file.
func (s *served) cosmos(t *testing.T, method, path string, hdr map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(s.endpoint, "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(emulatorKey, method, path, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

func rangeIDs(rs []control.Range) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return ids
}

func pkHeader(pk string) string {
	b, _ := json.Marshal([]string{pk})
	return string(b)
}

func TestServeControlAPIAndCosmosEndpoint(t *testing.T) {
	s := startServe(t)
	if u, err := url.Parse(s.endpoint); err != nil || u.Scheme != "https" || u.Hostname() != "127.0.0.1" || u.Port() == "0" || u.Path != "/" {
		t.Fatalf("endpoint %q", s.endpoint)
	}
	if !strings.HasPrefix(s.control, "http://127.0.0.1:") || strings.HasSuffix(s.control, ":0") {
		t.Fatalf("control %q", s.control)
	}
	if fi, err := os.Stat(s.caFile); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("CA file: %v, mode %v", err, fi.Mode())
	}

	code, raw := s.controlCall(t, http.MethodGet, "/control/healthz", nil)
	if code != http.StatusOK || string(raw) != "ok" {
		t.Errorf("healthz: %d %q", code, raw)
	}

	// Containers: created, then returned unchanged.
	var items, again, leases control.Container
	s.controlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 4}, http.StatusCreated, &items)
	if items.Database != "e2e" || items.ID != "items" || items.RID == "" ||
		!slices.Equal(rangeIDs(items.Ranges), []string{"0", "1", "2", "3"}) ||
		items.Ranges[0].MinInclusive != "" || items.Ranges[3].MaxExclusive != "FF" {
		t.Fatalf("created container %+v", items)
	}
	s.controlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusOK, &again)
	if again.RID != items.RID || len(again.Ranges) != 4 {
		t.Errorf("second create changed the container: %+v", again)
	}
	code, raw = s.controlCall(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/other"})
	if code != http.StatusConflict || !strings.Contains(string(raw), "partitionKeyPath") {
		t.Errorf("create with another key path: %d %s", code, raw)
	}
	s.controlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, &leases)
	if len(leases.Ranges) != 1 {
		t.Errorf("default ranges: %+v", leases)
	}

	// The processor's first leases.
	var proc control.Leases
	s.controlJSON(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "orders-processor", "database": "e2e", "monitored": "items", "leases": "leases", "format": "dotnet-v0", "startFromNow": true,
	}, http.StatusCreated, &proc)
	if !strings.HasPrefix(proc.Prefix, "orders-processor127.0.0.1_") || !strings.HasSuffix(proc.Prefix, "_"+items.RID) || proc.Format != "dotnet-v0" || len(proc.Leases) != 4 {
		t.Fatalf("processor %+v", proc)
	}
	for i, l := range proc.Leases {
		if l.Token != fmt.Sprint(i) || l.ID != proc.Prefix+".."+l.Token {
			t.Errorf("lease %d: %+v", i, l)
		}
	}
	code, raw = s.controlCall(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "orders-processor", "database": "e2e", "monitored": "items", "leases": "leases",
	})
	if code != http.StatusConflict || !strings.Contains(string(raw), "already has leases") {
		t.Errorf("second processor create: %d %s", code, raw)
	}
	// An Azure Functions app without LeaseContainerPrefix: "name": "" (Functions v3's library format here).
	var functions control.Leases
	s.controlJSON(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "", "database": "e2e", "monitored": "items", "leases": "leases", "format": "dotnet-v2-library",
	}, http.StatusCreated, &functions)
	if !strings.HasPrefix(functions.Prefix, "127.0.0.1_") || !strings.HasSuffix(functions.Prefix, "_"+items.RID) || len(functions.Leases) != 4 {
		t.Errorf("processor without a prefix %+v", functions)
	}
	// The lease documents are readable over REST, as a processor reads them.
	lease0 := proc.Leases[0].ID
	resp, raw := s.cosmos(t, http.MethodGet, "/dbs/e2e/colls/leases/docs/"+lease0, map[string]string{"x-ms-documentdb-partitionkey": pkHeader(lease0)}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"LeaseToken":"0"`) {
		t.Errorf("read lease over REST: %d %s", resp.StatusCode, raw)
	}

	// A partition key for range 2, and an item written with it over REST.
	var pk control.PartitionKey
	s.controlJSON(t, http.MethodGet, "/control/partition-key?database=e2e&container=items&range=2", nil, http.StatusOK, &pk)
	if pk.PartitionKey == "" {
		t.Fatal("empty partition key")
	}
	resp, raw = s.cosmos(t, http.MethodPost, "/dbs/e2e/colls/items/docs",
		map[string]string{"x-ms-documentdb-partitionkey": pkHeader(pk.PartitionKey)},
		map[string]any{"id": "order-1", "pk": pk.PartitionKey})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create item: %d %s", resp.StatusCode, raw)
	}
	feed := func(rangeID string) (*http.Response, []byte) {
		return s.cosmos(t, http.MethodGet, "/dbs/e2e/colls/items/docs", map[string]string{
			"A-IM": "Incremental feed", "x-ms-documentdb-partitionkeyrangeid": rangeID,
		}, nil)
	}
	for _, r := range []string{"0", "1", "2", "3"} {
		resp, raw := feed(r)
		has := strings.Contains(string(raw), `"order-1"`)
		if (r == "2") != has {
			t.Errorf("change feed of range %s: %d, has the item %v: %s", r, resp.StatusCode, has, raw)
		}
	}

	// Split range 2: the ranges change and the parent answers 410/1002.
	var split control.Split
	s.controlJSON(t, http.MethodPost, "/control/split", map[string]any{"database": "e2e", "container": "items", "range": "2"}, http.StatusOK, &split)
	if split.Left.ID != "4" || split.Right.ID != "5" || split.Left.MaxExclusive != split.Right.MinInclusive ||
		split.Left.MinInclusive != items.Ranges[2].MinInclusive || split.Right.MaxExclusive != items.Ranges[2].MaxExclusive ||
		!slices.Equal(split.Left.Parents, []string{"2"}) {
		t.Errorf("split %+v of %+v", split, items.Ranges[2])
	}
	// The Go client speaks the same contract.
	client := control.NewClient(s.control, nil)
	after, err := client.Container(context.Background(), "e2e", "items")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rangeIDs(after.Ranges), []string{"0", "1", "3", "4", "5"}) || after.RID != items.RID {
		t.Errorf("ranges after the split: %+v", after)
	}
	resp, raw = feed("2")
	if resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
		t.Errorf("change feed of the split parent: %d substatus %q %s", resp.StatusCode, resp.Header.Get("x-ms-substatus"), raw)
	}
	code, raw = s.controlCall(t, http.MethodGet, "/control/partition-key?database=e2e&container=items&range=2", nil)
	if code != http.StatusNotFound || !strings.Contains(string(raw), "live: 0, 1, 4, 5, 3") {
		t.Errorf("partition key of the split parent: %d %s", code, raw)
	}
	if key, err := client.PartitionKey(context.Background(), "e2e", "items", "5"); err != nil || key == "" {
		t.Errorf("partition key of range 5: %q, %v", key, err)
	}
	var notLive *control.Error
	if _, err := client.PartitionKey(context.Background(), "e2e", "items", "2"); !errors.As(err, &notLive) || notLive.Status != http.StatusNotFound {
		t.Errorf("partition key of the split parent through the client: %v", err)
	}

	// One log line per control request, and never the key.
	logs := s.stderr.String()
	for _, want := range []string{
		" control GET /control/healthz 200 ",
		" control POST /control/containers 201 ",
		" control POST /control/containers 409 ",
		" control POST /control/processors 409 ",
		" control GET /control/partition-key 404 ",
		" control POST /control/split 200 ",
		" control GET /control/containers/e2e/items/ranges 200 ",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
	// stdout's connection string holds the emulator's key, which is
	// public (TestServePrintsHowToConnect); the log never does.
	if strings.Contains(logs, emulatorKey[:16]) {
		t.Error("the key was logged")
	}
}

func TestServeOtherKeyFormatAndLeaseDatabase(t *testing.T) {
	key := "dGVzdC1vbmx5LWtleS10ZXN0LW9ubHkta2V5LXRlc3Qtb25seS1rZXk="
	s := startServe(t, "--key", key, "--account", "e2eaccount")
	s.controlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "data", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, nil)
	s.controlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "meta", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, nil)
	var proc control.Leases
	s.controlJSON(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "p", "database": "data", "monitored": "items", "leaseDatabase": "meta", "leases": "leases",
		"format": "JAVA-V1", "accountHost": "cosmos.e2e.svc",
	}, http.StatusCreated, &proc)
	if proc.Format != "java-v1" || !strings.HasPrefix(proc.Prefix, "pcosmos.e2e.svc_") || len(proc.Leases) != 2 || !strings.Contains(proc.Leases[0].Token, "-") {
		t.Errorf("processor %+v", proc)
	}
	// The endpoint signs with --key: the emulator key is refused.
	resp, raw := s.cosmos(t, http.MethodGet, "/", nil, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("request signed with another key: %d %s", resp.StatusCode, raw)
	}
	if strings.Contains(s.stderr.String()+s.stdout.String(), key) {
		t.Error("the key was printed")
	}
}

func TestServeControlAPIBadInput(t *testing.T) {
	s := startServe(t)
	s.controlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, nil)
	s.controlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, nil)
	proc := func(kv ...string) map[string]any {
		m := map[string]any{"name": "p", "database": "e2e", "monitored": "items", "leases": "leases"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"POST", "/control/containers", map[string]any{}, 400, "database is required"},
		{"POST", "/control/containers", map[string]any{"database": "e2e"}, 400, "id is required"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "a/b", "partitionKeyPath": "/pk"}, 400, "id must not contain"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "c"}, 400, "partitionKeyPath is required"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "c", "partitionKeyPath": "pk"}, 400, "partitionKeyPath must be a path"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "c", "partitionKeyPath": "/pk", "ranges": 0}, 400, "ranges must be between 1 and 1024, got 0"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "c", "partitionKeyPath": "/pk", "ranges": "4"}, 400, "ranges must be an integer, not a JSON string"},
		{"POST", "/control/containers", map[string]any{"database": "e2e", "id": "c", "partitionKeyPath": "/pk", "rangez": 4}, 400, `unknown field "rangez"`},
		{"POST", "/control/containers", `{"database":`, 400, "not valid JSON"},
		{"POST", "/control/containers", `not json`, 400, "not valid JSON"},
		{"POST", "/control/containers", ``, 400, "request body is empty"},
		{"POST", "/control/containers", `[]`, 400, "must be a JSON object"},
		{"POST", "/control/containers", `{} {}`, 400, "exactly one JSON object"},
		{"POST", "/control/processors", proc("name", ""), 400, "name is required"},
		{"POST", "/control/processors", proc("leases", ""), 400, "leases is required"},
		{"POST", "/control/processors", proc("format", "DotNetV3"), 400, "format must be one of dotnet-v0, dotnet-v1, java-v0, java-v1, dotnet-v2-library"},
		{"POST", "/control/processors", proc("leases", "items"), 400, "leases must name another container"},
		{"POST", "/control/processors", proc("startFromNow", "yes"), 400, "startFromNow must be true or false"},
		{"POST", "/control/processors", proc("monitored", "nope"), 404, "container e2e/nope does not exist"},
		{"POST", "/control/processors", proc("leaseDatabase", "other"), 404, "container other/leases does not exist"},
		{"GET", "/control/partition-key?database=e2e&container=items", nil, 400, "query parameter range is required"},
		{"GET", "/control/partition-key?container=items&range=0", nil, 400, "query parameter database is required"},
		{"GET", "/control/partition-key?database=e2e&container=nope&range=0", nil, 404, "container e2e/nope does not exist"},
		{"GET", "/control/partition-key?database=e2e&container=items&range=9", nil, 404, `range "9" of e2e/items is not a live partition key range (live: 0, 1)`},
		{"POST", "/control/split", map[string]any{"database": "e2e", "container": "items"}, 400, "range is required"},
		{"POST", "/control/split", map[string]any{"database": "e2e", "container": "items", "range": 0}, 400, "range must be a string, not a JSON number"},
		{"POST", "/control/split", map[string]any{"database": "e2e", "container": "nope", "range": "0"}, 404, "container e2e/nope does not exist"},
		{"POST", "/control/split", map[string]any{"database": "e2e", "container": "items", "range": "7"}, 404, `range "7"`},
		{"GET", "/control/containers/e2e/nope/ranges", nil, 404, "container e2e/nope does not exist"},
		{"GET", "/control/containers", nil, 405, "GET is not allowed on /control/containers"},
		{"DELETE", "/control/healthz", nil, 405, "DELETE is not allowed"},
		{"GET", "/control/merge", nil, 405, "GET is not allowed on /control/merge"},
		{"GET", "/control/nope", nil, 404, "no control endpoint /control/nope"},
		{"POST", "/control/merge", map[string]any{"database": "e2e", "container": "items", "ranges": []string{"0"}}, 400, "ranges must name two ranges"},
		{"POST", "/control/merge", map[string]any{"database": "e2e", "container": "items", "ranges": []string{"0", "1"}}, 409, "partition merge is not enabled on this account"},
	} {
		code, raw := s.controlCall(t, tc.method, tc.path, tc.body)
		var e struct{ Error string }
		if err := json.Unmarshal(raw, &e); err != nil || code != tc.status || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s %v: %d %s; want %d with %q", tc.method, tc.path, tc.body, code, raw, tc.status, tc.want)
		}
	}
	// Nothing above created anything.
	var items control.Container
	s.controlJSON(t, http.MethodGet, "/control/containers/e2e/items/ranges", nil, http.StatusOK, &items)
	if len(items.Ranges) != 2 {
		t.Errorf("ranges %+v", items.Ranges)
	}
	code, raw := s.controlCall(t, http.MethodGet, "/control/containers/e2e/c/ranges", nil)
	if code != http.StatusNotFound {
		t.Errorf("a refused create left a container: %d %s", code, raw)
	}
}

// --enable-partition-merge gives an account with partition merge enabled:
// Cosmos DB requests must declare the PartitionMerge capability, and the
// control API merges ranges.
func TestServePartitionMerge(t *testing.T) {
	s := startServe(t, "--enable-partition-merge")
	var items control.Container
	s.controlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, &items)
	capable := map[string]string{"x-ms-cosmos-sdk-supportedcapabilities": "1"}
	resp, raw := s.cosmos(t, http.MethodGet, "/dbs/e2e", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "x-ms-cosmos-sdk-supportedcapabilities") {
		t.Errorf("a request without the capability: %d %s, want 400 naming the header", resp.StatusCode, raw)
	}
	if resp, raw := s.cosmos(t, http.MethodGet, "/dbs/e2e", capable, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a request declaring PartitionMerge: %d %s", resp.StatusCode, raw)
	}

	var merged control.Range
	s.controlJSON(t, http.MethodPost, "/control/merge", map[string]any{"database": "e2e", "container": "items", "ranges": []string{"0", "1"}}, http.StatusOK, &merged)
	if merged.ID != "2" || !slices.Equal(merged.Parents, []string{"0", "1"}) || merged.MinInclusive != "" || merged.MaxExclusive != "FF" {
		t.Errorf("merged %+v", merged)
	}
	feed := func(rangeID string) (*http.Response, []byte) {
		return s.cosmos(t, http.MethodGet, "/dbs/e2e/colls/items/docs", map[string]string{
			"A-IM": "Incremental feed", "x-ms-documentdb-partitionkeyrangeid": rangeID, "x-ms-cosmos-sdk-supportedcapabilities": "1",
		}, nil)
	}
	if resp, raw := feed("0"); resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
		t.Errorf("change feed of a merged-away range: %d substatus %q %s", resp.StatusCode, resp.Header.Get("x-ms-substatus"), raw)
	}
	if resp, raw := feed("2"); resp.StatusCode != http.StatusNotModified {
		t.Errorf("change feed of the merged range: %d %s", resp.StatusCode, raw)
	}
	// The Go client speaks the same contract.
	var notAdjacent *control.Error
	client := control.NewClient(s.control, nil)
	if _, err := client.Merge(context.Background(), "e2e", "items", "2", "2"); !errors.As(err, &notAdjacent) || notAdjacent.Status != http.StatusConflict {
		t.Errorf("merging a range with itself: %v", err)
	}
	if !strings.Contains(s.stderr.String(), " control POST /control/merge 200 ") {
		t.Errorf("stderr lacks the merge:\n%s", s.stderr)
	}
}

func TestServeFlags(t *testing.T) {
	code, stdout, stderr := runCmd(t, "serve", "--help")
	if code != exitOK || !strings.Contains(stdout, "Usage: cosmoslag serve") || !strings.Contains(stdout, "POST /control/split") ||
		!strings.Contains(stdout, "POST /control/merge") || !strings.Contains(stdout, "-enable-partition-merge") || stderr != "" {
		t.Errorf("--help: %d %q %q", code, stdout, stderr)
	}
	if strings.Contains(stdout, emulatorKey) {
		t.Error("--help prints the default key")
	}
	code, stdout, stderr = runCmd(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "serve ") {
		t.Errorf("cosmoslag --help does not list serve: %q %q", stdout, stderr)
	}
	secret := "bm90LWEtdmFsaWQta2V5!!"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "8081"}, `--addr must be host:port`},
		{[]string{"--control-addr", "127.0.0.1:99999"}, `--control-addr must be host:port with a port from 0 to 65535`},
		{[]string{"--addr", "127.0.0.1:9000", "--control-addr", "127.0.0.1:9000"}, "must differ"},
		{[]string{"--key", secret}, "--key must be a non-empty standard base64 string"},
		{[]string{"--account", ""}, "--account must not be empty"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"serve"}, tc.args...)...)
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, secret) {
			t.Errorf("%v: code %d stdout %q stderr %q; want 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestServeListenFailuresExit1(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", busy.Addr().String(), "--control-addr", "127.0.0.1:0"}, "Cosmos DB endpoint: cosmostest: listen on " + busy.Addr().String()},
		{[]string{"--addr", "127.0.0.1:0", "--control-addr", busy.Addr().String(), "--ca-file", ca}, "control API: listen tcp " + busy.Addr().String()},
		{[]string{"--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--ca-file", filepath.Join(ca, "no", "dir")}, "--ca-file: "},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"serve"}, tc.args...)...)
		if code != exitFailed || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: code %d stdout %q stderr %q; want 1 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if _, err := os.Stat(ca); !os.IsNotExist(err) {
		t.Errorf("the CA file was written although the control API could not listen: %v", err)
	}
}

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

// serve --help says what the scaler makes of leases written without
// startFromNow (no continuation: ignored) and what the leases field names.
func TestServeHelpOnLeasesWithoutContinuation(t *testing.T) {
	_, help, _ := runCmd(t, "help", "serve")
	flat := strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"leases is the lease container's id", "no continuation", "the scaler ignores such leases"} {
		if !strings.Contains(flat, want) {
			t.Errorf("serve --help does not say %q", want)
		}
	}
	if strings.Contains(flat, "the lag is every item") {
		t.Error("serve --help still says leases without startFromNow lag by every item")
	}
}

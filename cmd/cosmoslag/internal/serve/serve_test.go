package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

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
	if u, err := url.Parse(s.Endpoint); err != nil || u.Scheme != "https" || u.Hostname() != "127.0.0.1" || u.Port() == "0" || u.Path != "/" {
		t.Fatalf("endpoint %q", s.Endpoint)
	}
	if !strings.HasPrefix(s.Control, "http://127.0.0.1:") || strings.HasSuffix(s.Control, ":0") {
		t.Fatalf("control %q", s.Control)
	}
	if fi, err := os.Stat(s.CAFile); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("CA file: %v, mode %v", err, fi.Mode())
	}

	code, raw := s.ControlCall(t, http.MethodGet, "/control/healthz", nil)
	if code != http.StatusOK || string(raw) != "ok" {
		t.Errorf("healthz: %d %q", code, raw)
	}

	// Containers: created, then returned unchanged.
	var items, again, leases control.Container
	s.ControlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 4}, http.StatusCreated, &items)
	if items.Database != "e2e" || items.ID != "items" || items.RID == "" ||
		!slices.Equal(rangeIDs(items.Ranges), []string{"0", "1", "2", "3"}) ||
		items.Ranges[0].MinInclusive != "" || items.Ranges[3].MaxExclusive != "FF" {
		t.Fatalf("created container %+v", items)
	}
	s.ControlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusOK, &again)
	if again.RID != items.RID || len(again.Ranges) != 4 {
		t.Errorf("second create changed the container: %+v", again)
	}
	code, raw = s.ControlCall(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/other"})
	if code != http.StatusConflict || !strings.Contains(string(raw), "partitionKeyPath") {
		t.Errorf("create with another key path: %d %s", code, raw)
	}
	s.ControlJSON(t, http.MethodPost, "/control/containers",
		map[string]any{"database": "e2e", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, &leases)
	if len(leases.Ranges) != 1 {
		t.Errorf("default ranges: %+v", leases)
	}

	// The processor's first leases.
	var proc control.Leases
	s.ControlJSON(t, http.MethodPost, "/control/processors", map[string]any{
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
	code, raw = s.ControlCall(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "orders-processor", "database": "e2e", "monitored": "items", "leases": "leases",
	})
	if code != http.StatusConflict || !strings.Contains(string(raw), "already has leases") {
		t.Errorf("second processor create: %d %s", code, raw)
	}
	// An Azure Functions app without LeaseContainerPrefix: "name": "" (Functions v3's library format here).
	var functions control.Leases
	s.ControlJSON(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "", "database": "e2e", "monitored": "items", "leases": "leases", "format": "dotnet-v2-library",
	}, http.StatusCreated, &functions)
	if !strings.HasPrefix(functions.Prefix, "127.0.0.1_") || !strings.HasSuffix(functions.Prefix, "_"+items.RID) || len(functions.Leases) != 4 {
		t.Errorf("processor without a prefix %+v", functions)
	}
	// The lease documents are readable over REST, as a processor reads them.
	lease0 := proc.Leases[0].ID
	resp, raw := s.Cosmos(t, http.MethodGet, "/dbs/e2e/colls/leases/docs/"+lease0, map[string]string{"x-ms-documentdb-partitionkey": pkHeader(lease0)}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"LeaseToken":"0"`) {
		t.Errorf("read lease over REST: %d %s", resp.StatusCode, raw)
	}

	// A partition key for range 2, and an item written with it over REST.
	var pk control.PartitionKey
	s.ControlJSON(t, http.MethodGet, "/control/partition-key?database=e2e&container=items&range=2", nil, http.StatusOK, &pk)
	if pk.PartitionKey == "" {
		t.Fatal("empty partition key")
	}
	resp, raw = s.Cosmos(t, http.MethodPost, "/dbs/e2e/colls/items/docs",
		map[string]string{"x-ms-documentdb-partitionkey": pkHeader(pk.PartitionKey)},
		map[string]any{"id": "order-1", "pk": pk.PartitionKey})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create item: %d %s", resp.StatusCode, raw)
	}
	feed := func(rangeID string) (*http.Response, []byte) {
		return s.Cosmos(t, http.MethodGet, "/dbs/e2e/colls/items/docs", map[string]string{
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
	s.ControlJSON(t, http.MethodPost, "/control/split", map[string]any{"database": "e2e", "container": "items", "range": "2"}, http.StatusOK, &split)
	if split.Left.ID != "4" || split.Right.ID != "5" || split.Left.MaxExclusive != split.Right.MinInclusive ||
		split.Left.MinInclusive != items.Ranges[2].MinInclusive || split.Right.MaxExclusive != items.Ranges[2].MaxExclusive ||
		!slices.Equal(split.Left.Parents, []string{"2"}) {
		t.Errorf("split %+v of %+v", split, items.Ranges[2])
	}
	// The Go client speaks the same contract.
	client := control.NewClient(s.Control, nil)
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
	code, raw = s.ControlCall(t, http.MethodGet, "/control/partition-key?database=e2e&container=items&range=2", nil)
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
	logs := s.Stderr.String()
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
	if strings.Contains(logs, EmulatorKey[:16]) {
		t.Error("the key was logged")
	}
}

func TestServeOtherKeyFormatAndLeaseDatabase(t *testing.T) {
	key := "dGVzdC1vbmx5LWtleS10ZXN0LW9ubHkta2V5LXRlc3Qtb25seS1rZXk="
	s := startServe(t, "--key", key, "--account", "e2eaccount")
	s.ControlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "data", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, nil)
	s.ControlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "meta", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, nil)
	var proc control.Leases
	s.ControlJSON(t, http.MethodPost, "/control/processors", map[string]any{
		"name": "p", "database": "data", "monitored": "items", "leaseDatabase": "meta", "leases": "leases",
		"format": "JAVA-V1", "accountHost": "cosmos.e2e.svc",
	}, http.StatusCreated, &proc)
	if proc.Format != "java-v1" || !strings.HasPrefix(proc.Prefix, "pcosmos.e2e.svc_") || len(proc.Leases) != 2 || !strings.Contains(proc.Leases[0].Token, "-") {
		t.Errorf("processor %+v", proc)
	}
	// The endpoint signs with --key: the emulator key is refused.
	resp, raw := s.Cosmos(t, http.MethodGet, "/", nil, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("request signed with another key: %d %s", resp.StatusCode, raw)
	}
	if strings.Contains(s.Stderr.String()+s.Stdout.String(), key) {
		t.Error("the key was printed")
	}
}

func TestServeControlAPIBadInput(t *testing.T) {
	s := startServe(t)
	s.ControlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, nil)
	s.ControlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "leases", "partitionKeyPath": "/id"}, http.StatusCreated, nil)
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
		code, raw := s.ControlCall(t, tc.method, tc.path, tc.body)
		var e struct{ Error string }
		if err := json.Unmarshal(raw, &e); err != nil || code != tc.status || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s %v: %d %s; want %d with %q", tc.method, tc.path, tc.body, code, raw, tc.status, tc.want)
		}
	}
	// Nothing above created anything.
	var items control.Container
	s.ControlJSON(t, http.MethodGet, "/control/containers/e2e/items/ranges", nil, http.StatusOK, &items)
	if len(items.Ranges) != 2 {
		t.Errorf("ranges %+v", items.Ranges)
	}
	code, raw := s.ControlCall(t, http.MethodGet, "/control/containers/e2e/c/ranges", nil)
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
	s.ControlJSON(t, http.MethodPost, "/control/containers", map[string]any{"database": "e2e", "id": "items", "partitionKeyPath": "/pk", "ranges": 2}, http.StatusCreated, &items)
	capable := map[string]string{"x-ms-cosmos-sdk-supportedcapabilities": "1"}
	resp, raw := s.Cosmos(t, http.MethodGet, "/dbs/e2e", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "x-ms-cosmos-sdk-supportedcapabilities") {
		t.Errorf("a request without the capability: %d %s, want 400 naming the header", resp.StatusCode, raw)
	}
	if resp, raw := s.Cosmos(t, http.MethodGet, "/dbs/e2e", capable, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a request declaring PartitionMerge: %d %s", resp.StatusCode, raw)
	}

	var merged control.Range
	s.ControlJSON(t, http.MethodPost, "/control/merge", map[string]any{"database": "e2e", "container": "items", "ranges": []string{"0", "1"}}, http.StatusOK, &merged)
	if merged.ID != "2" || !slices.Equal(merged.Parents, []string{"0", "1"}) || merged.MinInclusive != "" || merged.MaxExclusive != "FF" {
		t.Errorf("merged %+v", merged)
	}
	feed := func(rangeID string) (*http.Response, []byte) {
		return s.Cosmos(t, http.MethodGet, "/dbs/e2e/colls/items/docs", map[string]string{
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
	client := control.NewClient(s.Control, nil)
	if _, err := client.Merge(context.Background(), "e2e", "items", "2", "2"); !errors.As(err, &notAdjacent) || notAdjacent.Status != http.StatusConflict {
		t.Errorf("merging a range with itself: %v", err)
	}
	if !strings.Contains(s.Stderr.String(), " control POST /control/merge 200 ") {
		t.Errorf("stderr lacks the merge:\n%s", s.Stderr)
	}
}

func TestServeFlags(t *testing.T) {
	code, stdout, stderr := runCmd(t, "serve", "--help")
	if code != cli.ExitOK || !strings.Contains(stdout, "Usage: cosmoslag serve") || !strings.Contains(stdout, "POST /control/split") ||
		!strings.Contains(stdout, "POST /control/merge") || !strings.Contains(stdout, "-enable-partition-merge") || stderr != "" {
		t.Errorf("--help: %d %q %q", code, stdout, stderr)
	}
	if strings.Contains(stdout, EmulatorKey) {
		t.Error("--help prints the default key")
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
		if code != cli.ExitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, secret) {
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
		if code != cli.ExitFailed || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: code %d stdout %q stderr %q; want 1 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if _, err := os.Stat(ca); !os.IsNotExist(err) {
		t.Errorf("the CA file was written although the control API could not listen: %v", err)
	}
}

// serve --help says what the scaler makes of leases written without
// startFromNow (no continuation: ignored) and what the leases field names.
func TestServeHelpOnLeasesWithoutContinuation(t *testing.T) {
	_, help, _ := runCmd(t, "serve", "--help")
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

//go:build linux

// Package sdk runs the official Cosmos DB SDKs against `cosmoslag serve`:
// the JavaScript SDK (@azure/cosmos, pinned in js/package-lock.json) and
// Debian's python3-azure-cosmos (the 3.x Python SDK). Each SDK's cases live
// in one file (js/suite.mjs, python/suite.py) as a table; every case is a
// subtest here, so the suites report in the test runner's summary.
package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

// accountKey is the Azure Cosmos DB Emulator's published key, the default
// of cosmoslag serve; it is public and only fit for test accounts.
const accountKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// pythonSDK is Debian's interpreter: python3-azure-cosmos installs into its
// dist-packages, which another python3 on PATH (pyenv) does not see.
const pythonSDK = "/usr/bin/python3"

// knownFailures are the cases that fail today, each with the reason; they
// are reported as skipped with that reason. A known failure that passes
// fails the test, so the list only ever shrinks.
var knownFailures = map[string]string{}

// Why the known failures fail (issue 15).
const (
	reasonHeaderCase  = "response header names are not lower case; the Python SDK looks them up in a plain dict"
	reasonContentPath = "no x-ms-content-path / x-ms-alt-content-path, so the SDK keeps no session token"
	reasonQueryPlan   = "query-plan requests are answered as ordinary queries"
	reasonCreate      = "no POST /dbs or POST /dbs/{db}/colls"
	reasonSQL         = "the SQL subset is only STARTSWITH(c.id, ...)"
)

func TestJavaScriptSDK(t *testing.T) {
	t.Parallel()
	node, dir := jsSuite(t)
	acc := startServers(t)
	runSuite(t, "js", acc, exec.Command(node, filepath.Join(dir, "suite.mjs")), "NODE_EXTRA_CA_CERTS="+acc.caFile)
}

var (
	jsInstall    sync.Once
	jsInstallOut []byte
	jsInstallErr error
)

// jsSuite returns node and the js directory with the packages of its
// lockfile installed: npm ci runs once when node_modules is missing, so a
// fresh clone needs no step before go test. It skips when node or npm is
// not installed, and offline outside CI when npm ci cannot reach the
// registry.
func jsSuite(t *testing.T) (node, dir string) {
	t.Helper()
	skipShort(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs the suite's dependencies)")
	}
	dir, err = filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@azure", "cosmos", "package.json")); err == nil {
		return node, dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed, and js/node_modules is missing")
	}
	jsInstall.Do(func() {
		// The lockfile pins every package; npm ci installs exactly that.
		install := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		install.Dir = dir
		jsInstallOut, jsInstallErr = install.CombinedOutput()
	})
	testhelp.NetworkStep(t, "npm ci in "+dir, "the npm registry", jsInstallErr, jsInstallOut)
	return node, dir
}

func TestPythonSDK(t *testing.T) {
	t.Parallel()
	skipShort(t)
	if _, err := os.Stat(pythonSDK); err != nil {
		t.Skipf("%s is not installed (.ci/run installs python3-azure-cosmos)", pythonSDK)
	}
	if err := exec.Command(pythonSDK, "-c", "import azure.cosmos.cosmos_client").Run(); err != nil {
		t.Skip("python3-azure-cosmos is not installed (.ci/run installs it with apt-get)")
	}
	acc := startServers(t)
	script, _ := filepath.Abs(filepath.Join("python", "suite.py"))
	runSuite(t, "python", acc, exec.Command(pythonSDK, script), "COSMOS_CA_FILE="+acc.caFile)
}

// skipShort skips an SDK suite under go test -short: the suites build and
// start cosmoslag serve and run node or python3 (about 4 minutes on 2 cores).
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the SDK suites run node and python3 against cosmoslag serve (minutes)")
	}
}

// caseResult is one line of a suite's output.
type caseResult struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Limit  string `json:"limit"`
	Done   bool   `json:"done"`
	SDK    string `json:"sdk"`
}

// runSuite runs one SDK's suite against the accounts and turns every case
// into a subtest named after it.
func runSuite(t *testing.T, sdk string, acc accounts, cmd *exec.Cmd, env ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env = append(os.Environ(),
		"COSMOS_ENDPOINT="+acc.plain.endpoint, "COSMOS_KEY="+accountKey, "COSMOS_CONTROL="+acc.plain.control,
		"COSMOS_MERGE_ENDPOINT="+acc.merge.endpoint, "COSMOS_MERGE_CONTROL="+acc.merge.control,
		"SDK_CASES="+os.Getenv("SDK_CASES"), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	results, done := parseResults(t, out)
	for _, r := range results {
		t.Run(r.Case, func(t *testing.T) {
			reason, known := knownFailures[sdk+"/"+r.Case]
			switch {
			case r.OK && known:
				t.Errorf("passes now: remove it from knownFailures (%s)", reason)
			case r.OK && r.Limit != "":
				t.Logf("asserts the SDK's own behaviour: %s", r.Limit)
			case !r.OK && known:
				t.Skipf("known failure (%s): %s", reason, r.Detail)
			case !r.OK:
				t.Error(r.Detail)
			}
		})
	}
	if err != nil || !done {
		t.Fatalf("the %s suite did not finish (%v); stderr:\n%s", sdk, err, tail(stderr.String(), 4000))
	}
}

func parseResults(t *testing.T, out []byte) (results []caseResult, done bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r caseResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("suite output is not a JSON line: %q", sc.Text())
			continue
		}
		switch {
		case r.Done:
			done = true
		case r.SDK != "":
			t.Logf("%s", sc.Text())
		default:
			results = append(results, r)
		}
	}
	return results, done
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// server is one `cosmoslag serve` process, shared by the suites of a test run.
type server struct {
	endpoint, control, caFile string
	// after holds the lines serve printed after its endpoints (how to
	// connect), as they come.
	after lockedBuffer
}

// accounts are the two servers the suites use: a plain account, and one
// with partition merge enabled (which refuses clients that do not declare
// merge support, so the plain cases cannot run there). caFile holds the
// certificate both serve.
type accounts struct {
	plain, merge *server
	caFile       string
}

var (
	serversOnce sync.Once
	shared      accounts
	serversErr  error
	stopMu      sync.Mutex
	stops       []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopMu.Lock()
	for _, stop := range stops {
		stop()
	}
	stopMu.Unlock()
	os.Exit(code)
}

// startServers starts both accounts once (go run caches the built command,
// so a warm start is a few seconds) on free loopback ports.
func startServers(t *testing.T) accounts {
	t.Helper()
	serversOnce.Do(func() { shared, serversErr = launchAccounts() })
	if serversErr != nil {
		t.Fatal(serversErr)
	}
	return shared
}

func launchAccounts() (accounts, error) {
	dir, err := os.MkdirTemp("", "cosmoslag-sdk-")
	if err != nil {
		return accounts{}, err
	}
	addStop(func() { _ = os.RemoveAll(dir) })
	// Both serve one certificate: the first writes it to the files, the
	// second reads them. (Two self-signed certificates with the same
	// subject in one trust file make TLS clients pick the wrong one.)
	caFile := filepath.Join(dir, "ca.pem")
	identity := []string{"--cert-file", filepath.Join(dir, "cert.pem"), "--key-file", filepath.Join(dir, "key.pem")}
	plain, err := launch(caFile, identity...)
	if err != nil {
		return accounts{}, err
	}
	merge, err := launch(filepath.Join(dir, "merge-ca.pem"), append(identity, "--enable-partition-merge")...)
	if err != nil {
		return accounts{}, err
	}
	return accounts{plain: plain, merge: merge, caFile: caFile}, nil
}

// addStop registers what TestMain runs at the end, last first.
func addStop(stop func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stops = append([]func(){stop}, stops...)
}

// launch starts `go run ./cmd/cosmoslag serve` with extra flags, writing
// its certificate to caFile.
func launch(caFile string, extra ...string) (*server, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is needed to run cosmoslag serve: %w", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	args := append([]string{"run", "./cmd/cosmoslag", "serve",
		"--addr", "127.0.0.1:0", "--control-addr", "127.0.0.1:0", "--ca-file", caFile}, extra...)
	cmd := exec.Command(goTool, args...)
	cmd.Dir = root
	// Its own process group, so that stopping it also stops the command
	// that go run started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	stopServer := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	addStop(stopServer)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	srv := &server{caFile: caFile}
	// A cold go run compiles the command first.
	deadline := time.After(5 * time.Minute)
	for srv.endpoint == "" || srv.control == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				return nil, fmt.Errorf("cosmoslag serve exited before listening:\n%s", stderr.String())
			}
			if v, found := strings.CutPrefix(line, "cosmos endpoint "); found {
				srv.endpoint = v
			}
			if v, found := strings.CutPrefix(line, "control api "); found {
				srv.control = v
			}
		case <-deadline:
			stopServer()
			return nil, fmt.Errorf("cosmoslag serve did not start within 5 minutes:\n%s", stderr.String())
		}
	}
	go func() {
		for line := range lines {
			_, _ = srv.after.Write([]byte(line + "\n"))
		}
	}()
	return srv, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

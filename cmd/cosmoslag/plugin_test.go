package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Installed as kubectl-cosmoslag on the PATH, cosmoslag runs as
// "kubectl cosmoslag check": kubectl hands it the arguments, and check
// loads the kubeconfig given with --kubeconfig (client-go's loading rules)
// and asks that API server for the ScaledObject, naming it when it is not
// there. The API server here answers every request 404.
func TestRunsAsAKubectlPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on the PATH")
	}
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + api.URL + "}}]\n" +
		"users: [{name: u, user: {token: test-token}}]\ncontexts: [{name: test, context: {cluster: c, user: u, namespace: shop}}]\ncurrent-context: test\n"
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-cosmoslag"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(kubectl, "cosmoslag", "check", "orders", "--kubeconfig", kubeconfig)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	exit, _ := err.(*exec.ExitError)
	if exit == nil || exit.ExitCode() != 2 || stderr.String() != "cosmoslag check: ScaledObject shop/orders not found\n" {
		t.Errorf("kubectl cosmoslag check orders: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "GET /apis/keda.sh/v1alpha1/namespaces/shop/scaledobjects/orders"; !strings.Contains(strings.Join(paths, "\n"), want) {
		t.Errorf("the API server was asked %q; want %q (the context's namespace)", paths, want)
	}
}

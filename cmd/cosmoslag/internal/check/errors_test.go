package check

import (
	"encoding/base64"
	"net"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// An account nobody answers for: check names the host, the operation, and
// how many tries were made within what time, never the key.
func TestCheckUnreachableAccountNamesHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close() // nothing listens there now: every try is refused
	key := base64.StdEncoding.EncodeToString([]byte("an account key nobody checks"))
	file := clitest.WriteFile(t, t.TempDir(), "so.yaml", clitest.ErrorsManifest("",
		"    - {parameter: connection, name: cosmos-secrets, key: connectionString}\n",
		"AccountEndpoint=https://"+host+"/;AccountKey="+key+";", key))

	code, stdout, stderr := runCmd(t, "check", "-f", file)
	if code == cli.ExitOK {
		t.Fatalf("check succeeded against a closed port:\n%s", stdout)
	}
	if want := "read database shop at " + host + ": "; !strings.Contains(stdout+stderr, want) {
		t.Errorf("the error does not say %q:\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
	}
	clitest.AssertNoSecret(t, key, stdout, stderr)
}

package serve

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

// serve prints, after its two ready lines, how to connect: a connection
// string with the emulator's well-known key, the CA file and the
// SSL_CERT_FILE line; a --key of one's own is never printed.
func TestServePrintsHowToConnect(t *testing.T) {
	s := startServe(t)
	lines := clitest.ReadServeLines(t, s, 3)
	if want := "connection string AccountEndpoint=" + s.Endpoint + ";AccountKey=" + EmulatorKey + ";"; lines[0] != want {
		t.Errorf("line 3 %q, want %q", lines[0], want)
	}
	if want := "ca file " + s.CAFile; lines[1] != want {
		t.Errorf("line 4 %q, want %q", lines[1], want)
	}
	if want := "trust it SSL_CERT_FILE=" + s.CAFile + " "; !strings.HasPrefix(lines[2], want) {
		t.Errorf("line 5 %q, want it to start %q", lines[2], want)
	}

	const key = "dGVzdC1vbmx5LWtleS10ZXN0LW9ubHkta2V5LXRlc3Qtb25seS1rZXk="
	s = startServe(t, "--key", key)
	lines = clitest.ReadServeLines(t, s, 1)
	if want := "connection string AccountEndpoint=" + s.Endpoint + ";AccountKey=<the --key value>;"; lines[0] != want {
		t.Errorf("with --key: %q, want %q", lines[0], want)
	}
	if strings.Contains(s.Stdout.String()+s.Stderr.String(), key) {
		t.Error("the --key was printed")
	}
}

package testhelp

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// offline matches what go, npm and their resolvers print when the network
// (a module proxy, a registry) cannot be reached.
var offline = regexp.MustCompile(`(?i)dial tcp|lookup \S+|no such host|network is unreachable|connection refused|i/o timeout|` +
	`temporary failure in name resolution|proxyconnect|GOPROXY=off|module lookup disabled|EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ETIMEDOUT|ENETUNREACH`)

// InCI reports whether the tests run in CI (CI=true), where every step that
// needs the network must run.
func InCI() bool { return strings.EqualFold(os.Getenv("CI"), "true") }

// NetworkStep ends a test whose step (what: "go install helm", "npm ci in
// tests/sdk/js") failed with err and output: outside CI, when the output
// shows the network could not be reached, it skips, saying what is missing
// and what needs it; in CI, or for any other failure, it fails with the
// output. It does nothing when err is nil.
func NetworkStep(t testing.TB, what, needs string, err error, output []byte) {
	t.Helper()
	if err == nil {
		return
	}
	if !InCI() && offline.Match(output) {
		t.Skipf("offline: %s needs %s, which cannot be reached (%v); run with the network, or go test -short to leave out such steps", what, needs, firstLine(output, err))
	}
	t.Fatalf("%s: %v\n%s", what, err, output)
}

// firstLine is the output's line that says the network failed, else err.
func firstLine(output []byte, err error) string {
	for line := range strings.SplitSeq(string(output), "\n") {
		if offline.MatchString(line) {
			return strings.TrimSpace(line)
		}
	}
	return err.Error()
}

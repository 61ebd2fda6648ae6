package check

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
)

func secretYAML(namespace, name, field, key, value string) string {
	if field == "data" {
		value = base64.StdEncoding.EncodeToString([]byte(value))
	}
	ns := ""
	if namespace != "" {
		ns = "\n  namespace: " + namespace
	}
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + ns + "\n" + field + ":\n  " + key + ": \"" + value + "\"\n"
}

// kind: Secret documents in the input files supply a TriggerAuthentication's
// secretTargetRef, looked up by Secret name and key in the ScaledObject's
// namespace, from data (base64) or stringData.
func TestCheckUsesSecretDocuments(t *testing.T) {
	srv := clitest.NewTestAccount(t)
	conn := srv.ConnectionString()
	for _, field := range []string{"data", "stringData"} {
		dir := t.TempDir()
		// A same-named Secret elsewhere and a same-keyed Secret of another
		// name must not be taken.
		decoys := secretYAML("other", "cosmos-secrets", field, "connectionString", "AccountEndpoint=https://decoy.invalid/;AccountKey=ZGVjb3k=;") + "---\n" +
			secretYAML("shop", "unrelated", field, "connectionString", "AccountEndpoint=https://decoy.invalid/;AccountKey=ZGVjb3k=;")
		so := clitest.WriteFile(t, dir, "all.yaml", clitest.ScaledObjectYAML+"---\n"+clitest.TriggerAuthYAML+"---\n"+decoys+"---\n"+secretYAML("shop", "cosmos-secrets", field, "connectionString", conn))
		code, stdout, stderr := runCmd(t, "check", "-f", so)
		if code != cli.ExitOK || !strings.Contains(stdout, "Total lag          7 over 2 lease(s)") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", field, code, stdout, stderr)
		}
		clitest.AssertNoSecret(t, srv.Key(), stdout, stderr)
	}
}

func TestCheckSecretDocumentErrors(t *testing.T) {
	const value = "AccountEndpoint=https://x.documents.azure.com/;AccountKey=c2VjcmV0c2VjcmV0;"
	otherNamespaceAuth := strings.Replace(clitest.TriggerAuthYAML, "namespace: shop", "namespace: payments", 1)
	for _, tc := range []struct {
		name, files string
		want        []string
	}{
		{"secret in another namespace", clitest.TriggerAuthYAML + "---\n" + secretYAML("payments", "cosmos-secrets", "stringData", "connectionString", value),
			[]string{`secret "cosmos-secrets" key "connectionString"`, "namespace payments", "KEDA reads it in namespace shop"}},
		{"secret without the key", clitest.TriggerAuthYAML + "---\n" + secretYAML("shop", "cosmos-secrets", "stringData", "connection", value),
			[]string{"Secret shop/cosmos-secrets", `no key "connectionString"`}},
		{"trigger authentication in another namespace", otherNamespaceAuth + "---\n" + secretYAML("shop", "cosmos-secrets", "stringData", "connectionString", value),
			[]string{`TriggerAuthentication "cosmos-auth"`, "namespace payments", "would not find it"}},
	} {
		so := clitest.WriteFile(t, t.TempDir(), "all.yaml", clitest.ScaledObjectYAML+"---\n"+tc.files)
		for _, format := range []string{"table", "json"} {
			code, stdout, stderr := runCmd(t, "check", "-f", so, "-o", format)
			if code != cli.ExitBadArgs {
				t.Errorf("%s (-o %s): exit %d, want 2; stderr %q", tc.name, format, code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s (-o %s): stderr does not say %q: %q", tc.name, format, w, stderr)
				}
			}
			clitest.AssertNoSecret(t, "c2VjcmV0c2VjcmV0", stdout, stderr)
		}
	}
}

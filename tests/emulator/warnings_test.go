package emulator

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/eventreason"
)

// scalerWarnings builds a scaler under generation generation of a
// ScaledObject named soName and returns the Warning events it recorded and
// the log lines written for that ScaledObject so far, both of which a user
// sees.
func scalerWarnings(t *testing.T, soName string, generation int64, metadata, auth, env map[string]string) (warnings []string, logs string) {
	t.Helper()
	config := scalerConfig(metadata, auth)
	if env != nil {
		config.ResolvedEnv = env
	}
	config.ScalableObjectName = soName
	recorder := events.NewFakeRecorder(100)
	config.Recorder = recorder
	config.ScaledObject = &kedav1alpha1.ScaledObject{ObjectMeta: metav1.ObjectMeta{Name: soName, Namespace: "default", Generation: generation}}
	newScaler(t, config)
	close(recorder.Events)
	for event := range recorder.Events {
		warnings = append(warnings, event)
	}
	for line := range strings.SplitSeq(scalerLogs.String(), "\n") {
		if strings.Contains(line, `"name"="`+soName+`"`) {
			logs += line + "\n"
		}
	}
	return warnings, logs
}

// A secret in plain trigger metadata still works (the documentation accepts
// it) but draws one warning in KEDA's "Warning:" style naming every such
// parameter, never a value, each time the scaler is built.
func TestWarnsAboutSecretsInTriggerMetadata(t *testing.T) {
	connection := "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + canaryKey
	metadata := baseMetadata("connection", connection, "clientSecret", canarySecret, "tenantId", testTenant, "clientId", "app")
	warnings, logs := scalerWarnings(t, "plain-secrets", 1, metadata, nil, nil)
	if len(warnings) != 1 {
		t.Fatalf("%d warning events, want one: %q", len(warnings), warnings)
	}
	for _, want := range []string{"Warning: secret parameter(s) connection, clientSecret", "TriggerAuthentication"} {
		if !strings.Contains(warnings[0], want) {
			t.Errorf("warning %q does not mention %q", warnings[0], want)
		}
	}
	if strings.Count(logs, "plain trigger metadata") != 1 {
		t.Errorf("want one log line about plain secrets, got:\n%s", logs)
	}
	for _, text := range []string{warnings[0], logs} {
		for _, secret := range []string{canaryKey, canarySecret, "CANARY"} {
			if strings.Contains(text, secret) {
				t.Fatalf("warning leaks a secret: %s", text)
			}
		}
	}
	if want := scalers.AzureCosmosDBWarnings(metadata); len(want) != 1 || !strings.HasSuffix(warnings[0], want[0]) {
		t.Errorf("AzureCosmosDBWarnings %q, the scaler's event %q", want, warnings[0])
	}

	// From a TriggerAuthentication or the environment: no warning.
	warnings, logs = scalerWarnings(t, "secrets-elsewhere", 1, baseMetadata("connectionFromEnv", "COSMOS"),
		map[string]string{"clientSecret": canarySecret, "tenantId": testTenant, "clientId": "app"},
		map[string]string{"COSMOS": connection})
	if len(warnings) != 0 || logs != "" {
		t.Fatalf("secrets kept out of the metadata drew warnings %q, logs:\n%s", warnings, logs)
	}
}

// misspeltMetadata holds two keys the trigger does not know, such as a
// misspelt threshold that leaves the default in force.
func misspeltMetadata() map[string]string {
	return baseMetadata("changeFeedLagTreshold", "5", "leaseConnectionString", "x")
}

// documentedMetadata sets every documented trigger metadata key, the
// ...FromEnv forms included, with the environment they name.
func documentedMetadata() (metadata, env map[string]string) {
	connection := canaryAuth()["connection"]
	return baseMetadata(
			"changeFeedLagThreshold", "50", "activationChangeFeedLagThreshold", "1",
			"connectionFromEnv", "C", "leaseConnectionFromEnv", "LC", "cosmosDBKeyFromEnv", "K", "leaseCosmosDBKeyFromEnv", "LK",
			"endpoint", "https://a.documents.azure.com/", "leaseEndpoint", "https://a.documents.azure.com/",
			"tenantId", testTenant, "clientId", "app", "cloud", "AzurePublicCloud",
			"cosmosDBResourceURL", "https://cosmos.azure.com", "activeDirectoryEndpoint", "https://login.microsoftonline.com/"),
		map[string]string{"C": connection, "LC": connection, "K": canaryKey, "LK": canaryKey}
}

// The scaler does not check for unknown keys itself: inside KEDA its typed
// config does, when KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS is enabled
// (TestKEDAReportsUnknownTriggerMetadata). AzureCosmosDBWarnings, what the
// commands print, lists the same keys in KEDA's wording; every documented
// key draws nothing.
func TestUnknownTriggerMetadataIsLeftToKEDA(t *testing.T) {
	warnings, _ := scalerWarnings(t, "misspelt", 1, misspeltMetadata(), canaryAuth(), nil)
	if len(warnings) != 0 {
		t.Fatalf("with KEDA's check off the scaler drew %q", warnings)
	}
	want := []string{
		"Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb",
		"Unmatched input property leaseConnectionString in scaler azure-cosmosdb",
	}
	if got := scalers.AzureCosmosDBWarnings(misspeltMetadata()); !slices.Equal(got, want) {
		t.Fatalf("AzureCosmosDBWarnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := scalers.AzureCosmosDBWarnings(misspeltMetadata(), "leaseConnectionString"); !slices.Equal(got, want[:1]) {
		t.Fatalf("AzureCosmosDBWarnings with an ignored key: %q", got)
	}
	documented, env := documentedMetadata()
	if got := scalers.AzureCosmosDBWarnings(documented); len(got) != 0 {
		t.Fatalf("documented keys drew %q", got)
	}
	if warnings, _ := scalerWarnings(t, "documented", 1, documented, map[string]string{"clientSecret": canarySecret}, env); len(warnings) != 0 {
		t.Fatalf("documented keys drew warnings: %q", warnings)
	}
}

// With KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS enabled, KEDA's typed config
// reports each unknown key once, as a Warning event, and no documented key:
// the scaler's keda: tags declare every parameter it reads. KEDA reads the
// switch once, when the process starts, so the test runs itself again in a
// process that has it on.
func TestKEDAReportsUnknownTriggerMetadata(t *testing.T) {
	if os.Getenv("KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS") != "enabled" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKEDAReportsUnknownTriggerMetadata$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS=enabled")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestKEDAReportsUnknownTriggerMetadata") {
			t.Fatalf("with KEDA's check enabled: %v\n%s", err, out)
		}
		return
	}
	warnings, _ := scalerWarnings(t, "misspelt", 1, misspeltMetadata(), canaryAuth(), nil)
	slices.Sort(warnings)
	want := []string{
		"Warning " + eventreason.KEDAScalersInfo + " Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb",
		"Warning " + eventreason.KEDAScalersInfo + " Unmatched input property leaseConnectionString in scaler azure-cosmosdb",
	}
	if !slices.Equal(warnings, want) {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	documented, env := documentedMetadata()
	if warnings, _ := scalerWarnings(t, "documented", 1, documented, map[string]string{"clientSecret": canarySecret}, env); len(warnings) != 0 {
		t.Fatalf("documented keys drew warnings: %q", warnings)
	}
}

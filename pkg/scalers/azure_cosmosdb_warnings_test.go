package scalers

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/eventreason"
)

// newCosmosDBScalerWarnings builds a scaler under a ScaledObject named
// soName and returns the Warning events it recorded and the log lines it
// wrote, both of which a user sees.
func newCosmosDBScalerWarnings(t *testing.T, soName string, metadata, auth, env map[string]string) (warnings []string, logs string) {
	t.Helper()
	config := cosmosDBScalerConfig(metadata, auth)
	if env != nil {
		config.ResolvedEnv = env
	}
	config.ScalableObjectName = soName
	recorder := events.NewFakeRecorder(100)
	config.Recorder = recorder
	config.ScaledObject = &kedav1alpha1.ScaledObject{}
	newCosmosDBTestScaler(t, config)
	close(recorder.Events)
	for event := range recorder.Events {
		warnings = append(warnings, event)
	}
	for line := range strings.SplitSeq(cosmosDBLogs.String(), "\n") {
		if strings.Contains(line, `"name"="`+soName+`"`) {
			logs += line + "\n"
		}
	}
	return warnings, logs
}

// A secret in plain trigger metadata still works (the documentation accepts
// it) but draws one warning naming every such parameter, never a value.
func TestCosmosDBWarnsOnceAboutSecretsInTriggerMetadata(t *testing.T) {
	connection := "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey
	metadata := cosmosDBBaseMetadata("connection", connection, "clientSecret", cosmosDBCanarySecret, "tenantId", cosmosDBTestTenant, "clientId", "app")
	warnings, logs := newCosmosDBScalerWarnings(t, "plain-secrets", metadata, nil, nil)
	if len(warnings) != 1 {
		t.Fatalf("%d warning events, want one: %q", len(warnings), warnings)
	}
	for _, want := range []string{"Warning", "connection", "clientSecret", "TriggerAuthentication"} {
		if !strings.Contains(warnings[0], want) {
			t.Errorf("warning %q does not mention %q", warnings[0], want)
		}
	}
	if strings.Count(logs, "plain trigger metadata") != 1 {
		t.Errorf("want one log line about plain secrets, got:\n%s", logs)
	}
	for _, text := range []string{warnings[0], logs} {
		for _, secret := range []string{cosmosDBCanaryKey, cosmosDBCanarySecret, "CANARY"} {
			if strings.Contains(text, secret) {
				t.Fatalf("warning leaks a secret: %s", text)
			}
		}
	}

	// From a TriggerAuthentication or the environment: no warning.
	warnings, logs = newCosmosDBScalerWarnings(t, "secrets-elsewhere", cosmosDBBaseMetadata("connectionFromEnv", "COSMOS"),
		map[string]string{"clientSecret": cosmosDBCanarySecret, "tenantId": cosmosDBTestTenant, "clientId": "app"},
		map[string]string{"COSMOS": connection})
	if len(warnings) != 0 || logs != "" {
		t.Fatalf("secrets kept out of the metadata drew warnings %q, logs:\n%s", warnings, logs)
	}
}

// A key the trigger does not know, such as a misspelt threshold that leaves
// the default in force, draws KEDA's unexpected-parameter warning; every
// documented key, the ...FromEnv forms included, draws none.
func TestCosmosDBWarnsAboutUnknownTriggerMetadata(t *testing.T) {
	auth := map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey}
	metadata := cosmosDBBaseMetadata("changeFeedLagTreshold", "5", "leaseConnectionString", "x")
	warnings, _ := newCosmosDBScalerWarnings(t, "misspelt", metadata, auth, nil)
	want := []string{
		"Warning " + eventreason.KEDAScalersInfo + " Unmatched input property changeFeedLagTreshold in scaler azure-cosmosdb",
		"Warning " + eventreason.KEDAScalersInfo + " Unmatched input property leaseConnectionString in scaler azure-cosmosdb",
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}

	documented := cosmosDBBaseMetadata(
		"changeFeedLagThreshold", "50", "activationChangeFeedLagThreshold", "1",
		"connectionFromEnv", "C", "leaseConnectionFromEnv", "LC", "cosmosDBKeyFromEnv", "K", "leaseCosmosDBKeyFromEnv", "LK",
		"endpoint", "https://a.documents.azure.com/", "leaseEndpoint", "https://a.documents.azure.com/",
		"tenantId", cosmosDBTestTenant, "clientId", "app", "cloud", "AzurePublicCloud",
		"cosmosDBResourceURL", "https://cosmos.azure.com", "activeDirectoryEndpoint", "https://login.microsoftonline.com/")
	env := map[string]string{"C": auth["connection"], "LC": auth["connection"], "K": cosmosDBCanaryKey, "LK": cosmosDBCanaryKey}
	warnings, _ = newCosmosDBScalerWarnings(t, "documented", documented, map[string]string{"clientSecret": cosmosDBCanarySecret}, env)
	if len(warnings) != 0 {
		t.Fatalf("documented keys drew warnings: %q", warnings)
	}
}

// With KEDA's own unexpected-parameter check switched on, KEDA reports the
// key; the scaler does not report it a second time.
func TestCosmosDBLeavesUnknownKeysToKEDAWhenItsCheckIsOn(t *testing.T) {
	t.Setenv("KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS", "enabled")
	auth := map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey}
	warnings, _ := newCosmosDBScalerWarnings(t, "keda-checks", cosmosDBBaseMetadata("changeFeedLagTreshold", "5"), auth, nil)
	for _, w := range warnings {
		// KEDA's own check read its switch when the process started, before
		// t.Setenv, so any such event here came from the scaler.
		if strings.Contains(w, "Unmatched input property") {
			t.Fatalf("the scaler repeated KEDA's check: %q", w)
		}
	}
}

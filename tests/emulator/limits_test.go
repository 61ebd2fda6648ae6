package emulator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// maxCosmosDBMessage is the most an error or a log line produced from one
// huge input may hold: a few KiB, whatever the input's size.
const maxCosmosDBMessage = 4 << 10

// hugeCosmosDBValue is a 1 MiB parameter value made of one letter.
func hugeCosmosDBValue(letter string) string { return strings.Repeat(letter, 1<<20) }

// Database, container and processor ids are limited to 255 characters,
// Cosmos DB's own limit; the error names the parameter and the limit and
// never quotes the value.
func TestIDLengthLimit(t *testing.T) {
	auth := map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + canaryKey}
	for _, param := range []string{"databaseId", "containerId", "leaseDatabaseId", "leaseContainerId", "processorName"} {
		t.Run(param, func(t *testing.T) {
			newScaler(t, scalerConfig(baseMetadata(param, strings.Repeat("x", 255)), auth))
			newScaler(t, scalerConfig(baseMetadata(param, strings.Repeat("é", 255)), auth))

			tooLong := strings.Repeat("x", 256)
			_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata(param, tooLong), auth))
			if err == nil {
				t.Fatal("a 256-character id was accepted")
			}
			assertMentions(t, err, param, "255")
			if strings.Contains(err.Error(), strings.Repeat("x", 64)) {
				t.Fatalf("the error quotes the value: %v", err)
			}
		})
	}
}

// A threshold that is not a 64-bit integer is refused with KEDA's own
// typed-config error, which names the parameter and quotes the value (what
// every KEDA scaler with an integer parameter says); one that parses but is
// out of range with the scaler's own rule.
func TestThresholdParseErrors(t *testing.T) {
	auth := canaryAuth()
	for _, param := range []string{"changeFeedLagThreshold", "activationChangeFeedLagThreshold"} {
		for _, value := range []string{"abc", "1.5", "9223372036854775808"} {
			t.Run(param+"="+value, func(t *testing.T) {
				_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata(param, value), auth))
				if err == nil {
					t.Fatal("accepted")
				}
				assertMentions(t, err, fmt.Sprintf("unable to set param %q value %q", param, value))
			})
		}
		t.Run(param+"=-1", func(t *testing.T) {
			_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata(param, "-1"), auth))
			if err == nil {
				t.Fatal("accepted")
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || strings.Contains(err.Error(), "unable to set param") {
				t.Fatalf("want only the scaler's range error, got:\n%v", err)
			}
			assertMentions(t, err, param, "got -1")
		})
	}
	// The activation threshold is only compared with a threshold that parsed.
	_, err := scalers.NewAzureCosmosDBScaler(scalerConfig(baseMetadata("changeFeedLagThreshold", "abc", "activationChangeFeedLagThreshold", "5"), auth))
	if err == nil || strings.Contains(err.Error(), "must be less than") {
		t.Fatalf("got %v, want only the changeFeedLagThreshold errors", err)
	}
}

// A 1 MiB value in any parameter makes, at most, an error and log lines of
// a few KiB: at construction, or at the first poll for values only the
// service can judge. (A threshold KEDA's typed config would quote whole is
// refused before it parses.)
func TestHugeInputsStayBounded(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	huge := hugeCosmosDBValue("a")
	connection := map[string]string{"connection": env.server.ConnectionString()}
	cases := []struct {
		name     string
		metadata map[string]string
		auth     map[string]string
	}{
		{"databaseId", env.metadata("databaseId", huge), connection},
		{"containerId", env.metadata("containerId", huge), connection},
		{"leaseDatabaseId", env.metadata("leaseDatabaseId", huge), connection},
		{"leaseContainerId", env.metadata("leaseContainerId", huge), connection},
		{"processorName", env.metadata("processorName", huge), connection},
		{"changeFeedLagThreshold", env.metadata("changeFeedLagThreshold", huge), connection},
		{"changeFeedLagThreshold digits", env.metadata("changeFeedLagThreshold", hugeCosmosDBValue("9")), connection},
		{"activationChangeFeedLagThreshold", env.metadata("activationChangeFeedLagThreshold", huge), connection},
		{"cloud", env.metadata("cloud", huge), connection},
		{"cosmosDBResourceURL", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://"+huge), servicePrincipal("endpoint", env.server.URL())},
		{"activeDirectoryEndpoint", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", "https://"+huge), servicePrincipal("endpoint", env.server.URL())},
		{"tenantId", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", tokenIssuer.URL()), servicePrincipal("endpoint", env.server.URL(), "tenantId", huge)},
		{"clientId", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", tokenIssuer.URL()), servicePrincipal("endpoint", env.server.URL(), "clientId", huge)},
		{"endpoint", env.metadata(), map[string]string{"endpoint": huge, "cosmosDBKey": env.server.Key()}},
		{"endpoint host", env.metadata(), map[string]string{"endpoint": "https://" + huge + ".documents.azure.com/", "cosmosDBKey": env.server.Key()}},
		{"endpoint scheme", env.metadata(), map[string]string{"endpoint": huge + "://a.documents.azure.com/", "cosmosDBKey": env.server.Key()}},
		{"endpoint path", env.metadata(), map[string]string{"endpoint": "https://a.documents.azure.com/" + huge, "cosmosDBKey": env.server.Key()}},
		{"leaseEndpoint", env.metadata(), map[string]string{"connection": env.server.ConnectionString(), "leaseEndpoint": "https://" + huge + ".documents.azure.com/", "leaseCosmosDBKey": env.server.Key()}},
		{"connection", env.metadata(), map[string]string{"connection": "AccountEndpoint=https://" + huge + ".documents.azure.com/;AccountKey=" + env.server.Key()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scalers.NewAzureCosmosDBScaler(scalerConfig(tc.metadata, tc.auth))
			if err == nil {
				t.Cleanup(func() { _ = s.Close(context.Background()) })
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _, err = s.GetMetricsAndActivity(ctx, "s0-metric")
			}
			if err == nil {
				t.Fatal("a 1 MiB value was accepted and polled without an error")
			}
			if n := len(err.Error()); n > maxCosmosDBMessage {
				t.Fatalf("error of %d bytes: %.300s…", n, err)
			}
		})
	}
	for _, line := range strings.Split(scalerLogs.String(), "\n") {
		if len(line) > maxCosmosDBMessage {
			t.Errorf("log line of %d bytes: %.300s…", len(line), line)
		}
	}
}

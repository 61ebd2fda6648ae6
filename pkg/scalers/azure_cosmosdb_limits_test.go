package scalers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
)

// maxCosmosDBMessage is the most an error or a log line produced from one
// huge input may hold: a few KiB, whatever the input's size.
const maxCosmosDBMessage = 4 << 10

// hugeCosmosDBValue is a 1 MiB parameter value made of one letter.
func hugeCosmosDBValue(letter string) string { return strings.Repeat(letter, 1<<20) }

// Database, container and processor ids are limited to 255 characters,
// Cosmos DB's own limit; the error names the parameter and the limit and
// never quotes the value.
func TestCosmosDBIDLengthLimit(t *testing.T) {
	auth := map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey}
	for _, param := range []string{"databaseId", "containerId", "leaseDatabaseId", "leaseContainerId", "processorName"} {
		t.Run(param, func(t *testing.T) {
			newCosmosDBTestScaler(t, cosmosDBScalerConfig(cosmosDBBaseMetadata(param, strings.Repeat("x", 255)), auth))
			newCosmosDBTestScaler(t, cosmosDBScalerConfig(cosmosDBBaseMetadata(param, strings.Repeat("é", 255)), auth))

			tooLong := strings.Repeat("x", 256)
			_, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(cosmosDBBaseMetadata(param, tooLong), auth))
			if err == nil {
				t.Fatal("a 256-character id was accepted")
			}
			assertCosmosDBError(t, err, param, "255")
			if strings.Contains(err.Error(), strings.Repeat("x", 64)) {
				t.Fatalf("the error quotes the value: %v", err)
			}
		})
	}
}

// A threshold that is not a whole number in range gets one error naming
// it, not a second "must be greater than 0, got 0" about the zero a failed
// parse leaves behind.
func TestCosmosDBThresholdParseErrorIsReportedOnce(t *testing.T) {
	auth := map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + cosmosDBCanaryKey}
	for _, param := range []string{"changeFeedLagThreshold", "activationChangeFeedLagThreshold"} {
		for _, value := range []string{"abc", "1.5", "9223372036854775808", "-1"} {
			t.Run(param+"="+value, func(t *testing.T) {
				_, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(cosmosDBBaseMetadata(param, value), auth))
				if err == nil {
					t.Fatal("accepted")
				}
				lines := strings.Split(err.Error(), "\n")
				if len(lines) != 1 {
					t.Fatalf("%d errors, want one:\n%v", len(lines), err)
				}
				assertCosmosDBError(t, err, param)
				if strings.Contains(err.Error(), "got 0") {
					t.Fatalf("the error reports the zero of a failed parse: %v", err)
				}
			})
		}
	}
	// The activation threshold is only compared once both parse.
	_, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(cosmosDBBaseMetadata("changeFeedLagThreshold", "abc", "activationChangeFeedLagThreshold", "5"), auth))
	if err == nil || strings.Contains(err.Error(), "must be less than") {
		t.Fatalf("got %v, want only the changeFeedLagThreshold error", err)
	}
}

// A 1 MiB value in any parameter makes, at most, an error and log lines of
// a few KiB: at construction, or at the first poll for values only the
// service can judge.
func TestCosmosDBHugeInputsStayBounded(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
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
		{"cosmosDBResourceURL", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://"+huge), cosmosDBServicePrincipal("endpoint", env.server.URL())},
		{"activeDirectoryEndpoint", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", "https://"+huge), cosmosDBServicePrincipal("endpoint", env.server.URL())},
		{"tenantId", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", cosmosDBTokenIssuer.URL()), cosmosDBServicePrincipal("endpoint", env.server.URL(), "tenantId", huge)},
		{"clientId", env.metadata("cloud", "Private", "cosmosDBResourceURL", "https://cosmos.private.example", "activeDirectoryEndpoint", cosmosDBTokenIssuer.URL()), cosmosDBServicePrincipal("endpoint", env.server.URL(), "clientId", huge)},
		{"endpoint", env.metadata(), map[string]string{"endpoint": huge, "cosmosDBKey": env.server.Key()}},
		{"endpoint host", env.metadata(), map[string]string{"endpoint": "https://" + huge + ".documents.azure.com/", "cosmosDBKey": env.server.Key()}},
		{"endpoint scheme", env.metadata(), map[string]string{"endpoint": huge + "://a.documents.azure.com/", "cosmosDBKey": env.server.Key()}},
		{"endpoint path", env.metadata(), map[string]string{"endpoint": "https://a.documents.azure.com/" + huge, "cosmosDBKey": env.server.Key()}},
		{"leaseEndpoint", env.metadata(), map[string]string{"connection": env.server.ConnectionString(), "leaseEndpoint": "https://" + huge + ".documents.azure.com/", "leaseCosmosDBKey": env.server.Key()}},
		{"connection", env.metadata(), map[string]string{"connection": "AccountEndpoint=https://" + huge + ".documents.azure.com/;AccountKey=" + env.server.Key()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewAzureCosmosDBScaler(cosmosDBScalerConfig(tc.metadata, tc.auth))
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
	for _, line := range strings.Split(cosmosDBLogs.String(), "\n") {
		if len(line) > maxCosmosDBMessage {
			t.Errorf("log line of %d bytes: %.300s…", len(line), line)
		}
	}
}

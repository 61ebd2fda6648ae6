package emulator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// Estimate returns each estimate exactly as the scaler makes it: the same
// metric and activity it returns to KEDA, the per-lease detail behind them
// and the requests the poll cost, also when the poll fails.
func TestInspectedScalerEstimatesAsTheScalerDoes(t *testing.T) {
	srv := cosmostest.NewServer()
	var closeOnce sync.Once
	closeServer := func() { closeOnce.Do(srv.Close) }
	t.Cleanup(closeServer)
	if _, err := leasetest.LaggingLeases(srv.Account, "orders-processor", 3, 40); err != nil {
		t.Fatal(err)
	}
	metadata := map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb", "leaseContainerId": "leases",
		"processorName": "orders-processor", "changeFeedLagThreshold": "25", "activationChangeFeedLagThreshold": "5",
	}
	config := scalerConfig(metadata, keyAuth(srv))
	config.TriggerIndex = 2
	s, err := scalers.NewInspectedAzureCosmosDBScaler(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	trigger := s.Trigger

	spec := s.GetMetricSpecForScaling(context.Background())[0]
	if want := "s2-" + trigger.MetricName; spec.External.Metric.Name != want {
		t.Errorf("metric name %q, trigger says %q", spec.External.Metric.Name, want)
	}
	if trigger.Threshold != metricTarget(spec) || trigger.Activation != 5 || trigger.Processor != "orders-processor" {
		t.Errorf("trigger %+v, metric target %d", trigger, metricTarget(spec))
	}

	// Nothing changes between the two polls: Estimate returns what the
	// scaler's own GetMetricsAndActivity returns.
	metric, active := poll(t, s)
	e, err := s.Estimate(context.Background())
	if err != nil || e.Metric != metric || e.Active != active || e.Threshold != 25 || e.Activation != 5 {
		t.Errorf("estimate %+v (%v); the scaler returned metric %d, active %v", e, err, metric, active)
	}
	var total int64
	for _, l := range e.Leases {
		total += l.Lag
	}
	if len(e.Leases) != 3 || total != e.TotalLag || e.TotalLag != 120 || e.ActivePartitions != 3 || e.Requests == 0 {
		t.Errorf("estimate of %d leases, lags summing to %d, summary %+v, %d requests", len(e.Leases), total, e.CosmosDBLagSummary, e.Requests)
	}

	closeServer() // both fail alike, and the failed estimate still says what it cost
	pollErr := pollError(t, s)
	e, err = s.Estimate(context.Background())
	// The same error but for the time its tries took.
	before := func(err error) string { head, _, _ := strings.Cut(fmt.Sprint(err), "(tries:"); return head }
	if err == nil || before(err) != before(pollErr) || e.Metric != 0 || e.Active || e.Requests != 4 {
		t.Errorf("after a failed poll (%v) estimate %+v, %v", pollErr, e, err)
	}
}

// The parameter list comes from the keda: tags, azure.CosmosDBAuth included:
// exactly the credential parameters are secret, and only the parameters
// the scaler reads from the scale target's environment have a FromEnv form.
func TestParametersComeFromTheTags(t *testing.T) {
	var names, secret, fromEnv, accountParams []string
	for _, p := range scalers.AzureCosmosDBParameters() {
		names = append(names, p.Name)
		if p.Secret {
			secret = append(secret, p.Name)
		}
		if p.FromEnv {
			fromEnv = append(fromEnv, p.Name)
		}
		if p.Account {
			accountParams = append(accountParams, p.Name)
		}
	}
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"secret", secret, []string{"connection", "leaseConnection", "cosmosDBKey", "leaseCosmosDBKey", "clientSecret"}},
		{"from the environment", fromEnv, []string{"connection", "leaseConnection", "cosmosDBKey", "leaseCosmosDBKey"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s parameters %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	for _, name := range []string{"databaseId", "processorName", "changeFeedLagThreshold", "endpoint", "tenantId", "cloud", "activeDirectoryEndpoint"} {
		if !slices.Contains(names, name) {
			t.Errorf("parameter %s missing from %v", name, names)
		}
	}
	if len(accountParams) != 12 || slices.Contains(accountParams, "databaseId") {
		t.Errorf("account parameters %v, want the 12 of azure.CosmosDBAuth", accountParams)
	}
}

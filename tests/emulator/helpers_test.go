package emulator

import (
	"context"
	"strings"
	"testing"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/metrics/pkg/apis/external_metrics"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

const (
	canaryKey    = "Q0FOQVJZLXNlY3JldC1rZXktZG8tbm90LWxlYWs=" // base64 of a recognisable secret
	canarySecret = "CANARY-client-secret-do-not-leak"
	testTenant   = "72f988bf-86f1-41af-91ab-2d7cd011db47"
)

// cosmosEnv is one embedded account with a monitored container, a lease
// container and a processor writing leases in one format.
type cosmosEnv struct {
	server    *cosmostest.Server
	monitored *cosmostest.Container
	leases    *cosmostest.Container
	processor *leasetest.Writer
	tokens    []string
}

func newCosmosEnv(t *testing.T, ranges int, format leaseFormat) *cosmosEnv {
	t.Helper()
	return newCosmosEnvInMode(t, ranges, format, latestVersion)
}

// newCosmosEnvInMode is newCosmosEnv for a processor reading in mode.
func newCosmosEnvInMode(t *testing.T, ranges int, format leaseFormat, mode changeFeedMode) *cosmosEnv {
	t.Helper()
	srv := cosmostest.NewServer()
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("appdb")
	env := &cosmosEnv{
		server:    srv,
		monitored: db.CreateContainer("orders", "/customerId", ranges),
		leases:    db.CreateContainer("leases", "/id", 1),
	}
	env.processor = leasetest.NewWriter("orders-processor", env.monitored, env.leases, format)
	env.processor.Mode = mode
	tokens, err := env.processor.CreateLeases(true)
	if err != nil {
		t.Fatalf("create leases: %v", err)
	}
	env.tokens = tokens
	return env
}

// metadata is the trigger metadata for env's processor.
func (e *cosmosEnv) metadata(extra ...string) map[string]string {
	return baseMetadata(extra...)
}

// writeToRange adds n pending items to a range's change feed.
func (e *cosmosEnv) writeToRange(t *testing.T, rangeID string, n int) {
	t.Helper()
	if err := e.monitored.WriteItemsToRange(rangeID, n); err != nil {
		t.Fatalf("write items to range %s: %v", rangeID, err)
	}
}

// baseMetadata is the trigger metadata of processor orders-processor on
// appdb/orders with its leases in appdb/leases; extra sets (or, with an
// empty value, removes) keys.
func baseMetadata(extra ...string) map[string]string {
	m := map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
		"leaseContainerId": "leases", "processorName": "orders-processor",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			delete(m, extra[i])
			continue
		}
		m[extra[i]] = extra[i+1]
	}
	return m
}

func scalerConfig(metadata, authParams map[string]string) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		TriggerMetadata:         metadata,
		AuthParams:              authParams,
		ResolvedEnv:             map[string]string{},
		GlobalHTTPTimeout:       5 * time.Second,
		TriggerType:             "azure-cosmosdb",
		ScalableObjectName:      "orders-processor",
		ScalableObjectNamespace: "default",
		ScalableObjectType:      "ScaledObject",
	}
}

func newScaler(t *testing.T, config *scalersconfig.ScalerConfig) scalers.Scaler {
	t.Helper()
	s, err := scalers.NewAzureCosmosDBScaler(config)
	if err != nil {
		t.Fatalf("NewAzureCosmosDBScaler: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// observedEstimate is one estimate of an observed scaler and the error its
// poll returned.
type observedEstimate struct {
	scalers.AzureCosmosDBEstimate
	Err error
}

// observedScaler is the scaler as KEDA polls it, keeping every estimate:
// its GetMetricsAndActivity returns what the scaler's own would, from
// Estimate.
type observedScaler struct {
	*scalers.AzureCosmosDBScaler
	seen *[]observedEstimate
}

func (o observedScaler) GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error) {
	e, err := o.Estimate(ctx)
	*o.seen = append(*o.seen, observedEstimate{e, err})
	if err != nil {
		return nil, false, err
	}
	return []external_metrics.ExternalMetricValue{{MetricName: metricName, Value: *resource.NewQuantity(e.Metric, resource.DecimalSI)}}, e.Active, nil
}

// newObservedScaler is newScaler that also returns every estimate it made.
func newObservedScaler(t *testing.T, config *scalersconfig.ScalerConfig) (scalers.Scaler, func() []observedEstimate) {
	t.Helper()
	var seen []observedEstimate
	s, err := scalers.NewInspectedAzureCosmosDBScaler(config)
	if err != nil {
		t.Fatalf("NewInspectedAzureCosmosDBScaler: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return observedScaler{s, &seen}, func() []observedEstimate { return seen }
}

// poll returns the metric value (as an integer) and activity of one poll.
func poll(t *testing.T, s scalers.Scaler) (int64, bool) {
	t.Helper()
	metrics, active, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
	if err != nil {
		t.Fatalf("GetMetricsAndActivity: %v", err)
	}
	if len(metrics) != 1 {
		t.Fatalf("got %d metrics, want 1", len(metrics))
	}
	return metrics[0].Value.Value(), active
}

// pollError returns the error of a poll that must fail, checking it yields no metric.
func pollError(t *testing.T, s scalers.Scaler) error {
	t.Helper()
	metrics, active, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
	if err == nil {
		t.Fatalf("poll succeeded with %v, want an error", metrics)
	}
	if len(metrics) != 0 || active {
		t.Fatalf("failed poll returned metrics %v active %v; want none", metrics, active)
	}
	return err
}

func keyAuth(srv *cosmostest.Server) map[string]string {
	return map[string]string{"connection": srv.ConnectionString()}
}

// canaryAuth is a connection string to an account nobody polls, whose key
// is the canary.
func canaryAuth() map[string]string {
	return map[string]string{"connection": "AccountEndpoint=https://a.documents.azure.com/;AccountKey=" + canaryKey}
}

func assertMentions(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func assertNoSecret(t *testing.T, text string, srv *cosmostest.Server) {
	t.Helper()
	if strings.Contains(text, srv.Key()) || strings.Contains(text, srv.ConnectionString()) {
		t.Fatalf("text leaks the account key: %s", text)
	}
}

func metricTarget(spec v2.MetricSpec) int64 {
	if spec.External.Target.AverageValue != nil {
		return spec.External.Target.AverageValue.Value()
	}
	return spec.External.Target.Value.Value()
}

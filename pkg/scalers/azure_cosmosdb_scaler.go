package scalers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/go-logr/logr"
	v2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/metrics/pkg/apis/external_metrics"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
	"github.com/kedacore/keda/v2/pkg/eventreason"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// azureCosmosDBScaler scales a change feed processor on the pending work its
// leases show, capped at the number of partitions that have any. It keeps
// what its polls need, no credential: an operator holds one per ScaledObject.
type azureCosmosDBScaler struct {
	metricType   v2.MetricTargetType
	metricName   string // without the trigger's index
	triggerIndex int
	threshold    int64
	activation   int64
	processor    string
	estimator    *azure.CosmosDBLagEstimator
	logger       logr.Logger
}

// azureCosmosDBMetadata is the trigger's configuration.
type azureCosmosDBMetadata struct {
	DatabaseID                       string `keda:"name=databaseId,                       order=triggerMetadata"`
	ContainerID                      string `keda:"name=containerId,                      order=triggerMetadata"`
	LeaseDatabaseID                  string `keda:"name=leaseDatabaseId,                  order=triggerMetadata"`
	LeaseContainerID                 string `keda:"name=leaseContainerId,                 order=triggerMetadata"`
	ProcessorName                    string `keda:"name=processorName,                    order=triggerMetadata"`
	ChangeFeedLagThreshold           int64  `keda:"name=changeFeedLagThreshold,           order=triggerMetadata, default=100"`
	ActivationChangeFeedLagThreshold int64  `keda:"name=activationChangeFeedLagThreshold, order=triggerMetadata, default=0"`

	azure.CosmosDBAuth `keda:"optional"`

	TriggerIndex int
}

// Validate implements scalersconfig.CustomValidator.
func (m *azureCosmosDBMetadata) Validate() error {
	var errs []error
	for _, id := range []struct{ name, value string }{
		{"databaseId", m.DatabaseID}, {"containerId", m.ContainerID},
		{"leaseDatabaseId", m.LeaseDatabaseID}, {"leaseContainerId", m.LeaseContainerID}, {"processorName", m.ProcessorName},
	} {
		if n := utf8.RuneCountInString(id.value); n > 255 {
			errs = append(errs, fmt.Errorf("%s must be at most 255 characters long (Cosmos DB's limit), got %d", id.name, n))
		}
		if strings.ContainsAny(id.value, `/\?#`) {
			errs = append(errs, fmt.Errorf(`%s must not contain '/', '\', '?' or '#'`, id.name))
		}
	}
	if m.ChangeFeedLagThreshold <= 0 {
		errs = append(errs, fmt.Errorf("changeFeedLagThreshold must be greater than 0, got %d", m.ChangeFeedLagThreshold))
	}
	if m.ActivationChangeFeedLagThreshold < 0 {
		errs = append(errs, fmt.Errorf("activationChangeFeedLagThreshold must be greater than or equal to 0, got %d", m.ActivationChangeFeedLagThreshold))
	} else if m.ChangeFeedLagThreshold > 0 && m.ActivationChangeFeedLagThreshold >= m.ChangeFeedLagThreshold {
		errs = append(errs, fmt.Errorf("activationChangeFeedLagThreshold (%d) must be less than changeFeedLagThreshold (%d)", m.ActivationChangeFeedLagThreshold, m.ChangeFeedLagThreshold))
	}
	if _, err := azure.EnvironmentFromName(m.Cloud); err != nil && m.Cloud != "" && !strings.EqualFold(m.Cloud, azure.PrivateCloud) {
		errs = append(errs, fmt.Errorf("cloud must be one of AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud, AzureGermanCloud, AzureStackCloud (with the KEDA operator's environment file, %s) or Private", azure.EnvironmentFilepathName))
	}
	return errors.Join(errs...)
}

// NewAzureCosmosDBScaler creates the scaler; every parameter and credential
// is checked here, so a bad ScaledObject fails before the first poll.
func NewAzureCosmosDBScaler(config *scalersconfig.ScalerConfig) (Scaler, error) {
	return newAzureCosmosDBScaler(config, kedautil.CreateHTTPClient(config.GlobalHTTPTimeout, false))
}

func newAzureCosmosDBScaler(config *scalersconfig.ScalerConfig, transport policy.Transporter) (*azureCosmosDBScaler, error) {
	metricType, err := GetMetricTargetType(config)
	if err != nil {
		return nil, fmt.Errorf("error getting scaler metric type: %w", err)
	}
	// KEDA's parse error quotes a bad number whole; a huge one stops here.
	for _, name := range []string{"changeFeedLagThreshold", "activationChangeFeedLagThreshold"} {
		if len(config.TriggerMetadata[name]) > 32 {
			return nil, fmt.Errorf("error parsing azure-cosmosdb metadata: %s must be a whole number of at most 19 digits", name)
		}
	}
	// processorName may be empty (a Functions app without LeaseContainerPrefix);
	// KEDA's typed config reads that as missing, so it parses a stand-in.
	parsed, emptyProcessor := config, false
	if name, ok := config.TriggerMetadata["processorName"]; ok && strings.TrimSpace(name) == "" {
		copied := *config
		copied.TriggerMetadata = maps.Clone(config.TriggerMetadata)
		copied.TriggerMetadata["processorName"] = "empty"
		parsed, emptyProcessor = &copied, true
	}
	meta := azureCosmosDBMetadata{}
	if err = parsed.TypedConfig(&meta); emptyProcessor {
		meta.ProcessorName = ""
	}
	if err != nil {
		return nil, fmt.Errorf("error parsing azure-cosmosdb metadata: %w", err)
	}
	meta.TriggerIndex, meta.PodIdentity = config.TriggerIndex, config.PodIdentity
	meta.AuthParams = config.AuthParams
	logger := InitializeLogger(config, "azure_cosmosdb_scaler")
	warnAboutPlainCosmosDBSecrets(config, logger)
	data, leases, err := azure.ResolveCosmosDBConnections(meta.CosmosDBAuth, transport, logger)
	if err != nil {
		return nil, fmt.Errorf("error parsing azure-cosmosdb metadata: %w", err)
	}
	dataClient := azure.NewCosmosDBClient(data, transport)
	leaseClient := dataClient // the leases are in the data account
	if leases != data {
		leaseClient = azure.NewCosmosDBClient(leases, transport)
	}
	return &azureCosmosDBScaler{
		metricType:   metricType,
		metricName:   kedautil.NormalizeString(fmt.Sprintf("azure-cosmosdb-%s-%s", meta.LeaseContainerID, meta.ProcessorName)),
		triggerIndex: meta.TriggerIndex,
		threshold:    meta.ChangeFeedLagThreshold,
		activation:   meta.ActivationChangeFeedLagThreshold,
		processor:    meta.ProcessorName,
		logger:       logger,
		estimator: azure.NewCosmosDBLagEstimator(dataClient, leaseClient, azure.CosmosDBContainers{
			Database: meta.DatabaseID, Container: meta.ContainerID,
			LeaseDatabase: meta.LeaseDatabaseID, LeaseContainer: meta.LeaseContainerID,
			Processor: meta.ProcessorName,
		}),
	}, nil
}

// plainCosmosDBSecrets lists the credentials given in plain trigger metadata.
func plainCosmosDBSecrets(triggerMetadata map[string]string) []string {
	var names []string
	for _, name := range []string{"connection", "leaseConnection", "cosmosDBKey", "leaseCosmosDBKey", "clientSecret"} {
		if triggerMetadata[name] != "" {
			names = append(names, name)
		}
	}
	return names
}

// warnAboutPlainCosmosDBSecrets logs and records a Warning event naming the
// parameters, never a value, whenever the scaler is built.
func warnAboutPlainCosmosDBSecrets(config *scalersconfig.ScalerConfig, logger logr.Logger) {
	names := plainCosmosDBSecrets(config.TriggerMetadata)
	if len(names) == 0 {
		return
	}
	message := fmt.Sprintf("Warning: secret parameter(s) %s of scaler %s given in plain trigger metadata; move them to a TriggerAuthentication", strings.Join(names, ", "), config.TriggerType)
	logger.Info(message)
	if config.Recorder != nil && config.ScaledObject != nil {
		config.Recorder.Eventf(config.ScaledObject, nil, corev1.EventTypeWarning, eventreason.KEDAScalersInfo, eventreason.KEDAScalersInfo, "%s", message)
	}
}

// GetMetricSpecForScaling returns one metric, named as in KEDA v2.21.0.
func (s *azureCosmosDBScaler) GetMetricSpecForScaling(context.Context) []v2.MetricSpec {
	externalMetric := &v2.ExternalMetricSource{
		Metric: v2.MetricIdentifier{Name: GenerateMetricNameWithIndex(s.triggerIndex, s.metricName)},
		Target: GetMetricTarget(s.metricType, s.threshold),
	}
	return []v2.MetricSpec{{External: externalMetric, Type: v2.ExternalMetricSourceType}}
}

// GetMetricsAndActivity returns the capped lag, active above the activation
// threshold; a failure is returned as it is, never a partial or cached value.
func (s *azureCosmosDBScaler) GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error) {
	start := time.Now()
	estimate, err := s.estimator.Estimate(ctx)
	if err != nil {
		return []external_metrics.ExternalMetricValue{}, false, fmt.Errorf("azure-cosmosdb: estimating change feed lag of processor %q: %w", s.processor, err)
	}
	summary := estimate.Summarize(s.threshold, s.activation)
	s.logEstimate(estimate, summary, time.Since(start))
	return []external_metrics.ExternalMetricValue{GenerateMetricInMili(metricName, float64(summary.Metric))}, summary.Active, nil
}

// logEstimate warns of stale parents, and at V(1) logs the poll's counts.
func (s *azureCosmosDBScaler) logEstimate(estimate azure.CosmosDBLagEstimate, summary azure.CosmosDBLagSummary, duration time.Duration) {
	processor := s.processor
	if estimate.StaleParents > 0 {
		s.logger.Info("Warning: partition split or merge: stale parent lease(s) remain after a lease refresh; waking the processor to replace them", "processor", processor, "staleParents", estimate.StaleParents)
	} else if estimate.SplitRetried {
		s.logger.Info("partition split or merge seen; estimate redone after a lease refresh", "processor", processor)
	}
	s.logger.V(1).Info("change feed lag estimated", "processor", processor, "leases", len(estimate.Leases),
		"totalLag", summary.TotalLag, "metric", summary.Metric, "duration", duration)
}

// Close releases the scaler's hold on its accounts' shared request bound and
// its shared credential; connections belong to KEDA's shared transport.
func (s *azureCosmosDBScaler) Close(context.Context) error {
	s.estimator.Close()
	return nil
}

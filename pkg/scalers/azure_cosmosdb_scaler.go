package scalers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-logr/logr"
	v2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/metrics/pkg/apis/external_metrics"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lag"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
	"github.com/kedacore/keda/v2/pkg/eventreason"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// azureCosmosDBScaler scales a change feed processor on the pending work
// its leases show, capped at the number of partitions that have any.
type azureCosmosDBScaler struct {
	metricType v2.MetricTargetType
	metadata   azureCosmosDBMetadata
	estimator  *lag.Estimator
	logger     logr.Logger

	// observe, when set, is called with every estimate: what the scaler
	// computed, for tools built on it to show. KEDA leaves it nil.
	observe func(lag.Result, lag.Summary, error)
}

// azureCosmosDBMetadata is the trigger's configuration. Credentials are read
// from the TriggerAuthentication first, then (for connection strings and
// keys) the scale target's environment via the ...FromEnv parameters, then
// plain trigger metadata, the order KEDA v2.21.0's azure-cosmosdb scaler
// used; account.Settings declares those parameters.
type azureCosmosDBMetadata struct {
	DatabaseID       string `keda:"name=databaseId,       order=triggerMetadata"`
	ContainerID      string `keda:"name=containerId,      order=triggerMetadata"`
	LeaseDatabaseID  string `keda:"name=leaseDatabaseId,  order=triggerMetadata"`
	LeaseContainerID string `keda:"name=leaseContainerId, order=triggerMetadata"`
	ProcessorName    string `keda:"name=processorName,    order=triggerMetadata"`

	// The thresholds are read as text and parsed once, by Validate: KEDA's
	// own int64 parse error quotes the whole value, and the zero it leaves
	// behind would be reported a second time as out of range.
	ChangeFeedLagThresholdText           string `keda:"name=changeFeedLagThreshold,           order=triggerMetadata, default=100"`
	ActivationChangeFeedLagThresholdText string `keda:"name=activationChangeFeedLagThreshold, order=triggerMetadata, default=0"`
	ChangeFeedLagThreshold               int64
	ActivationChangeFeedLagThreshold     int64

	account.Settings `keda:"optional"`

	TriggerIndex int
}

// maxIDLength is Cosmos DB's limit on database, container and item ids
// (a processor name is the prefix of its lease ids), in characters.
const maxIDLength = 255

// Validate implements scalersconfig.CustomValidator. It also parses the
// thresholds. No error quotes more than an account.Excerpt of a value.
func (m *azureCosmosDBMetadata) Validate() error {
	var errs []error
	for _, id := range []struct{ name, value string }{
		{"databaseId", m.DatabaseID}, {"containerId", m.ContainerID},
		{"leaseDatabaseId", m.LeaseDatabaseID}, {"leaseContainerId", m.LeaseContainerID},
		{"processorName", m.ProcessorName},
	} {
		if n := utf8.RuneCountInString(id.value); n > maxIDLength {
			errs = append(errs, fmt.Errorf("%s must be at most %d characters long (Cosmos DB's limit), got %d", id.name, maxIDLength, n))
		}
		// Cosmos DB ids cannot hold these; they would also break request paths.
		if strings.ContainsAny(id.value, `/\?#`) {
			errs = append(errs, fmt.Errorf("%s must not contain '/', '\\', '?' or '#'", id.name))
		}
	}
	var thresholdErr, activationErr error
	m.ChangeFeedLagThreshold, thresholdErr = parseLagThreshold("changeFeedLagThreshold", m.ChangeFeedLagThresholdText, 1)
	m.ActivationChangeFeedLagThreshold, activationErr = parseLagThreshold("activationChangeFeedLagThreshold", m.ActivationChangeFeedLagThresholdText, 0)
	errs = append(errs, thresholdErr, activationErr)
	if thresholdErr == nil && activationErr == nil && m.ActivationChangeFeedLagThreshold >= m.ChangeFeedLagThreshold {
		errs = append(errs, fmt.Errorf("activationChangeFeedLagThreshold (%d) must be less than changeFeedLagThreshold (%d)", m.ActivationChangeFeedLagThreshold, m.ChangeFeedLagThreshold))
	}
	if m.Cloud != "" && !strings.EqualFold(m.Cloud, "Private") {
		if _, err := account.CloudEnvironment(m.Cloud); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseLagThreshold parses a threshold that must be a whole number of at
// least minimum (0 or 1), with one error for any bad value.
func parseLagThreshold(name, text string, minimum int64) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s must be at most %d, got %q", name, int64(math.MaxInt64), account.Excerpt(text))
	case err != nil:
		return 0, fmt.Errorf("%s must be a whole number, got %q", name, account.Excerpt(text))
	case v < minimum && minimum == 1:
		return 0, fmt.Errorf("%s must be greater than 0, got %d", name, v)
	case v < minimum:
		return 0, fmt.Errorf("%s must be greater than or equal to %d, got %d", name, minimum, v)
	}
	return v, nil
}

// NewAzureCosmosDBScaler creates the azure-cosmosdb scaler. Configuration,
// endpoints, keys and credential combinations are all checked here, so a
// bad ScaledObject fails at creation rather than at the first poll.
func NewAzureCosmosDBScaler(config *scalersconfig.ScalerConfig) (Scaler, error) {
	metricType, err := GetMetricTargetType(config)
	if err != nil {
		return nil, fmt.Errorf("error getting scaler metric type: %w", err)
	}
	meta := azureCosmosDBMetadata{}
	if err := config.TypedConfig(&meta); err != nil {
		return nil, fmt.Errorf("error parsing azure-cosmosdb metadata: %w", err)
	}
	meta.TriggerIndex = config.TriggerIndex
	meta.PodIdentity = config.PodIdentity
	logger := InitializeLogger(config, "azure_cosmosdb_scaler")
	warnAboutTriggerMetadata(config, logger)
	httpClient := kedautil.CreateHTTPClient(config.GlobalHTTPTimeout, false)
	data, leases, err := account.Resolve(meta.Settings, account.CredentialOptions{Transport: httpClient})
	if err != nil {
		return nil, fmt.Errorf("error parsing azure-cosmosdb metadata: %w", err)
	}
	// Cosmos DB requests share KEDA's transport; GlobalHTTPTimeout bounds each try.
	clientOptions := rest.ClientOptions{Transport: rest.RoundTripperTransport{RoundTripper: httpClient.Transport}, TryTimeout: httpClient.Timeout}
	return &azureCosmosDBScaler{
		metricType: metricType,
		metadata:   meta,
		logger:     logger,
		estimator: lag.NewEstimator(lag.Config{
			Data:           rest.NewClient(data, clientOptions),
			Lease:          rest.NewClient(leases, clientOptions),
			Database:       meta.DatabaseID,
			Container:      meta.ContainerID,
			LeaseDatabase:  meta.LeaseDatabaseID,
			LeaseContainer: meta.LeaseContainerID,
			Processor:      meta.ProcessorName,
		}),
	}, nil
}

// warnAboutTriggerMetadata reports, once per scaler, what parses but is
// probably a mistake: secrets in plain trigger metadata (accepted, but
// readable by anyone who can read the ScaledObject) and keys the trigger does
// not know, such as a misspelt threshold that silently leaves the default in
// force. Parameter names only: a value is never logged.
func warnAboutTriggerMetadata(config *scalersconfig.ScalerConfig, logger logr.Logger) {
	accepted, secret := map[string]bool{}, map[string]bool{}
	for _, p := range cosmosDBParameters(reflect.TypeFor[azureCosmosDBMetadata]()) {
		accepted[p.name] = p.fromMetadata
		if p.fromEnv {
			accepted[p.name+"FromEnv"] = true
		}
		secret[p.name] = p.secret
	}
	keys := slices.Sorted(maps.Keys(config.TriggerMetadata))
	var plainSecrets []string
	for _, key := range keys {
		if secret[key] && config.TriggerMetadata[key] != "" {
			plainSecrets = append(plainSecrets, key)
		}
	}
	if len(plainSecrets) > 0 {
		warnScalerUser(config, logger, fmt.Sprintf("scaler %s: secret parameter(s) %s given in plain trigger metadata; move them to a TriggerAuthentication", config.TriggerType, strings.Join(plainSecrets, ", ")))
	}
	// With this variable set, KEDA's typed config reports unknown keys itself.
	if os.Getenv("KEDA_CHECK_UNEXPECTED_SCALERS_PARAMS") == "enabled" {
		return
	}
	for _, key := range keys {
		if !accepted[key] {
			// KEDA's wording for the same check, so one search finds both.
			warnScalerUser(config, logger, fmt.Sprintf("Unmatched input property %s in scaler %s", key, config.TriggerType))
		}
	}
}

// cosmosDBParameter is one trigger parameter as its keda: tag declares it.
type cosmosDBParameter struct {
	name string
	// fromMetadata and fromEnv: trigger metadata, and the scale target's
	// environment (as nameFromEnv), are among its sources.
	fromMetadata, fromEnv bool
	secret                bool // its value is a credential (account.Secret)
}

// cosmosDBParameters reads the keda: tags of t as KEDA's typed config does,
// nested structs included, in declaration order.
func cosmosDBParameters(t reflect.Type) []cosmosDBParameter {
	var params []cosmosDBParameter
	for field := range t.Fields() {
		tag, ok := field.Tag.Lookup("keda")
		if !ok {
			continue
		}
		var names []string
		var fromMetadata, fromEnv bool
		for part := range strings.SplitSeq(tag, ",") {
			key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch key {
			case "name":
				names = strings.Split(value, ";")
			case "order":
				fromMetadata = strings.Contains(value, string(scalersconfig.TriggerMetadata))
				fromEnv = strings.Contains(value, string(scalersconfig.ResolvedEnv))
			}
		}
		if len(names) == 0 {
			nested := field.Type
			if nested.Kind() == reflect.Pointer {
				nested = nested.Elem()
			}
			if nested.Kind() == reflect.Struct {
				params = append(params, cosmosDBParameters(nested)...)
			}
			continue
		}
		for _, name := range names {
			params = append(params, cosmosDBParameter{name: strings.TrimSpace(name), fromMetadata: fromMetadata, fromEnv: fromEnv,
				secret: field.Type == reflect.TypeFor[account.Secret]()})
		}
	}
	return params
}

// warnScalerUser logs a warning and, inside KEDA, records it as a Warning
// event on the ScaledObject, where kubectl describe shows it.
func warnScalerUser(config *scalersconfig.ScalerConfig, logger logr.Logger, message string) {
	logger.Info(message)
	if config.Recorder != nil && config.ScaledObject != nil {
		config.Recorder.Eventf(config.ScaledObject, nil, corev1.EventTypeWarning, eventreason.KEDAScalersInfo, eventreason.KEDAScalersInfo, "%s", message)
	}
}

// GetMetricSpecForScaling returns one external metric named after the lease
// container and processor, with the lag threshold as its target.
func (s *azureCosmosDBScaler) GetMetricSpecForScaling(context.Context) []v2.MetricSpec {
	externalMetric := &v2.ExternalMetricSource{
		Metric: v2.MetricIdentifier{Name: GenerateMetricNameWithIndex(s.metadata.TriggerIndex, s.metricName())},
		Target: GetMetricTarget(s.metricType, s.metadata.ChangeFeedLagThreshold),
	}
	return []v2.MetricSpec{{External: externalMetric, Type: v2.ExternalMetricSourceType}}
}

// metricName is the metric's name before KEDA's trigger-index prefix: KEDA
// v2.21.0's, kept so dashboards, alerts and HPA status keyed on it survive
// the upgrade.
func (s *azureCosmosDBScaler) metricName() string {
	return kedautil.NormalizeString(fmt.Sprintf("azure-cosmosdb-%s-%s", s.metadata.LeaseContainerID, s.metadata.ProcessorName))
}

// GetMetricsAndActivity estimates the processor's lag and returns the
// capped metric; it is active when the total lag exceeds the activation
// threshold. Any failure is returned as is: no partial or cached value.
func (s *azureCosmosDBScaler) GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error) {
	result, err := s.estimator.Estimate(ctx)
	if err != nil {
		err = fmt.Errorf("azure-cosmosdb: estimating change feed lag of processor %q: %w", s.metadata.ProcessorName, err)
		if s.observe != nil {
			s.observe(result, lag.Summary{}, err)
		}
		return []external_metrics.ExternalMetricValue{}, false, err
	}
	summary := lag.Summarize(result, s.metadata.ChangeFeedLagThreshold, s.metadata.ActivationChangeFeedLagThreshold)
	if result.StaleParents > 0 {
		s.logger.Info("partition split: stale parent lease(s) remain after a lease refresh; waking the processor to replace them",
			"processor", s.metadata.ProcessorName, "staleParents", result.StaleParents)
	} else if result.SplitRetried {
		s.logger.Info("partition split seen; estimate redone after a lease refresh", "processor", s.metadata.ProcessorName)
	}
	s.logUnknownModes(result)
	s.logger.V(1).Info("change feed lag estimated",
		"processor", s.metadata.ProcessorName, "leases", len(result.Leases), "totalLag", summary.TotalLag,
		"activePartitions", summary.ActivePartitions, "metric", summary.Metric, "active", summary.Active,
		"requests", result.Requests, "requestCharge", result.RequestCharge, "duration", result.Duration)
	if s.observe != nil {
		s.observe(result, summary, nil)
	}
	metric := GenerateMetricInMili(metricName, float64(summary.Metric))
	return []external_metrics.ExternalMetricValue{metric}, summary.Active, nil
}

// Close has nothing to release: connections belong to KEDA's shared transport.
func (s *azureCosmosDBScaler) Close(context.Context) error { return nil }

// logUnknownModes says, at V(1), when leases record a change feed mode no
// known writer writes: they were read as latest version, which undercounts
// if the processor actually reads every version and delete.
func (s *azureCosmosDBScaler) logUnknownModes(result lag.Result) {
	// The scan is only worth doing when the line would be written: it runs
	// on every poll, over every lease.
	if !s.logger.V(1).Enabled() {
		return
	}
	unknown, example := 0, ""
	for _, l := range result.Leases {
		if l.UnknownMode != "" {
			unknown++
			example = l.UnknownMode
		}
	}
	if unknown > 0 {
		s.logger.V(1).Info("leases record an unknown change feed mode; read them as latest version",
			"processor", s.metadata.ProcessorName, "leases", unknown, "mode", example)
	}
}

package scalers

// This file is NOT part of the in-tree drop-in. It supplies, for this
// repository only, the few names azure_cosmosdb_scaler.go uses from KEDA's
// pkg/scalers package, re-implemented with the same behaviour, because
// importing that package compiles every KEDA scaler (about 40 minutes cold).
// Inside kedacore/keda these names already exist and this file is dropped.

import (
	"context"
	"fmt"
	"math"

	"github.com/go-logr/logr"
	v2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/external_metrics"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// Scaler has exactly the method set of KEDA's scalers.Scaler.
type Scaler interface {
	// GetMetricsAndActivity returns the metric values and activity for a metric name.
	GetMetricsAndActivity(ctx context.Context, metricName string) ([]external_metrics.ExternalMetricValue, bool, error)
	// GetMetricSpecForScaling returns the metric specs the HPA scales on.
	GetMetricSpecForScaling(ctx context.Context) []v2.MetricSpec
	// Close releases what the scaler holds.
	Close(ctx context.Context) error
}

// ErrScalerUnsupportedUtilizationMetricType mirrors KEDA's error for Utilization targets.
var ErrScalerUnsupportedUtilizationMetricType = fmt.Errorf("'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'")

// GenerateMetricNameWithIndex prefixes a metric name with its trigger index, as KEDA does.
func GenerateMetricNameWithIndex(triggerIndex int, metricName string) string {
	return fmt.Sprintf("s%d-%s", triggerIndex, metricName)
}

// InitializeLogger returns the scaler's logger with KEDA's standard values.
func InitializeLogger(config *scalersconfig.ScalerConfig, scalerName string) logr.Logger {
	return logf.Log.WithName(scalerName).WithValues("type", config.ScalableObjectType, "namespace", config.ScalableObjectNamespace, "name", config.ScalableObjectName)
}

// GetMetricTargetType returns the configured metric type, AverageValue by default.
func GetMetricTargetType(config *scalersconfig.ScalerConfig) (v2.MetricTargetType, error) {
	switch config.MetricType {
	case v2.UtilizationMetricType:
		return "", ErrScalerUnsupportedUtilizationMetricType
	case "":
		return v2.AverageValueMetricType, nil
	default:
		return config.MetricType, nil
	}
}

// GetMetricTarget builds a Value or AverageValue target.
func GetMetricTarget(metricType v2.MetricTargetType, metricValue int64) v2.MetricTarget {
	target := v2.MetricTarget{Type: metricType}
	quantity := resource.NewQuantity(metricValue, resource.DecimalSI)
	if metricType == v2.AverageValueMetricType {
		target.AverageValue = quantity
	} else {
		target.Value = quantity
	}
	return target
}

// GenerateMetricInMili returns a metric value with milli precision; NaN,
// infinities and negatives become zero, as in KEDA.
func GenerateMetricInMili(metricName string, value float64) external_metrics.ExternalMetricValue {
	quantity := resource.MustParse("0")
	if !math.IsNaN(value) && !math.IsInf(value, 0) && value >= 0 {
		quantity = resource.MustParse(fmt.Sprintf("%.3f", value))
	}
	return external_metrics.ExternalMetricValue{MetricName: metricName, Value: quantity, Timestamp: metav1.Now()}
}

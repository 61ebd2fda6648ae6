package main

import (
	"errors"
	"reflect"
	"unsafe"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lag"
)

// scalerEstimator returns the lag estimator and thresholds inside a scaler
// built by scalers.NewAzureCosmosDBScaler, so that check can show per-lease
// detail from the very estimator the scaler polls, built by the scaler's
// own constructor.
//
// STOPGAP: the scalers package exports no accessor for these yet, so this
// reads the unexported fields by reflection. It is meant to be replaced by a
// one-line call to an exported accessor in pkg/scalers, e.g.
//
//	func AzureCosmosDBEstimator(s Scaler) (e *lag.Estimator, threshold, activation int64, ok bool)
//
// Until then a renamed field fails here with an error (and in
// TestScalerEstimator), never silently.
func scalerEstimator(s scalers.Scaler) (est *lag.Estimator, threshold, activation int64, err error) {
	errLayout := errors.New("internal: the azure-cosmosdb scaler's layout changed; update cmd/cosmoslag/internals.go")
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, 0, 0, errLayout
	}
	fields := v.Elem()
	e := fields.FieldByName("estimator")
	meta := fields.FieldByName("metadata")
	if !e.IsValid() || e.Type() != reflect.TypeFor[*lag.Estimator]() || !meta.IsValid() || meta.Kind() != reflect.Struct {
		return nil, 0, 0, errLayout
	}
	t, a := meta.FieldByName("ChangeFeedLagThreshold"), meta.FieldByName("ActivationChangeFeedLagThreshold")
	if !t.IsValid() || t.Kind() != reflect.Int64 || !a.IsValid() || a.Kind() != reflect.Int64 {
		return nil, 0, 0, errLayout
	}
	est = reflect.NewAt(e.Type(), unsafe.Pointer(e.UnsafeAddr())).Elem().Interface().(*lag.Estimator)
	if est == nil {
		return nil, 0, 0, errLayout
	}
	return est, t.Int(), a.Int(), nil
}

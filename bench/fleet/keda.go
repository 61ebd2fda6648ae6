//go:build !oursonly

package main

import (
	keda "github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

func init() {
	implementations["keda-v2.21.0"] = func(c *scalersconfig.ScalerConfig) (scaler, error) { return keda.NewAzureCosmosDBScaler(c) }
}

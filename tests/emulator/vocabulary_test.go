package emulator

// The embedded server's vocabulary for the lease formats leasetest.Writer
// writes and the change feed mode of a processor, in one place: the
// scaler's own names for them are strings and a bool (azure.CosmosDBLease),
// which the tests compare against (scalerFormatOf, writer_mapping_test.go).

import "github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"

type (
	leaseFormat    = cosmostest.LeaseFormat
	changeFeedMode = cosmostest.ChangeFeedMode
)

const (
	dotNetV0        = cosmostest.DotNetV0
	dotNetV1        = cosmostest.DotNetV1
	javaV0          = cosmostest.JavaV0
	javaV1          = cosmostest.JavaV1
	dotNetV2Library = cosmostest.DotNetV2Library

	latestVersion         = cosmostest.LatestVersion
	allVersionsAndDeletes = cosmostest.AllVersionsAndDeletes
)

// leaseFormats is every format leasetest.Writer writes.
var leaseFormats = []leaseFormat{dotNetV0, dotNetV1, javaV0, javaV1, dotNetV2Library}

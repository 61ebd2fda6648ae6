package emulator

// The embedded server's vocabulary for the lease formats its LeaseWriter
// writes and the change feed mode of a processor, in one place: the
// scaler's own names for them are strings and a bool (azure.CosmosDBLease),
// which the tests compare against.

import "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"

type (
	leaseFormat    = lease.Format
	changeFeedMode = lease.Mode
)

const (
	dotNetV0        = lease.DotNetV0
	dotNetV1        = lease.DotNetV1
	javaV0          = lease.JavaV0
	javaV1          = lease.JavaV1
	dotNetV2Library = lease.DotNetV2Library

	latestVersion         = lease.LatestVersion
	allVersionsAndDeletes = lease.AllVersionsAndDeletes
)

// leaseFormats is every format a LeaseWriter writes.
var leaseFormats = []leaseFormat{dotNetV0, dotNetV1, javaV0, javaV1, dotNetV2Library}

package azure

// This file is NOT part of the in-tree drop-in. Inside kedacore/keda the
// azure_cosmosdb_*.go files are part of KEDA's own package azure
// (pkg/scalers/azure) and use these names from it directly; in this
// repository, a package of its own, they are forwarded to KEDA's package.

import (
	kedaazure "github.com/kedacore/keda/v2/pkg/scalers/azure"
)

// AzEnvironment is KEDA's description of an Azure cloud.
type AzEnvironment = kedaazure.AzEnvironment

// KEDA's descriptions of the known Azure clouds.
var (
	PublicCloud       = kedaazure.PublicCloud
	USGovernmentCloud = kedaazure.USGovernmentCloud
	ChinaCloud        = kedaazure.ChinaCloud
	GermanCloud       = kedaazure.GermanCloud
)

// Names of KEDA's package azure that the Cosmos DB files use.
const (
	PrivateCloud                      = kedaazure.PrivateCloud
	DefaultActiveDirectoryEndpointKey = kedaazure.DefaultActiveDirectoryEndpointKey
	EnvironmentFilepathName           = kedaazure.EnvironmentFilepathName
	NotAvailable                      = kedaazure.NotAvailable
)

// Functions of KEDA's package azure that the Cosmos DB files use.
var (
	NewChainedCredential         = kedaazure.NewChainedCredential
	ParseEnvironmentProperty     = kedaazure.ParseEnvironmentProperty
	ParseActiveDirectoryEndpoint = kedaazure.ParseActiveDirectoryEndpoint
	EnvironmentFromName          = kedaazure.EnvironmentFromName
)

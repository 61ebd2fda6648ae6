// Package emulator holds the azure-cosmosdb scaler's deep tests: the scaler
// built with scalers.NewAzureCosmosDBScaler (or NewInspectedAzureCosmosDBScaler
// for per-lease figures) polling the embedded Cosmos DB server
// (pkg/cosmostest), a test Entra ID issuer for bearer tokens, and the
// support code of package azure driven through its exported names with a
// scripted transport. They also hold the fuzz tests and the benchmarks
// (make bench).
//
// Nothing here goes into kedacore/keda: the in-tree unit tests are
// pkg/scalers/azure_cosmosdb_scaler_test.go and the _test.go files of
// pkg/scalers/azure. This package has its own process, so its TestMain may
// set what KEDA's shared test package must not: the logger, SSL_CERT_FILE,
// HTTPS_PROXY and KEDA's shared HTTP transport.
package emulator

// Package rest sends Cosmos DB REST requests for one account through one
// azcore pipeline. Each cross-cutting concern is a policy in a file of its
// own: retries and the poll's deadline (retry.go), request counting
// (usage.go), the version and date headers (headers.go) and the signature
// (sign.go); body.go bounds what a response may hold and errors.go turns a
// failed answer into a ResponseError. Which account and credential to use
// is package account's business.
package rest

// Package control is the control API of a standalone cosmostest server
// (cosmoslag serve): what only the service itself does, over plain HTTP and
// JSON — creating databases and containers, splitting and merging
// partitions, writing a processor's first leases, finding a partition key
// value for a chosen physical partition. It holds the one definition of the contract: the
// routes and wire types below, the Handler that serves them and the Client
// that calls them. The routes and JSON fields are a public interface
// (README, scripts): change them only compatibly.
package control

import "time"

// Routes of the control API.
const (
	routeContainers   = "/control/containers"                               // POST CreateContainerRequest -> Container
	routeRanges       = "/control/containers/{database}/{container}/ranges" // GET -> Container
	RouteProcessors   = "/control/processors"                               // POST CreateLeasesRequest -> Leases
	routePartitionKey = "/control/partition-key"                            // GET ?database=&container=&range= -> PartitionKey
	routeSplit        = "/control/split"                                    // POST splitRequest -> Split
	routeMerge        = "/control/merge"                                    // POST mergeRequest -> Range
	routeHealthz      = "/control/healthz"                                  // GET -> "ok" (text/plain)
	routeRequests     = "/control/requests"                                 // GET -> Requests
)

// Requests is the account's request log: the Cosmos DB requests it
// answered, oldest first (cosmoslag serve keeps at least the last 1,000),
// their Authorization header redacted to its type.
type Requests struct {
	Requests []LoggedRequest `json:"requests"`
}

// LoggedRequest is one Cosmos DB request the account answered.
type LoggedRequest struct {
	At      time.Time           `json:"at"`
	Kind    string              `json:"kind"` // account, database, container, pkranges, query, changefeed, create, replace, readitem, delete, readfeed, other
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	RangeID string              `json:"rangeId,omitempty"` // x-ms-documentdb-partitionkeyrangeid
	Status  int                 `json:"status"`            // 0: no answer was written
	Header  map[string][]string `json:"header"`            // canonical names
}

// maxRanges bounds the physical ranges of a container created over the
// control API.
const maxRanges = 1024

// CreateContainerRequest creates the database and the container if missing.
// Ranges defaults to 1.
type CreateContainerRequest struct {
	Database         string `json:"database"`
	ID               string `json:"id"`
	PartitionKeyPath string `json:"partitionKeyPath"`
	Ranges           *int   `json:"ranges,omitempty"`
}

// Container describes a container and its live physical ranges.
type Container struct {
	Database         string  `json:"database"`
	ID               string  `json:"id"`
	RID              string  `json:"rid"`
	PartitionKeyPath string  `json:"partitionKeyPath"`
	Ranges           []Range `json:"ranges"`
}

// Range is a physical partition key range.
type Range struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents,omitempty"`
}

// CreateLeasesRequest writes a processor's leases, one per live range of
// the monitored container, and its .info and .lock documents, as a
// processor does when it first starts. Format is a lease format as
// cosmoslag prints it (dotnet-v0, dotnet-v1, java-v0, java-v1,
// dotnet-v2-library: cosmostest.LeaseFormat), case-insensitive; default
// dotnet-v0; answers name it the same way.
// StartFromNow checkpoints at the current LSNs; otherwise the lag is every
// item. LeaseDatabase defaults to Database, AccountHost to the endpoint's
// host. Name is required in the request body; an empty name ("name": "",
// which the Client sends for Name "") writes the leases of a processor
// without a prefix, as an Azure Functions trigger without
// LeaseContainerPrefix (Functions v4: .NET v3 SDK, dotnet-v0/dotnet-v1;
// Functions v3: LeaseCollectionPrefix, dotnet-v2-library) writes them: ids
// "{accountHost}_{dbRid}_{collRid}..{token}" beside ".info" and ".lock".
type CreateLeasesRequest struct {
	Name          string `json:"name"`
	Database      string `json:"database"`
	Monitored     string `json:"monitored"`
	Leases        string `json:"leases"`
	LeaseDatabase string `json:"leaseDatabase,omitempty"`
	Format        string `json:"format,omitempty"`
	StartFromNow  bool   `json:"startFromNow,omitempty"`
	AccountHost   string `json:"accountHost,omitempty"`
	// Mode is the processor's change feed mode, LatestVersion (the default)
	// or AllVersionsAndDeletes (dotnet-v0, dotnet-v1 and java-v1 only),
	// case-insensitive.
	Mode string `json:"mode,omitempty"`
}

// Leases is the answer to CreateLeasesRequest. Format is the format's
// name as cosmoslag prints it and requests name it (dotnet-v0, dotnet-v1,
// java-v0, java-v1, dotnet-v2-library), whatever name the request used.
type Leases struct {
	Prefix string  `json:"prefix"`
	Format string  `json:"format"`
	Leases []Lease `json:"leases"`
}

// Lease is one lease document written.
type Lease struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// PartitionKey is a fresh string value whose items land in the requested
// live range (send it in x-ms-documentdb-partitionkey as ["value"]).
type PartitionKey struct {
	PartitionKey string `json:"partitionKey"`
}

// splitRequest splits a live range at its midpoint.
type splitRequest struct {
	Database  string `json:"database"`
	Container string `json:"container"`
	Range     string `json:"range"`
}

// Split holds the two children of a split.
type Split struct {
	Left  Range `json:"left"`
	Right Range `json:"right"`
}

// mergeRequest merges two adjacent live ranges, named in either order, into
// one. The account must have partition merge enabled (cosmoslag serve
// --enable-partition-merge), as the service merges only on such accounts;
// the answer is the new range, whose parents are the two.
type mergeRequest struct {
	Database  string   `json:"database"`
	Container string   `json:"container"`
	Ranges    []string `json:"ranges"`
}

// errorBody is the body of every answer other than success.
type errorBody struct {
	Error string `json:"error"`
}

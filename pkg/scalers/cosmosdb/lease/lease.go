// Package lease finds a change feed processor's lease documents in its lease
// container and decodes each writer's format into one Lease.
package lease

// Format names the processor library that wrote a lease document.
type Format string

// The lease formats real change feed processors write. The version field, not
// the presence of a feed range, tells PK-range (v0) leases from EPK (v1) ones:
// .NET v0 leases carry a FeedRange too.
const (
	DotNetV0        Format = "dotnet-v0"         // .NET v3 SDK / Functions, PK-range lease
	DotNetV1        Format = "dotnet-v1"         // .NET v3 SDK / Functions, EPK-range lease
	JavaV0          Format = "java-v0"           // Java v4 SDK, PK-range lease (names in the id)
	JavaV1          Format = "java-v1"           // Java v4 SDK, EPK-range lease (Base64 state)
	DotNetV2Library Format = "dotnet-v2-library" // .NET change feed processor library v2 (PartitionId)
)

// Lease is what the estimator needs from one lease document.
type Lease struct {
	ID    string
	Token string // the lease token: a partition key range id (v0) or "min-max" (v1)
	Format
	// EPK is true for v1 leases, which cover the effective-partition-key range
	// [Min, Max) and are read through the physical range that contains it.
	EPK      bool
	Min, Max string
	// Continuation is the change feed etag to resume from, as the processor
	// checkpointed it (a quoted LSN such as "\"24\"").
	Continuation string
	Owner        string
	// Mode is the change feed mode the processor reads in; its position is
	// read in the same mode. UnknownMode holds a recorded mode value no
	// known writer writes (the lease is then read as latest version).
	Mode        Mode
	UnknownMode string
}

package cosmostest

// LeaseFormat names the change feed processor library whose lease documents
// a leasetest.Writer writes. The values are the names cosmoslag prints for a
// lease's format. This is the server's own vocabulary: it writes what each
// library writes, as read in that library's sources (cited in leasetest/writer.go),
// and does not take the scaler's decoder as its reference; tests that use
// both hold the two together.
type LeaseFormat string

// The lease formats of the change feed processor libraries.
const (
	// DotNetV0 is the PK-range (version 0) lease of the .NET v3 SDK and the
	// Azure Functions trigger: LeaseToken is a partition key range id.
	DotNetV0 LeaseFormat = "dotnet-v0"
	// DotNetV1 is the EPK-range (version 1) lease of the .NET v3 SDK:
	// LeaseToken is "{min}-{max}", as after a merge.
	DotNetV1 LeaseFormat = "dotnet-v1"
	// JavaV0 is the PK-range lease of the Java v4 SDK, whose lease ids hold
	// the database and container names instead of their RIDs.
	JavaV0 LeaseFormat = "java-v0"
	// JavaV1 is the EPK-range lease of the Java v4 SDK, its continuation a
	// Base64 change feed state.
	JavaV1 LeaseFormat = "java-v1"
	// DotNetV2Library is the lease of the .NET change feed processor
	// library v2 (PartitionId instead of LeaseToken).
	DotNetV2Library LeaseFormat = "dotnet-v2-library"
)

// LeaseFormats lists every format, in the order above.
var LeaseFormats = []LeaseFormat{DotNetV0, DotNetV1, JavaV0, JavaV1, DotNetV2Library}

// EPK reports whether the format's lease tokens are EPK ranges ("{min}-{max}")
// rather than partition key range ids.
func (f LeaseFormat) EPK() bool { return f == DotNetV1 || f == JavaV1 }

// HasAllVersionsAndDeletes reports whether processors of the format can
// read in all-versions-and-deletes mode: the .NET v3 SDK records the mode in
// both of its formats; Java v4 runs that mode only with EPK leases
// (FullFidelityChangeFeedProcessorImpl is in its epkversion package); Java
// v0 leases and the .NET v2 library predate the mode.
func (f LeaseFormat) HasAllVersionsAndDeletes() bool {
	return f == DotNetV0 || f == DotNetV1 || f == JavaV1
}

// ChangeFeedMode is the change feed mode of a processor, which its leases
// record. The zero value is LatestVersion.
type ChangeFeedMode uint8

const (
	// LatestVersion (A-IM: Incremental Feed) delivers the latest version of
	// each changed item and no deletes.
	LatestVersion ChangeFeedMode = iota
	// AllVersionsAndDeletes (A-IM: Full-Fidelity Feed) delivers every
	// create, replace and delete.
	AllVersionsAndDeletes
)

// String is "LatestVersion" or "AllVersionsAndDeletes", the names the
// control API accepts.
func (m ChangeFeedMode) String() string {
	if m == AllVersionsAndDeletes {
		return "AllVersionsAndDeletes"
	}
	return "LatestVersion"
}

package lease

import "strings"

// Mode is the change feed mode a processor reads in, as its leases record it.
// The zero value is LatestVersion: leases that record no mode (Java v4
// PK-range leases, the .NET v2 library, .NET leases written before modes
// existed) belong to latest-version processors, the only mode those writers have.
type Mode uint8

const (
	// LatestVersion ("Incremental Feed" on the wire) delivers the latest
	// version of each changed item and never a delete.
	LatestVersion Mode = iota
	// AllVersionsAndDeletes ("Full-Fidelity Feed" on the wire) delivers every
	// create, replace and delete, each with its own LSN.
	AllVersionsAndDeletes
)

func (m Mode) String() string {
	if m == AllVersionsAndDeletes {
		return "AllVersionsAndDeletes"
	}
	return "LatestVersion"
}

// The values writers record, compared case-insensitively as the .NET SDK
// does: .NET v3 writes the A-IM header value into the lease's "Mode"
// ("Incremental Feed" / "Full-Fidelity Feed", DocumentServiceLeaseManagerCosmos),
// Java v4 writes its ChangeFeedMode enum name into the Base64 change feed
// state of EPK leases ("INCREMENTAL" / "FULL_FIDELITY", ChangeFeedStateV1).
var modeValues = map[string]Mode{
	"incremental feed":   LatestVersion,
	"incremental":        LatestVersion,
	"full-fidelity feed": AllVersionsAndDeletes,
	"full_fidelity":      AllVersionsAndDeletes,
}

// maxUnknownMode bounds how much of an unrecognised mode value a lease
// keeps for the log line that reports it.
const maxUnknownMode = 64

// parseMode reads a recorded mode. No value is latest version; a value no
// writer is known to write is read as latest version too and returned as
// unknown, so that the caller can say so.
func parseMode(raw *string) (mode Mode, unknown string) {
	if raw == nil || strings.TrimSpace(*raw) == "" {
		return LatestVersion, ""
	}
	if m, ok := modeValues[strings.ToLower(strings.TrimSpace(*raw))]; ok {
		return m, ""
	}
	unknown = *raw
	if len(unknown) > maxUnknownMode {
		unknown = strings.ToValidUTF8(unknown[:maxUnknownMode], "") + "…"
	}
	return LatestVersion, unknown
}

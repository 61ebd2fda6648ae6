package cosmostest

import (
	"net/http"
	"strconv"
	"strings"
)

// Partition merge is an account feature. Once it is enabled on an account,
// whether or not a merge is running, the service admits only clients that
// declare they support merges: Microsoft's "Merge partitions" page lists
// .NET >= 3.27.0, Java >= 4.42.0, JavaScript >= 4.3 and Spark >= 4.18.0, and
// says requests of other clients "are blocked and fail".
//
// A client declares it in x-ms-cosmos-sdk-supportedcapabilities, a decimal
// bit set whose bit 0 (value 1) is PartitionMerge: the .NET SDK sends its
// SDKSupportedCapabilities flags on every request (Headers.cs,
// RequestInvokerHandler.cs), @azure/cosmos sends
// SDKSupportedCapabilities.PartitionMerge = 1 from request/request.js, and
// azcosmos v1.5.0 sends "1" from addDefaultHeaders (sdk_capabilities.go).
const (
	hdrSupportedCapabilities = "x-ms-cosmos-sdk-supportedcapabilities"
	capabilityPartitionMerge = 1 << 0
)

// WithPartitionMerge enables partition merge on the account, as
// "az cosmosdb update --enable-partition-merge true" does: every request
// that does not declare the PartitionMerge capability is refused.
//
// Container.Merge does not need it (a test may merge ranges on any
// account), but the service only merges ranges of accounts that have it,
// so a test of a client across a merge should enable it too.
func WithPartitionMerge() Option { return func(c *config) { c.partitionMerge = true } }

// refuseWithoutMergeCapability answers a request to a merge-enabled account
// that does not declare PartitionMerge, or returns nil. The status the
// service refuses such clients with is not documented; a Go client without
// the header got 400 BadRequest (azure-sdk-for-go#20709), so 400 it is.
func (h *Handler) refuseWithoutMergeCapability(hdr http.Header) *reply {
	if !h.acct.partitionMerge {
		return nil
	}
	raw, sent := hdr[http.CanonicalHeaderKey(hdrSupportedCapabilities)]
	v := ""
	if sent && len(raw) > 0 {
		v = raw[0]
	}
	bits, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err == nil && bits&capabilityPartitionMerge != 0 {
		return nil
	}
	const refusal = "this account has partition merge enabled and admits only clients that declare the PartitionMerge capability: send the header " +
		hdrSupportedCapabilities + " with bit 0 set in its decimal value (e.g. 1)"
	if !sent {
		return badRequest("%s; the request has no such header", refusal)
	}
	return badRequest("%s; the request sent %q", refusal, v)
}

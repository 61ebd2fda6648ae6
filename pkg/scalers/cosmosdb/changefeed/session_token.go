// Package changefeed reads where one lease stands in its physical partition's
// change feed: a single GET of at most one item from the lease's checkpoint.
package changefeed

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SessionLSN extracts the global LSN from an x-ms-session-token header.
// The service writes "{rangeId}:{token}", where token is "12345" (simple),
// "-1#12345" (versioned) or "1#12345#1=12340#2=12333" (multi-region vector);
// the global LSN is the second '#' field when there is one, else the only
// field. A header can list several ranges separated by commas; then the
// entry for rangeID is used.
func SessionLSN(header, rangeID string) (int64, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, errors.New("response has no x-ms-session-token")
	}
	// Cut and SplitSeq rather than Split: this runs once per lease read, and
	// builds no slices.
	entry := ""
	if !strings.Contains(header, ",") {
		entry = header
	} else {
		for e := range strings.SplitSeq(header, ",") {
			if id, _, ok := strings.Cut(strings.TrimSpace(e), ":"); ok && id == rangeID {
				entry = strings.TrimSpace(e)
				break
			}
		}
		if entry == "" {
			return 0, fmt.Errorf("session token lists no entry for partition key range %s", rangeID)
		}
	}
	_, token, ok := strings.Cut(entry, ":")
	if !ok {
		return 0, errors.New("malformed session token: no range id")
	}
	// The LSN is the second '#' field when there is one, else the only field.
	lsnField, rest, versioned := strings.Cut(token, "#")
	if versioned {
		lsnField, _, _ = strings.Cut(rest, "#")
	}
	lsn, err := strconv.ParseInt(lsnField, 10, 64)
	if err != nil || lsn < 0 {
		return 0, errors.New("malformed session token: LSN is not a non-negative 64-bit integer")
	}
	return lsn, nil
}

package cosmostest

import (
	"fmt"
	"strconv"
)

// SessionTokenForm selects how x-ms-session-token renders a range's LSN.
type SessionTokenForm int

const (
	// SessionTokenSimple is "{range}:{lsn}", e.g. "0:12".
	SessionTokenSimple SessionTokenForm = iota
	// SessionTokenVersioned is "{range}:-1#{lsn}", e.g. "0:-1#12" (the default).
	SessionTokenVersioned
	// SessionTokenVector is the multi-region form
	// "{range}:{version}#{globalLSN}#{region}={localLSN}#…", e.g.
	// "0:1#12#1=10#2=9". The global LSN (second segment) is the range's LSN;
	// the regional LSNs are lsn-2 and lsn-3 (not below 0), so a reader that
	// takes a regional value instead of the global one gets a wrong answer.
	SessionTokenVector
)

func (a *Account) sessionTokenLocked(r *pkRange) string {
	return r.id + ":" + formatSessionLSN(a.sessionForm, r.lsn)
}

// quotedLSN is the LSN in quotes, the etag of a change feed position and the
// continuation of a lease.
func quotedLSN(lsn int64) string { return `"` + strconv.FormatInt(lsn, 10) + `"` }

func formatSessionLSN(f SessionTokenForm, lsn int64) string {
	switch f {
	case SessionTokenSimple:
		return strconv.FormatInt(lsn, 10)
	case SessionTokenVector:
		return fmt.Sprintf("1#%d#1=%d#2=%d", lsn, max(lsn-2, 0), max(lsn-3, 0))
	default:
		return "-1#" + strconv.FormatInt(lsn, 10)
	}
}

package changefeed

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzSessionLSN: any header either fails or yields a non-negative LSN that
// appears verbatim in it (never a wrapped or invented number).
func FuzzSessionLSN(f *testing.F) {
	for _, seed := range []string{"0:12345", "0:-1#12345", "3:1#12345#1=12340#2=12333", "1:-1#7,3:-1#99", "", "0:", "0:-1#", "3:9223372036854775808"} {
		f.Add(seed, "3")
	}
	f.Fuzz(func(t *testing.T, header, rangeID string) {
		lsn, err := SessionLSN(header, rangeID)
		if err != nil {
			return
		}
		if lsn < 0 || !strings.Contains(header, strconv.FormatInt(lsn, 10)) {
			t.Fatalf("SessionLSN(%q) = %d", header, lsn)
		}
	})
}

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

// sessionLSNBySplit is the Split-based parser SessionLSN replaced; it stays
// as the reference that FuzzSessionLSNMatchesSplit compares against.
func sessionLSNBySplit(header, rangeID string) (int64, bool) {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	entries := strings.Split(header, ",")
	entry := ""
	if len(entries) == 1 {
		entry = entries[0]
	} else {
		for _, e := range entries {
			if id, _, ok := strings.Cut(strings.TrimSpace(e), ":"); ok && id == rangeID {
				entry = strings.TrimSpace(e)
				break
			}
		}
		if entry == "" {
			return 0, false
		}
	}
	_, token, ok := strings.Cut(entry, ":")
	if !ok {
		return 0, false
	}
	fields := strings.Split(token, "#")
	lsnField := fields[0]
	if len(fields) > 1 {
		lsnField = fields[1]
	}
	lsn, err := strconv.ParseInt(lsnField, 10, 64)
	if err != nil || lsn < 0 {
		return 0, false
	}
	return lsn, true
}

// FuzzSessionLSNMatchesSplit: the allocation-free parser gives the reference's answer.
func FuzzSessionLSNMatchesSplit(f *testing.F) {
	for _, seed := range []string{"0:12345", "0:-1#12345", "3:1#12345#1=12340#2=12333", "1:-1#7,3:-1#99", " 3:5 , 3:6", "3:#7", "3:7#", ",", "3:1#2#3", ""} {
		f.Add(seed, "3")
	}
	f.Fuzz(func(t *testing.T, header, rangeID string) {
		got, err := SessionLSN(header, rangeID)
		want, ok := sessionLSNBySplit(header, rangeID)
		if (err == nil) != ok || got != want {
			t.Fatalf("SessionLSN(%q, %q) = %d, %v; reference %d, %v", header, rangeID, got, err, want, ok)
		}
	})
}

package changefeed

import (
	"math"
	"testing"
)

func TestSessionLSNForms(t *testing.T) {
	for header, want := range map[string]int64{
		"0:12345":                   12345,
		"0:-1#12345":                12345,
		"3:1#12345#1=12340#2=12333": 12345,
		"1:-1#7,3:-1#99":            99, // several ranges: the entry for range 3
		"3:9223372036854775807":     math.MaxInt64,
	} {
		got, err := SessionLSN(header, "3")
		if err != nil || got != want {
			t.Errorf("SessionLSN(%q) = %d, %v; want %d", header, got, err, want)
		}
	}
}

func TestSessionLSNRejectsMalformed(t *testing.T) {
	for _, header := range []string{"", "12345", "0:", "0:abc", "0:-1#", "0:-1#-5", "0:9223372036854775808", "1:5,2:6"} {
		if got, err := SessionLSN(header, "3"); err == nil {
			t.Errorf("SessionLSN(%q) = %d, want an error", header, got)
		}
	}
}

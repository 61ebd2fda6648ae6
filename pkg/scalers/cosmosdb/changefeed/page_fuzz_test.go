package changefeed

import (
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
)

// FuzzLagOfPage: whatever page and session token the wire brings, the lag is
// an error or a number in [0, MaxInt64], and an empty page is zero.
func FuzzLagOfPage(f *testing.F) {
	f.Add([]byte(`{"_rid":"x","Documents":[{"id":"a","_lsn":101}],"_count":1}`), "0:-1#110")
	f.Add([]byte(`{"Documents":[],"_count":0}`), "0:5")
	f.Add([]byte(`{"Documents":[{"_lsn":1e3}]}`), "0:1#2000#1=1990")
	f.Add([]byte(`{"Documents":[{"_lsn":-4}]}`), "0:9223372036854775807")
	f.Add([]byte(`{"Documents":[{"_lsn":0}]}`), "0:9223372036854775807")
	f.Add([]byte(`{"Documents":[{"current":{"id":"a","_lsn":5},"metadata":{"lsn":3,"operationType":"replace","previousImageLSN":2,"crts":1}}]}`), "0:-1#9")
	f.Add([]byte(`{"Documents":[{"current":{},"metadata":{"lsn":7,"operationType":"delete","timeToLiveExpired":true,"crts":1}}]}`), "0:7")
	f.Fuzz(func(t *testing.T, body []byte, token string) {
		for _, mode := range []lease.Mode{lease.LatestVersion, lease.AllVersionsAndDeletes} {
			lag, err := lagOfPage(body, token, "0", mode)
			if err != nil {
				continue
			}
			if lag < 0 {
				t.Fatalf("%v: negative lag %d", mode, lag)
			}
			if lag > 0 {
				if _, perr := SessionLSN(token, "0"); perr != nil {
					t.Fatalf("%v: lag %d without a valid session token %q", mode, lag, token)
				}
			}
		}
	})
}

func TestLagOfPage(t *testing.T) {
	for _, tc := range []struct {
		body, token string
		want        int64
	}{
		{`{"Documents":[{"_lsn":101}]}`, "0:-1#110", 10},
		{`{"Documents":[]}`, "garbage", 0},
		{`{"Documents":[{"_lsn":120}]}`, "0:110", 0},
		{`{"Documents":[{"_lsn":0}]}`, "0:9223372036854775807", 9223372036854775807},
	} {
		got, err := lagOfPage([]byte(tc.body), tc.token, "0", lease.LatestVersion)
		if err != nil || got != tc.want {
			t.Errorf("lagOfPage(%s, %s) = %d, %v; want %d", tc.body, tc.token, got, err, tc.want)
		}
	}
	for _, body := range []string{`{"Documents":[{"_lsn":1.5}]}`, `{"Documents":[{"_lsn":"7"}]}`, `{"Documents":[{}]}`, `{`} {
		if got, err := lagOfPage([]byte(body), "0:9", "0", lease.LatestVersion); err == nil {
			t.Errorf("lagOfPage(%s) = %d, want an error", body, got)
		}
	}
}

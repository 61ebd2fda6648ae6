package emulator

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// lagOf is the lag one estimate reads for a lease with token rangeID
// (a PK-range lease, checkpointed at LSN 16) whose change feed read
// answers body with x-ms-session-token sessionToken.
func lagOf(t testing.TB, rangeID, body, sessionToken string, allVersionsAndDeletes bool) (int64, error) {
	t.Helper()
	mode := "Incremental Feed"
	if allVersionsAndDeletes {
		mode = "Full-Fidelity Feed"
	}
	token, _ := jsonString(rangeID)
	a := &scriptedAccount{
		leases: []string{leaseDoc(rangeID, `"version":0,"LeaseToken":`+token+`,"ContinuationToken":"\"16\"","Mode":"`+mode+`"`)},
		feed:   feedPage(body, sessionToken),
	}
	e, err := a.estimate(t)
	if err != nil {
		return 0, err
	}
	if len(e.Leases) != 1 {
		t.Fatalf("%d leases, want 1", len(e.Leases))
	}
	return e.Leases[0].Lag, nil
}

// jsonString is s as a JSON string; false when JSON cannot hold it as it is.
func jsonString(s string) (string, bool) {
	b, err := json.Marshal(s)
	return string(b), err == nil && utf8.ValidString(s)
}

// The lag is sessionLSN - firstItemLSN + 1; the session LSN is read from
// every form of x-ms-session-token the service writes: simple, versioned,
// vector, and lists of several ranges (the entry of the lease's range).
func TestSessionTokenForms(t *testing.T) {
	for header, want := range map[string]int64{
		"3:12345":                   12345,
		"3:-1#12345":                12345,
		"3:1#12345#1=12340#2=12333": 12345,
		"1:-1#7,3:-1#99":            99,
		"3:9223372036854775807":     math.MaxInt64,
	} {
		got, err := lagOf(t, "3", `{"Documents":[{"_lsn":1}]}`, header, false)
		if err != nil || got != want {
			t.Errorf("session token %q: lag %d, %v; want %d", header, got, err, want)
		}
	}
}

// A session token the scaler cannot read fails the poll: a lease's lag is
// never guessed.
func TestMalformedSessionTokensFailThePoll(t *testing.T) {
	for _, header := range []string{"", "12345", "3:", "3:abc", "3:-1#", "3:-1#-5", "3:9223372036854775808", "1:5,2:6"} {
		if got, err := lagOf(t, "3", `{"Documents":[{"_lsn":1}]}`, header, false); err == nil {
			t.Errorf("session token %q: lag %d, want an error", header, got)
		} else if !strings.Contains(err.Error(), "session token") && !strings.Contains(err.Error(), "x-ms-session-token") {
			t.Errorf("session token %q: error %q does not say what failed", header, err)
		}
	}
}

// Latest-version pages: the first item's _lsn, an empty page is no lag,
// a session behind the item is no lag, and the distance saturates.
func TestLatestVersionPages(t *testing.T) {
	for _, tc := range []struct {
		body, token string
		want        int64
	}{
		{`{"Documents":[{"_lsn":101}]}`, "0:-1#110", 10},
		{`{"Documents":[]}`, "garbage", 0},
		{`{"Documents":[{"_lsn":120}]}`, "0:110", 0},
		{`{"Documents":[{"_lsn":0}]}`, "0:9223372036854775807", math.MaxInt64},
		// An item's own "metadata" field is user data in this mode.
		{`{"Documents":[{"id":"1","metadata":{"lsn":1},"_lsn":35}]}`, "0:40", 6},
	} {
		got, err := lagOf(t, "0", tc.body, tc.token, false)
		if err != nil || got != tc.want {
			t.Errorf("page %s, token %s: lag %d, %v; want %d", tc.body, tc.token, got, err, tc.want)
		}
	}
	for _, body := range []string{`{"Documents":[{"_lsn":1.5}]}`, `{"Documents":[{"_lsn":"7"}]}`, `{"Documents":[{}]}`, `{`} {
		if got, err := lagOf(t, "0", body, "0:9", false); err == nil {
			t.Errorf("page %s: lag %d, want an error", body, got)
		}
	}
}

// In all-versions-and-deletes mode the lag starts at the first pending
// change's metadata.lsn, whatever it is: a delete (no current item at all),
// a TTL expiry, or an intermediate replace whose item has since changed again.
func TestAllVersionsPages(t *testing.T) {
	for _, tc := range []struct {
		name, body, token string
		want              int64
	}{
		{"a delete is pending", `{"_rid":"x","Documents":[{"current":{},"metadata":{"lsn":31,"crts":1722455972,"operationType":"delete","previousImageLSN":30,"timeToLiveExpired":false,"id":"1","partitionKey":{"pk":"1"}}}],"_count":1}`, "0:-1#40", 10},
		{"a TTL expiry is pending", `{"Documents":[{"current":{},"metadata":{"lsn":40,"crts":1,"operationType":"delete","timeToLiveExpired":true,"id":"1","partitionKey":{"pk":"1"}}}]}`, "0:40", 1},
		{"an intermediate version, not its item's latest _lsn", `{"Documents":[{"current":{"id":"1","_lsn":38},"metadata":{"lsn":21,"crts":1,"operationType":"replace","previousImageLSN":20}}]}`, "0:1#40#1=39", 20},
		{"no change", `{"Documents":[],"_count":0}`, "0:40", 0},
		{"session behind the change", `{"Documents":[{"current":{"id":"1"},"metadata":{"lsn":41,"crts":1,"operationType":"create"}}]}`, "0:40", 0},
		{"a pending delete alone", `{"Documents":[{"current":{},"metadata":{"lsn":12,"crts":1,"operationType":"delete","previousImageLSN":11,"id":"a","partitionKey":{"pk":"a"}}}],"_count":1}`, "0:-1#12", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lagOf(t, "0", tc.body, tc.token, true)
			if err != nil || got != tc.want {
				t.Fatalf("lag %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	for name, body := range map[string]string{
		"no metadata (a latest-version page)": `{"Documents":[{"id":"1","_lsn":21}]}`,
		"metadata without lsn":                `{"Documents":[{"current":{},"metadata":{"operationType":"delete"}}]}`,
		"lsn not an integer":                  `{"Documents":[{"current":{},"metadata":{"lsn":"21"}}]}`,
		"negative lsn":                        `{"Documents":[{"current":{},"metadata":{"lsn":-1}}]}`,
		"truncated":                           `{"Documents":[{"current":{},"meta`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := lagOf(t, "0", body, "0:40", true); err == nil {
				t.Fatalf("lag %d, want an error: a change whose position cannot be read must not count as no work", got)
			}
		})
	}
}

// A lease of an all-versions-and-deletes processor is read the way the SDKs
// read that mode: A-IM "Full-Fidelity Feed" with the 2021-09-15 wire format,
// from the lease's continuation, one change, through the lease's range. A
// latest-version lease is read without the wire format header.
func TestEachLeaseIsReadInItsProcessorsMode(t *testing.T) {
	for _, tc := range []struct {
		mode, aim, wireFormat string
	}{
		{"Incremental Feed", "Incremental feed", ""},
		{"Full-Fidelity Feed", "Full-Fidelity Feed", "2021-09-15"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			a := &scriptedAccount{leases: []string{leaseDoc("3", `"version":0,"LeaseToken":"3","ContinuationToken":"\"17\"","Mode":"`+tc.mode+`"`)}}
			if _, err := a.estimate(t); err != nil {
				t.Fatal(err)
			}
			h := a.lastRead()
			for name, want := range map[string]string{
				"A-IM": tc.aim, "x-ms-cosmos-changefeed-wire-format-version": tc.wireFormat,
				"If-None-Match": `"17"`, "x-ms-max-item-count": "1", "x-ms-documentdb-partitionkeyrangeid": "3",
				"x-ms-version": "2020-11-05", "x-ms-cosmos-sdk-supportedcapabilities": "1",
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

// sessionLSNBySplit is the reference reading of a session token, written
// with strings.Split; the scaler's own reading must agree with it.
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

// FuzzSessionToken: with the first pending item at LSN 1 the lag is the
// session LSN itself, so any header either fails the poll or yields exactly
// what the reference reading gives, a number that appears verbatim in it
// (never a wrapped or invented one).
func FuzzSessionToken(f *testing.F) {
	for _, seed := range []string{"3:12345", "3:-1#12345", "3:1#12345#1=12340#2=12333", "1:-1#7,3:-1#99", " 3:5 , 3:6", "3:#7", "3:7#", ",", "3:1#2#3", "", "3:", "3:-1#", "3:9223372036854775808"} {
		f.Add(seed, "3")
	}
	f.Fuzz(func(t *testing.T, header, rangeID string) {
		if _, ok := jsonString(rangeID); !ok || rangeID == "" || strings.ContainsAny(rangeID, "\x00\r\n") {
			t.Skip("not a lease token a lease document can hold")
		}
		lag, err := lagOf(t, rangeID, `{"Documents":[{"_lsn":1}]}`, header, false)
		want, ok := sessionLSNBySplit(header, rangeID)
		if (err == nil) != ok || (ok && lag != want) {
			t.Fatalf("session token %q for range %q: lag %d, %v; reference %d, %v", header, rangeID, lag, err, want, ok)
		}
		if err == nil && lag > 0 && !strings.Contains(header, strconv.FormatInt(lag, 10)) {
			t.Fatalf("session token %q: lag %d is not in it", header, lag)
		}
	})
}

// FuzzChangeFeedPage: whatever page and session token the wire brings, in
// either mode, the lag is an error or a number in [0, MaxInt64], and a
// positive lag comes with a session token the reference can read.
func FuzzChangeFeedPage(f *testing.F) {
	f.Add([]byte(`{"_rid":"x","Documents":[{"id":"a","_lsn":101}],"_count":1}`), "0:-1#110")
	f.Add([]byte(`{"Documents":[],"_count":0}`), "0:5")
	f.Add([]byte(`{"Documents":[{"_lsn":1e3}]}`), "0:1#2000#1=1990")
	f.Add([]byte(`{"Documents":[{"_lsn":-4}]}`), "0:9223372036854775807")
	f.Add([]byte(`{"Documents":[{"_lsn":0}]}`), "0:9223372036854775807")
	f.Add([]byte(`{"Documents":[{"current":{"id":"a","_lsn":5},"metadata":{"lsn":3,"operationType":"replace","previousImageLSN":2,"crts":1}}]}`), "0:-1#9")
	f.Add([]byte(`{"Documents":[{"current":{},"metadata":{"lsn":7,"operationType":"delete","timeToLiveExpired":true,"crts":1}}]}`), "0:7")
	f.Fuzz(func(t *testing.T, body []byte, token string) {
		for _, avad := range []bool{false, true} {
			lag, err := lagOf(t, "0", string(body), token, avad)
			if err != nil {
				continue
			}
			if lag < 0 {
				t.Fatalf("all versions and deletes %v: negative lag %d", avad, lag)
			}
			if _, ok := sessionLSNBySplit(token, "0"); lag > 0 && !ok {
				t.Fatalf("all versions and deletes %v: lag %d without a valid session token %q", avad, lag, token)
			}
		}
	})
}

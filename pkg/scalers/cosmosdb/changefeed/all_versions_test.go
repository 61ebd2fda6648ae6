package changefeed

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// recordingFeed answers every change feed read with one canned page and
// keeps the headers of the last request.
type recordingFeed struct {
	status       int
	body         []byte
	sessionToken string

	mu   sync.Mutex
	last http.Header
}

func (f *recordingFeed) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.last = req.Header.Clone()
	f.mu.Unlock()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Etag", `"9"`)
	h.Set("X-Ms-Session-Token", f.sessionToken)
	h.Set("X-Ms-Request-Charge", "1")
	return &http.Response{
		StatusCode: f.status, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)),
	}, nil
}

func (f *recordingFeed) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func newRecordingReader(t *testing.T, feed *recordingFeed) *Reader {
	t.Helper()
	a, _, err := account.Resolve(account.Settings{Connection: "AccountEndpoint=https://avad.documents.azure.com:443/;AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=;"}, account.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return NewReader(rest.NewClient(a, rest.ClientOptions{Transport: feed}), "appdb", "orders")
}

// A lease of an all-versions-and-deletes processor is read the way the SDKs
// read that mode: A-IM "Full-Fidelity Feed" with the 2021-09-15 wire format,
// from the lease's continuation, one change, through the lease's range. A
// latest-version lease is read as before, without the wire format header.
func TestLagReadsEachLeaseInItsProcessorsMode(t *testing.T) {
	cases := []struct {
		mode       lease.Mode
		aim        string
		wireFormat string
	}{
		{lease.LatestVersion, "Incremental feed", ""},
		{lease.AllVersionsAndDeletes, "Full-Fidelity Feed", "2021-09-15"},
	}
	for _, tc := range cases {
		t.Run(tc.mode.String(), func(t *testing.T) {
			feed := &recordingFeed{status: http.StatusNotModified, sessionToken: "3:-1#40"}
			r := newRecordingReader(t, feed)
			if _, err := r.Lag(context.Background(), lease.Lease{Token: "3", Continuation: `"17"`, Mode: tc.mode}); err != nil {
				t.Fatal(err)
			}
			h := feed.lastHeader()
			for name, want := range map[string]string{
				"A-IM": tc.aim, "x-ms-cosmos-changefeed-wire-format-version": tc.wireFormat,
				"If-None-Match": `"17"`, "x-ms-max-item-count": "1", "x-ms-documentdb-partitionkeyrangeid": "3",
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

// In all-versions-and-deletes mode the lag starts at the first pending
// change's metadata.lsn, whatever it is: a delete (no current item at all),
// a TTL expiry, or an intermediate replace whose item has since changed again.
func TestLagOfAllVersionsPage(t *testing.T) {
	for _, tc := range []struct {
		name, body, token string
		want              int64
	}{
		{"a delete is pending", `{"_rid":"x","Documents":[{"current":{},"metadata":{"lsn":31,"crts":1722455972,"operationType":"delete","previousImageLSN":30,"timeToLiveExpired":false,"id":"1","partitionKey":{"pk":"1"}}}],"_count":1}`, "0:-1#40", 10},
		{"a TTL expiry is pending", `{"Documents":[{"current":{},"metadata":{"lsn":40,"crts":1,"operationType":"delete","timeToLiveExpired":true,"id":"1","partitionKey":{"pk":"1"}}}]}`, "0:40", 1},
		{"an intermediate version, not its item's latest _lsn", `{"Documents":[{"current":{"id":"1","_lsn":38},"metadata":{"lsn":21,"crts":1,"operationType":"replace","previousImageLSN":20}}]}`, "0:1#40#1=39", 20},
		{"no change", `{"Documents":[],"_count":0}`, "0:40", 0},
		{"session behind the change", `{"Documents":[{"current":{"id":"1"},"metadata":{"lsn":41,"crts":1,"operationType":"create"}}]}`, "0:40", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lagOfPage([]byte(tc.body), tc.token, "0", lease.AllVersionsAndDeletes)
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
			if got, err := lagOfPage([]byte(body), "0:40", "0", lease.AllVersionsAndDeletes); err == nil {
				t.Fatalf("lag %d, want an error: a change whose position cannot be read must not count as no work", got)
			}
		})
	}
}

// A latest-version page is read by _lsn only: an item's own "metadata"
// field is user data.
func TestLatestVersionPageIgnoresItemMetadata(t *testing.T) {
	got, err := lagOfPage([]byte(`{"Documents":[{"id":"1","metadata":{"lsn":1},"_lsn":35}]}`), "0:40", "0", lease.LatestVersion)
	if err != nil || got != 6 {
		t.Fatalf("lag %d, %v; want 6", got, err)
	}
}

// The whole read in all-versions-and-deletes mode: a pending delete alone
// makes the lease lag.
func TestLagCountsAPendingDelete(t *testing.T) {
	feed := &recordingFeed{status: http.StatusOK, sessionToken: "0:-1#12",
		body: []byte(`{"Documents":[{"current":{},"metadata":{"lsn":12,"crts":1,"operationType":"delete","previousImageLSN":11,"id":"a","partitionKey":{"pk":"a"}}}],"_count":1}`)}
	r := newRecordingReader(t, feed)
	ctx, _ := rest.WithUsage(context.Background())
	got, err := r.Lag(ctx, lease.Lease{Token: "0", Continuation: `"11"`, Mode: lease.AllVersionsAndDeletes})
	if err != nil || got != 1 {
		t.Fatalf("lag %d, %v; want 1", got, err)
	}
}

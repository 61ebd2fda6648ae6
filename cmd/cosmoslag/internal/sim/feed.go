package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// feedReader is the simulated processor's change feed client: like a real
// processor it reads its lease's partition key range over REST from the
// lease's continuation, in the processor's mode, signed with the account
// key, so after a split a child lease sees only its own half of the
// parent's backlog.
type feedReader struct {
	client                *http.Client
	endpoint, key         string // the embedded server's URL and account key
	docs                  string // the monitored container's documents: /dbs/{db}/colls/{coll}/docs
	allVersionsAndDeletes bool
}

func newFeedReader(srv *cosmostest.Server, acct Account, allVersionsAndDeletes bool) *feedReader {
	return &feedReader{client: srv.Client(), endpoint: strings.TrimSuffix(srv.URL(), "/"), key: srv.Key(),
		docs: "/dbs/" + acct.Database + "/colls/" + acct.Container + "/docs", allVersionsAndDeletes: allVersionsAndDeletes}
}

// changes is what one read of a lease's change feed returned.
type changes struct {
	Count int   // changes read, at most the number asked for; 0 when nothing follows the checkpoint
	Last  int64 // the LSN of the last change: the checkpoint to write
}

// read reads up to maxItems changes of the lease's range after its
// checkpoint: its partition key range, or for an EPK lease its EPK range
// within the physical range holding it.
func (f *feedReader) read(ctx context.Context, l *simLease, maxItems int) (changes, error) {
	const operation = "read change feed"
	rangeID := l.rangeID
	req, err := f.request(ctx, l, maxItems)
	if err != nil {
		return changes{}, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return changes{}, fmt.Errorf("%s of range %s: %w", operation, rangeID, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return changes{}, nil
	case http.StatusOK:
	default:
		return changes{}, fmt.Errorf("%s of range %s: HTTP %d %s", operation, rangeID, resp.StatusCode, resp.Header.Get("x-ms-substatus"))
	}
	c, err := f.parse(resp)
	if err != nil {
		return changes{}, fmt.Errorf("%s of range %s: %w", operation, rangeID, err)
	}
	return c, nil
}

// request is the signed change feed read of the lease's range (or EPK
// sub-range) after its checkpoint, as the SDKs send it.
func (f *feedReader) request(ctx context.Context, l *simLease, maxItems int) (*http.Request, error) {
	path := f.docs
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.endpoint+path, nil)
	if err != nil {
		return nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(f.key, http.MethodGet, path, date)
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Authorization", auth)
	h.Set("x-ms-date", date)
	h.Set("x-ms-version", "2020-11-05")
	h.Set("A-IM", "Incremental feed")
	if f.allVersionsAndDeletes {
		h.Set("A-IM", "Full-Fidelity Feed")
		h.Set("x-ms-cosmos-changefeed-wire-format-version", "2021-09-15")
	}
	h.Set("If-None-Match", strconv.Quote(strconv.FormatInt(l.checkpoint, 10)))
	h.Set("x-ms-max-item-count", strconv.Itoa(maxItems))
	h.Set("x-ms-documentdb-partitionkeyrangeid", l.rangeID)
	if l.epk {
		h.Set("x-ms-read-key-type", "EffectivePartitionKeyRange")
		h.Set("x-ms-start-epk", l.minEPK)
		h.Set("x-ms-end-epk", l.maxEPK)
	}
	// As the SDKs do: an account with partition merge enabled refuses
	// clients that do not declare the capability.
	h.Set("x-ms-cosmos-sdk-supportedcapabilities", "1")
	return req, nil
}

// parse reads a page (at most 16 MiB), counts its changes and finds the last one's LSN: the
// item's _lsn for latest versions, the change's metadata.lsn for all
// versions and deletes.
func (f *feedReader) parse(resp *http.Response) (changes, error) {
	var page struct {
		Documents []struct {
			LSN      *int64 `json:"_lsn"`
			Metadata *struct {
				LSN *int64 `json:"lsn"`
			} `json:"metadata"`
		}
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 16<<20)).Decode(&page); err != nil {
		return changes{}, fmt.Errorf("malformed or too large response body: %w", err)
	}
	c := changes{Count: len(page.Documents)}
	if c.Count == 0 {
		return c, nil
	}
	last := page.Documents[c.Count-1]
	lsn := last.LSN
	if f.allVersionsAndDeletes {
		lsn = nil
		if last.Metadata != nil {
			lsn = last.Metadata.LSN
		}
	}
	if lsn == nil {
		return changes{}, errors.New("the last change has no LSN")
	}
	c.Last = *lsn
	return c, nil
}

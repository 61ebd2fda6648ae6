package main

import (
	"context"
	"net/http"
	"strconv"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
)

// feedReader is the simulated processor's change feed client: like a real
// processor it reads its lease's partition key range over REST from the
// lease's continuation, so after a split a child lease sees only its own
// half of the parent's backlog.
type feedReader struct {
	client              *account.Client
	database, container string
}

func newFeedReader(srv *cosmostest.Server, database, container string) (*feedReader, error) {
	data, _, err := account.Resolve(account.Settings{Connection: srv.ConnectionString()}, account.CredentialOptions{})
	if err != nil {
		return nil, err
	}
	return &feedReader{
		client:   account.NewClient(data, account.ClientOptions{Transport: srv.Client()}),
		database: database, container: container,
	}, nil
}

// read returns how many changes follow continuation in the range, up to
// maxItems, and the LSN of the last one (continuation when there are none).
func (f *feedReader) read(ctx context.Context, rangeID string, continuation int64, maxItems int) (int, int64, error) {
	req, err := f.client.NewRequest(ctx, http.MethodGet, "dbs", f.database, "colls", f.container, "docs")
	if err != nil {
		return 0, continuation, err
	}
	h := req.Raw().Header
	h.Set("A-IM", "Incremental feed")
	h.Set("If-None-Match", strconv.Quote(strconv.FormatInt(continuation, 10)))
	h.Set("x-ms-max-item-count", strconv.Itoa(maxItems))
	h.Set("x-ms-documentdb-partitionkeyrangeid", rangeID)
	const operation = "processor: read change feed"
	resp, err := f.client.Do(req, operation, http.StatusOK, http.StatusNotModified)
	if err != nil {
		return 0, continuation, err
	}
	if resp.StatusCode == http.StatusNotModified {
		resp.Body.Close()
		return 0, continuation, nil
	}
	var page struct {
		Documents []struct {
			LSN int64 `json:"_lsn"`
		} `json:"Documents"`
	}
	if err := account.DecodeJSON(resp, operation, &page); err != nil {
		return 0, continuation, err
	}
	last := continuation
	for _, d := range page.Documents {
		last = max(last, d.LSN)
	}
	return len(page.Documents), last, nil
}

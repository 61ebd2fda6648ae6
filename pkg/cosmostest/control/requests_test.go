package control_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// GET /control/requests lists the Cosmos DB requests the account answered,
// with their status, range and headers, the Authorization signature
// redacted.
func TestRequestLog(t *testing.T) {
	const key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
	c, srv := newControl(t, cosmostest.WithKey(key))
	setUp(t, c, 2)
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(key, http.MethodGet, "/dbs/db/colls/items/docs", date)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"dbs/db/colls/items/docs", nil)
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-Ms-Date", date)
	req.Header.Set("X-Ms-Version", "2018-12-31")
	req.Header.Set("A-Im", "Incremental feed")
	req.Header.Set("X-Ms-Documentdb-Partitionkeyrangeid", "1")
	req.Header.Set("X-Ms-Max-Item-Count", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	log, err := c.Requests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Requests) != 1 {
		t.Fatalf("%d requests logged, want 1: %+v", len(log.Requests), log.Requests)
	}
	r := log.Requests[0]
	if r.Kind != "changefeed" || r.Method != http.MethodGet || r.RangeID != "1" || r.Status != resp.StatusCode || r.Header["X-Ms-Max-Item-Count"][0] != "1" || r.At.IsZero() {
		t.Errorf("logged %+v", r)
	}
	if got := strings.Join(r.Header["Authorization"], ""); strings.Contains(got, auth) || !strings.Contains(got, "REDACTED") {
		t.Errorf("Authorization logged as %q", got)
	}
}

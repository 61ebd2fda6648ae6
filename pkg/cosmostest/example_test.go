package cosmostest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// Estimating one lease's lag over the wire: read one item of the lease's
// range after its checkpoint; lag = session LSN - first item's _lsn + 1.
func Example() {
	srv := cosmostest.NewServer()
	defer srv.Close()
	db := srv.Account.CreateDatabase("db")
	data := db.CreateContainer("data", "/pk", 1)
	leases := db.CreateContainer("leases", "/id", 1)
	_ = data.WriteItems("tenant-1", 10)

	proc := leasetest.NewWriter("orders", data, leases, cosmostest.DotNetV0)
	tokens, _ := proc.CreateLeases(false)
	_ = proc.Checkpoint(tokens[0], 4) // processed items up to LSN 4

	lease, _ := proc.Lease(tokens[0])
	path := "/dbs/db/colls/data/docs"
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(srv.URL(), "/")+path, nil)
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, _ := cosmostest.MasterKeyAuthorization(srv.Key(), http.MethodGet, path, date)
	req.Header.Set("Authorization", auth)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("A-IM", "Incremental feed")
	req.Header.Set("x-ms-max-item-count", "1")
	req.Header.Set("x-ms-documentdb-partitionkeyrangeid", lease["LeaseToken"].(string))
	req.Header.Set("If-None-Match", lease["ContinuationToken"].(string))
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var page struct {
		Documents []struct {
			LSN int64 `json:"_lsn"`
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&page)
	session := resp.Header.Get("x-ms-session-token") // "0:-1#10"
	sessionLSN, _ := strconv.ParseInt(session[strings.LastIndex(session, "#")+1:], 10, 64)
	fmt.Println(resp.StatusCode, session, sessionLSN-page.Documents[0].LSN+1)
	// Output: 200 0:-1#10 6
}

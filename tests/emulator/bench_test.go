package emulator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// cannedAccount answers without a network: the RID reads, one lease page
// of leases PK-range leases of processor "p", and every change feed read
// with the same one-item page.
type cannedAccount struct {
	leasePage, feedPage []byte
}

func (c cannedAccount) Do(req *http.Request) (*http.Response, error) {
	h := make(http.Header, 4)
	h["Content-Type"] = []string{"application/json"}
	body := []byte(`{"_rid":"dbRID"}`)
	switch path := req.URL.Path; {
	case req.Method == http.MethodPost:
		body = c.leasePage
	case strings.HasSuffix(path, "/docs"):
		h["Etag"] = []string{`"3"`}
		h["X-Ms-Session-Token"] = []string{"0:-1#3"}
		h["X-Ms-Request-Charge"] = []string{"1"}
		body = c.feedPage
	case strings.Contains(path, "/colls/"):
		body = []byte(`{"_rid":"collRID=="}`)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}, nil
}

// BenchmarkLeaseRead measures the client's own work per lease, without a
// network: one estimate over 64 leases (request building, the azcore
// pipeline, signing, usage counting, the bounded body read, decoding and
// the errgroup), its one lease-query page included, reported per lease.
// Compare it with BenchmarkHTTPFloor and BenchmarkCosmosDBPoll, which
// include net/http and the server.
func BenchmarkLeaseRead(b *testing.B) {
	const leases = 64
	docs := make([]string, leases)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"id":"%s%d","version":0,"LeaseToken":"%d","ContinuationToken":"\"1\""}`, scriptedPrefix, i, i)
	}
	account := cannedAccount{
		leasePage: []byte(`{"Documents":[` + strings.Join(docs, ",") + `]}`),
		feedPage:  []byte(`{"_rid":"bW9uaXRvcmVk","Documents":[{"customerId":"c-0000","id":"order-000000","_rid":"bW9uaXRvcmVkAQAAAAAAAA==","_self":"dbs/appdb/colls/orders/docs/order-000000","_etag":"\"00000000-0000-0000-0000-000000000000\"","_attachments":"attachments/","_ts":1764489600,"_lsn":2}],"_count":1}`),
	}
	data, leaseConn, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: scriptedConnection}, account, logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	e := azure.NewCosmosDBLagEstimator(azure.NewCosmosDBClient(data, account), azure.NewCosmosDBClient(leaseConn, account),
		azure.CosmosDBContainers{Database: "appdb", Container: "orders", LeaseDatabase: "appdb", LeaseContainer: "leases", Processor: "p"})
	estimate := func() {
		res, err := e.Estimate(context.Background())
		if err != nil || len(res.Leases) != leases || res.Leases[0].Lag != 2 { // session LSN 3, first pending item 2
			b.Fatalf("%d leases, lag %v, %v; want %d leases of lag 2", len(res.Leases), res.Leases, err, leases)
		}
	}
	estimate() // the RIDs
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		estimate()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*leases), "ns/lease")
}

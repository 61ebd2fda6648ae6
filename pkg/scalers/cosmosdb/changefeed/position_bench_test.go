package changefeed

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// cannedFeed answers every request with the same one-item change feed page,
// without a network: what is left is the client's own work per lease read
// (request building, the azcore pipeline, signing, usage accounting, the
// bounded body read and the decode).
type cannedFeed struct{ body []byte }

func (c cannedFeed) Do(req *http.Request) (*http.Response, error) {
	h := make(http.Header, 4)
	h["Content-Type"] = []string{"application/json"}
	h["Etag"] = []string{`"3"`}
	h["X-Ms-Session-Token"] = []string{"0:-1#3"}
	h["X-Ms-Request-Charge"] = []string{"1"}
	return &http.Response{
		StatusCode: http.StatusOK, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
	}, nil
}

// BenchmarkLeaseRead measures one lease's read on the client side alone.
// Compare it with BenchmarkHTTPFloor and BenchmarkCosmosDBPoll in
// pkg/scalers, which include net/http and the server.
func BenchmarkLeaseRead(b *testing.B) {
	body := []byte(`{"_rid":"bW9uaXRvcmVk","Documents":[{"customerId":"c-0000","id":"order-000000","_rid":"bW9uaXRvcmVkAQAAAAAAAA==","_self":"dbs/appdb/colls/orders/docs/order-000000","_etag":"\"00000000-0000-0000-0000-000000000000\"","_attachments":"attachments/","_ts":1764489600,"_lsn":2}],"_count":1}`)
	a, _, err := account.Resolve(account.Settings{Connection: "AccountEndpoint=https://bench.documents.azure.com:443/;AccountKey=c2VjcmV0LWtleS1mb3ItYmVuY2htYXJrcw==;"}, account.CredentialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	client := rest.NewClient(a, rest.ClientOptions{Transport: cannedFeed{body: body}})
	r := NewReader(client, "appdb", "orders")
	ctx, _ := rest.WithUsage(context.Background())
	leases := make([]lease.Lease, 64)
	for i := range leases {
		leases[i] = lease.Lease{ID: "p..0", Token: strconv.Itoa(i), Continuation: `"1"`}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		lag, err := r.Lag(ctx, leases[i%len(leases)])
		if err != nil || lag != 2 { // session LSN 3, first pending item 2
			b.Fatalf("lag %d, %v; want 2", lag, err)
		}
		i++
	}
}

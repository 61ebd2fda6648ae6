package emulator

// The poll benchmarks use only the scaler's constructor and the embedded
// server, so that hack/bench-walltime.sh can build this file (with this
// tree's pkg/cosmostest and main_test.go) against an older revision's
// scaler: every build then runs the same harness and server.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// leasePageSize is the page size the scaler asks of the lease query
// (x-ms-max-item-count); TestTenThousandLeases holds it.
const leasePageSize = 1000

// benchLeaseCounts are the processor sizes both benchmarks measure.
var benchLeaseCounts = []int{1, 100, 1000, 10000}

// floorReadConcurrency is how many readers BenchmarkHTTPFloor runs: the
// scaler's reads in flight at most, its container's bound
// cosmosDBContainerRequests (unexported in package azure; keep the two
// equal). It was 256 until e95be19 and from 78de8b8 to issue AG, 32 in
// between, 128 since AG, so floor figures of other ranges are not
// comparable.
const floorReadConcurrency = 128

// goroutinesCreated is how many goroutines this process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// reportGoroutines reports the goroutines this process started per timed
// poll since before (a goroutinesCreated value): the client's, the server's
// and the runtime's.
func reportGoroutines(b *testing.B, before uint64, polls int) {
	if polls > 0 {
		b.ReportMetric(float64(goroutinesCreated()-before)/float64(polls), "goroutines/poll")
	}
}

// reportInFlight reports requests*latency/(time per poll) as "in-flight":
// how many requests waited on the added latency at once, on average over
// the timed polls. It cannot exceed the readers (leases with fewer); when it
// stays far below them, the poll's time goes to something other than the
// service's latency (CPU, or readers waiting for each other).
func reportInFlight(b *testing.B, requestsPerPoll float64, latency time.Duration, polls int) {
	if polls == 0 || b.Elapsed() <= 0 {
		return
	}
	perPoll := b.Elapsed() / time.Duration(polls)
	b.ReportMetric(requestsPerPoll*latency.Seconds()/perPoll.Seconds(), "in-flight")
}

// Goroutines started under these pprof labels inherit them, so a CPU profile
// of the benchmark (-cpuprofile) splits into the scaler's side and the
// embedded server's: go tool pprof -tagfocus side=client (or side=server).
// The runtime's own work (GC workers) carries neither.
var (
	serverSide = pprof.Labels("side", "server")
	clientSide = pprof.Labels("side", "client")
)

// benchLatency is the latency added to every request: 2 ms, or
// COSMOSDB_BENCH_LATENCY (a Go duration) to model a farther account.
func benchLatency(b *testing.B) time.Duration {
	if v := os.Getenv("COSMOSDB_BENCH_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("COSMOSDB_BENCH_LATENCY: %v", err)
		}
		return d
	}
	return 2 * time.Millisecond
}

// benchQueryPage is the smaller lease-query page BenchmarkCosmosDBPoll also
// measures: a lease container with several physical partitions answers a
// page or more from each, and the service ends a page at 4 MB, so a real
// lease query often comes back in pages of far fewer than the 1,000 asked.
const benchQueryPage = 100

// BenchmarkCosmosDBPoll measures one steady-state poll of the scaler against
// the embedded server with 2 ms added to every request, for growing lease
// counts, one physical range per lease. Every lease has pending work, so
// every read returns an item. leases=N: the lease query answers the 1,000
// documents a page asked for; leases=N,page=100: at most benchQueryPage.
// Reported: time per poll, requests per poll, allocations per poll.
func BenchmarkCosmosDBPoll(b *testing.B) {
	type shape struct {
		leases, page int // page 0: as many as asked
	}
	var shapes []shape
	for _, leases := range benchLeaseCounts {
		shapes = append(shapes, shape{leases, 0})
		if leases+2 > benchQueryPage { // the leases, .info and .lock
			shapes = append(shapes, shape{leases, benchQueryPage})
		}
	}
	for _, sh := range shapes {
		leases, name := sh.leases, fmt.Sprintf("leases=%d", sh.leases)
		var opts []cosmostest.Option
		if sh.page > 0 {
			name += fmt.Sprintf(",page=%d", sh.page)
			opts = append(opts, cosmostest.WithQueryPageLimit(sh.page))
		}
		b.Run(name, func(b *testing.B) {
			var srv *cosmostest.Server
			pprof.Do(context.Background(), serverSide, func(context.Context) { srv = cosmostest.NewServer(opts...) })
			defer srv.Close()
			if _, err := leasetest.LaggingLeases(srv.Account, "orders-processor", leases, 3); err != nil {
				b.Fatal(err)
			}
			config := &scalersconfig.ScalerConfig{
				TriggerMetadata: map[string]string{
					"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
					"leaseContainerId": "leases", "processorName": "orders-processor", "changeFeedLagThreshold": "1",
				},
				AuthParams:        map[string]string{"connection": srv.ConnectionString()},
				ResolvedEnv:       map[string]string{},
				GlobalHTTPTimeout: 30 * time.Second,
				TriggerType:       "azure-cosmosdb",
			}
			s, err := scalers.NewAzureCosmosDBScaler(config)
			if err != nil {
				b.Fatal(err)
			}
			latency := benchLatency(b)
			srv.Handler.SetLatency(latency)
			want := int64(leases)
			pollOnce := func() {
				metrics, _, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
				if err != nil {
					b.Fatal(err)
				}
				if got := metrics[0].Value.Value(); got != want {
					b.Fatalf("metric %d, want %d", got, want)
				}
			}
			// The connections opened here serve the timed polls; their
			// goroutines take the label of the goroutine that opens them.
			pprof.Do(context.Background(), clientSide, func(context.Context) { pollOnce() }) // resolve RIDs, open connections
			srv.Handler.ResetRequests()
			b.ReportAllocs()
			b.ResetTimer()
			polls, started := 0, goroutinesCreated()
			pprof.Do(context.Background(), clientSide, func(context.Context) {
				for b.Loop() {
					pollOnce()
					polls++
				}
			})
			b.StopTimer()
			requests := float64(len(srv.Handler.Requests())) / float64(polls)
			b.ReportMetric(requests, "requests/poll")
			reportInFlight(b, requests, latency, polls)
			reportGoroutines(b, started, polls)
		})
	}
}

// BenchmarkHTTPFloor is the reference for BenchmarkCosmosDBPoll: the same
// shape of poll (the lease-query pages one after another, then one request
// per lease with floorReadConcurrency in flight), the same added latency
// and a response of the same size, but a bare net/http client and a server
// that only waits and answers. No signing, retries, Cosmos DB logic or
// decoding on either side: what is left is the cost of HTTP/1.1 itself in
// this process on this machine, which no scaler can go below. The gap
// between the two benchmarks is what the scaler and the embedded server add.
func BenchmarkHTTPFloor(b *testing.B) {
	body := []byte(`{"_rid":"bW9uaXRvcmVk","Documents":[{"customerId":"c-0000","id":"order-000000","_rid":"bW9uaXRvcmVkAQAAAAAAAA==","_self":"dbs/appdb/colls/orders/docs/order-000000","_etag":"\"00000000-0000-0000-0000-000000000000\"","_attachments":"attachments/","_ts":1764489600,"_lsn":2}],"_count":1}`)
	for _, leases := range benchLeaseCounts {
		b.Run(fmt.Sprintf("leases=%d", leases), func(b *testing.B) {
			latency := benchLatency(b)
			var srv *httptest.Server
			pprof.Do(context.Background(), serverSide, func(context.Context) {
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					t := time.NewTimer(latency)
					defer t.Stop()
					select {
					case <-t.C:
					case <-r.Context().Done():
						return
					}
					h := w.Header()
					h.Set("Content-Type", "application/json")
					h.Set("Etag", `"3"`)
					h.Set("X-Ms-Session-Token", "0:-1#3")
					h.Set("X-Ms-Request-Charge", "1")
					w.Write(body)
				}))
			})
			defer srv.Close()
			transport := &http.Transport{MaxIdleConnsPerHost: 1000}
			defer transport.CloseIdleConnections()
			send := func() {
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/dbs/appdb/colls/orders/docs", nil)
				if err != nil {
					b.Error(err) // send runs on worker goroutines: no Fatal there
					return
				}
				req.Header.Set("A-Im", "Incremental feed")
				req.Header.Set("If-None-Match", `"1"`)
				req.Header.Set("X-Ms-Max-Item-Count", "1")
				req.Header.Set("X-Ms-Documentdb-Partitionkeyrangeid", "0")
				req.Header.Set("X-Ms-Version", "2020-11-05")
				req.Header.Set("X-Ms-Date", time.Now().UTC().Format(http.TimeFormat))
				req.Header.Set("Authorization", "type%3Dmaster%26ver%3D1.0%26sig%3DAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%3D")
				resp, err := transport.RoundTrip(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			// The lease container holds the leases plus the processor's
			// .info and .lock documents, served leasePageSize a page.
			pages := (leases + 2 + leasePageSize - 1) / leasePageSize
			poll := func() {
				for range pages {
					send()
				}
				work := make(chan struct{})
				var wg sync.WaitGroup
				for range min(leases, floorReadConcurrency) {
					wg.Go(func() {
						for range work {
							send()
						}
					})
				}
				for range leases {
					work <- struct{}{}
				}
				close(work)
				wg.Wait()
			}
			pprof.Do(context.Background(), clientSide, func(context.Context) { poll() }) // open the connections
			b.ReportAllocs()
			b.ResetTimer()
			polls, started := 0, goroutinesCreated()
			pprof.Do(context.Background(), clientSide, func(context.Context) {
				for b.Loop() {
					poll()
					polls++
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(pages+leases), "requests/poll")
			reportInFlight(b, float64(pages+leases), latency, polls)
			reportGoroutines(b, started, polls)
		})
	}
}

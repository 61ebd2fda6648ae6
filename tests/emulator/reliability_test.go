package emulator

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
)

// lagging3 is an env whose three leases hold 10, 20 and 30 pending items.
func lagging3(t *testing.T) (*cosmosEnv, scalers.Scaler) {
	t.Helper()
	env := newCosmosEnv(t, 3, dotNetV0)
	for i, r := range []string{"0", "1", "2"} {
		env.writeToRange(t, r, 10*(i+1))
	}
	s := newScaler(t, scalerConfig(env.metadata("changeFeedLagThreshold", "1000"), keyAuth(env.server)))
	if metric, _ := poll(t, s); metric != 60 {
		t.Fatalf("baseline metric %d, want 60", metric)
	}
	return env, s
}

// Throttling and transient faults are retried a bounded number of times and
// the poll then returns exactly the metric it returns without them.
func TestTransientFaultsAreRetriedToTheSameMetric(t *testing.T) {
	cases := []struct {
		name  string
		fault cosmostest.Fault
		extra int // requests beyond the fault-free poll
	}{
		{"429 on a read", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "1", Status: http.StatusTooManyRequests, RetryAfter: 20 * time.Millisecond, Times: 2}, 2},
		{"429 on the lease query", cosmostest.Fault{Kind: cosmostest.KindQuery, Status: http.StatusTooManyRequests, RetryAfter: 10 * time.Millisecond, Times: 3}, 3},
		{"503 on a read", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "2", Status: http.StatusServiceUnavailable, Times: 1}, 1},
		{"500 on a read", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", Status: http.StatusInternalServerError, Times: 2}, 2},
		{"dropped connections", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", DropConnection: true, Times: 2}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, s := lagging3(t)
			env.server.Handler.ResetRequests()
			poll(t, s)
			clean := len(env.server.Handler.Requests())
			env.server.Handler.InjectFault(tc.fault)
			env.server.Handler.ResetRequests()
			if metric, active := poll(t, s); metric != 60 || !active {
				t.Fatalf("metric %d active %v under %s, want 60 true", metric, active, tc.name)
			}
			// A dropped connection on a reused keep-alive connection may be
			// retried once more by net/http itself, below azcore.
			if got := len(env.server.Handler.Requests()) - clean; got < tc.extra || got > tc.extra+1 {
				t.Fatalf("%d extra requests, want %d", got, tc.extra)
			}
		})
	}
}

// Throttling that outlasts the retries, or whose retry-after is beyond the
// 2 s the scaler waits at most, fails the poll at once with an error that
// says so; a retry-after within 2 s but past the poll's deadline ends the
// poll at its deadline.
func TestPersistentThrottlingFailsSayingThrottled(t *testing.T) {
	env, s := lagging3(t)
	remove := env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "1", Status: http.StatusTooManyRequests, RetryAfter: 5 * time.Millisecond})
	assertMentions(t, pollError(t, s), "throttled", "429", "lease 1")
	remove()

	remove = env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "2", Status: http.StatusTooManyRequests, RetryAfter: 5 * time.Second})
	start := time.Now()
	assertMentions(t, pollError(t, s), "throttled", "429", "lease 2")
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("poll waited %v for a retry-after of 5s, beyond the 2s cap", elapsed)
	}
	if n := env.server.Handler.Count(cosmostest.KindChangeFeed); n == 0 {
		t.Fatal("no change feed read counted")
	}
	remove()

	env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "2", Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, _, err := s.GetMetricsAndActivity(ctx, "s0-metric"); err == nil {
		t.Fatal("throttled poll succeeded")
	}
	if elapsed := time.Since(start); elapsed > 800*time.Millisecond {
		t.Fatalf("poll took %v with a 300ms deadline", elapsed)
	}
}

// A cancelled poll returns promptly and leaves no goroutine behind.
func TestCancelledPollReturnsPromptlyWithoutLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	env := newCosmosEnv(t, 8, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	poll(t, s)
	env.server.Handler.SetLatency(10 * time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := s.GetMetricsAndActivity(ctx, "s0-metric")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the poll is now waiting on the server
	cancelled := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled poll returned %v, want context.Canceled", err)
		}
		elapsed := time.Since(cancelled)
		if elapsed > 100*time.Millisecond {
			t.Fatalf("cancelled poll took %v to return", elapsed)
		}
		t.Logf("cancelled poll returned %v after cancel", elapsed)
	case <-time.After(2 * time.Second):
		t.Fatal("cancelled poll did not return")
	}
	env.server.Handler.SetLatency(0)
	env.server.Close()
}

// KEDA's operator and metrics server may poll the same scaler at once.
func TestConcurrentPollsAgree(t *testing.T) {
	_, s := lagging3(t)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				metrics, _, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
				if err != nil {
					errs <- err
					return
				}
				if v := metrics[0].Value.Value(); v != 60 {
					errs <- errors.New("a concurrent poll disagreed: " + metrics[0].Value.String())
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A range that splits between the lease query and the change feed reads is
// the spec's split case: refresh, retry, stale parent wakes one replica.
func TestSplitBetweenQueryAndRead(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	poll(t, s)
	var once sync.Once
	env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", Times: 1, Hook: func() {
		once.Do(func() {
			if _, _, err := env.monitored.Split("0"); err != nil {
				t.Error(err)
			}
		})
	}})
	if metric, active := poll(t, s); metric != 1 || !active {
		t.Fatalf("metric %d active %v, want activation+1 = 1 and active", metric, active)
	}
}

// Responses the scaler cannot trust fail the poll: an oversized page, an
// LSN that overflows int64, a session token that is not a number.
func TestBadWireDataFailsThePoll(t *testing.T) {
	huge := make([]byte, 17<<20)
	for i := range huge {
		huge[i] = ' '
	}
	copy(huge, `{"Documents":[`)
	cases := []struct {
		name    string
		fault   cosmostest.Fault
		mention string
	}{
		{"oversized query page", cosmostest.Fault{Kind: cosmostest.KindQuery, Body: huge}, "larger than"},
		{"overflowing _lsn", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0",
			Body: []byte(`{"Documents":[{"id":"x","_lsn":99999999999999999999}],"_count":1}`), Header: http.Header{"X-Ms-Session-Token": {"0:-1#5"}}}, "_lsn"},
		{"garbage session token", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0",
			Body: []byte(`{"Documents":[{"id":"x","_lsn":3}],"_count":1}`), Header: http.Header{"X-Ms-Session-Token": {"0:-1#lots"}}}, "session token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, s := lagging3(t)
			env.server.Handler.InjectFault(tc.fault)
			assertMentions(t, pollError(t, s), tc.mention)
		})
	}
}

// 10,000 leases among 10,000 other documents: every page read, every lease
// counted, others ignored.
func TestTenThousandLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("large fixture")
	}
	srv := cosmostest.NewServer()
	t.Cleanup(srv.Close)
	p, err := leasetest.LaggingLeases(srv.Account, "orders-processor", 10000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		if _, err := p.Leases.Upsert(map[string]any{"id": "orders-processor-note-" + string(rune('a'+i%26)) + time.Duration(i).String()}); err != nil {
			t.Fatal(err)
		}
	}
	config := scalerConfig(map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
		"leaseContainerId": "leases", "processorName": "orders-processor", "changeFeedLagThreshold": "1",
	}, map[string]string{"connection": srv.ConnectionString()})
	config.GlobalHTTPTimeout = time.Minute
	s := newScaler(t, config)
	if metric, _ := poll(t, s); metric != 10000 {
		t.Fatalf("metric %d, want 10000", metric)
	}
	if q := srv.Handler.Count(cosmostest.KindQuery); q != 21 {
		t.Fatalf("%d query pages for 20,002 documents, want 21", q)
	}
}

// A lease the processor deletes between the lease query and its read (for
// example while replacing it after a split) is still estimated from what the
// query returned: the poll describes one consistent snapshot of the leases.
func TestLeaseDeletedBetweenQueryAndRead(t *testing.T) {
	env, s := lagging3(t)
	env.server.Handler.InjectFault(cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "2", Times: 1, Hook: func() {
		if !env.leases.Delete(env.processor.LeaseID("2")) {
			t.Error("lease 2 was not there to delete")
		}
	}})
	if metric, _ := poll(t, s); metric != 60 {
		t.Fatalf("metric %d, want 60 (the snapshot the query returned)", metric)
	}
	if metric, _ := poll(t, s); metric != 30 {
		t.Fatalf("next poll metric %d, want 30 (lease 2 gone)", metric)
	}
}

// KEDA's GlobalHTTPTimeout bounds each try: against a service slower than
// it, the poll fails after its retries, without a deadline of its own.
func TestGlobalHTTPTimeoutBoundsEachTry(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	config := scalerConfig(env.metadata(), keyAuth(env.server))
	config.GlobalHTTPTimeout = 50 * time.Millisecond
	s := newScaler(t, config)
	poll(t, s)
	env.server.Handler.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // ends the test if no try times out
	defer cancel()
	if _, _, err := s.GetMetricsAndActivity(ctx, "s0-metric"); err == nil {
		t.Fatal("poll succeeded against a service slower than GlobalHTTPTimeout")
	}
	if ctx.Err() != nil {
		t.Fatal("no try timed out: the poll ran until the test's own deadline")
	}
}

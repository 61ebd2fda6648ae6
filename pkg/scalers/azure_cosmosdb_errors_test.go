package scalers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/lease"
)

// Any failure fails the poll with an error naming what failed; there is no
// partial total and no cached previous value, and no secret in the message.
func TestCosmosDBFailuresFailThePoll(t *testing.T) {
	cases := []struct {
		name    string
		fault   cosmostest.Fault
		mention []string
	}{
		{"lease query rejected", cosmostest.Fault{Kind: cosmostest.KindQuery, Status: http.StatusBadRequest}, []string{"query leases", "400"}},
		{"lease query keeps failing", cosmostest.Fault{Kind: cosmostest.KindQuery, Status: http.StatusServiceUnavailable}, []string{"query leases", "503"}},
		{"lease query malformed", cosmostest.Fault{Kind: cosmostest.KindQuery, MalformedBody: true}, []string{"query leases", "malformed"}},
		{"change feed read fails for one lease", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "1", Status: http.StatusInternalServerError}, []string{"lease 1", "500"}},
		{"change feed malformed", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "2", MalformedBody: true}, []string{"lease 2", "malformed"}},
		{"change feed not found", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", Status: http.StatusNotFound, SubStatus: 1002}, []string{"lease 0", "404", "substatus 1002"}},
		{"connection dropped", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", DropConnection: true}, []string{"lease 0"}},
		{"throttled beyond retries", cosmostest.Fault{Kind: cosmostest.KindChangeFeed, RangeID: "0", Status: http.StatusTooManyRequests, RetryAfter: time.Millisecond}, []string{"lease 0", "429", "throttled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newCosmosEnv(t, 3, lease.DotNetV0)
			for _, r := range []string{"0", "1", "2"} {
				env.writeToRange(t, r, 10)
			}
			s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))
			if metric, _ := pollCosmosDB(t, s); metric != 30 {
				t.Fatalf("healthy poll metric %d, want 30", metric)
			}
			env.server.InjectFault(tc.fault)
			err := pollCosmosDBError(t, s)
			assertCosmosDBError(t, err, tc.mention...)
			assertNoCosmosDBSecret(t, err.Error(), env.server)
		})
	}
}

// A wrong account key is an authentication failure of the poll.
func TestCosmosDBWrongKeyFailsThePoll(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), map[string]string{"endpoint": env.server.URL(), "cosmosDBKey": cosmosDBCanaryKey}))
	err := pollCosmosDBError(t, s)
	assertCosmosDBError(t, err, "401")
	if strings.Contains(err.Error(), cosmosDBCanaryKey) {
		t.Fatalf("error leaks the key: %v", err)
	}
}

// A missing monitored container is reported, not read as zero lag.
func TestCosmosDBMissingMonitoredContainer(t *testing.T) {
	env := newCosmosEnv(t, 1, lease.DotNetV0)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata("containerId", "nosuchcontainer"), cosmosDBKeyAuth(env.server)))
	assertCosmosDBError(t, pollCosmosDBError(t, s), "nosuchcontainer", "404")
}

// The poll honours its context: a deadline shorter than the service's
// latency fails the poll promptly.
func TestCosmosDBPollHonoursContextDeadline(t *testing.T) {
	env := newCosmosEnv(t, 2, lease.DotNetV0)
	s := newCosmosDBTestScaler(t, cosmosDBScalerConfig(env.metadata(), cosmosDBKeyAuth(env.server)))
	pollCosmosDB(t, s)
	env.server.SetLatency(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := s.GetMetricsAndActivity(ctx, "s0-metric"); err == nil {
		t.Fatal("poll succeeded past its deadline")
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("poll took %v after a 100ms deadline", elapsed)
	}
}

func assertNoCosmosDBSecret(t *testing.T, text string, srv *cosmostest.Server) {
	t.Helper()
	if strings.Contains(text, srv.Key()) || strings.Contains(text, srv.ConnectionString()) {
		t.Fatalf("text leaks the account key: %s", text)
	}
}

package emulator

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// Any failure fails the poll with an error naming what failed; there is no
// partial total and no cached previous value, and no secret in the message.
func TestFailuresFailThePoll(t *testing.T) {
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
			env := newCosmosEnv(t, 3, dotNetV0)
			for _, r := range []string{"0", "1", "2"} {
				env.writeToRange(t, r, 10)
			}
			s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
			if metric, _ := poll(t, s); metric != 30 {
				t.Fatalf("healthy poll metric %d, want 30", metric)
			}
			env.server.Handler.InjectFault(tc.fault)
			err := pollError(t, s)
			assertMentions(t, err, tc.mention...)
			assertNoSecret(t, err.Error(), env.server)
		})
	}
}

// A wrong account key is an authentication failure of the poll (over
// HTTPS: no key but the emulator's goes over plain HTTP).
func TestWrongKeyFailsThePoll(t *testing.T) {
	env := routedEnv(t, "wrongkey.documents.azure.com", "wrongkey.documents.azure.com")
	s := newScaler(t, scalerConfig(env.metadata(), map[string]string{"endpoint": "https://wrongkey.documents.azure.com/", "cosmosDBKey": canaryKey}))
	err := pollError(t, s)
	assertMentions(t, err, "401")
	if strings.Contains(err.Error(), canaryKey) {
		t.Fatalf("error leaks the key: %v", err)
	}
}

// A missing monitored container is reported, not read as zero lag.
func TestMissingMonitoredContainer(t *testing.T) {
	env := newCosmosEnv(t, 1, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata("containerId", "nosuchcontainer"), keyAuth(env.server)))
	assertMentions(t, pollError(t, s), "nosuchcontainer", "404")
}

// The poll honours its context: a deadline shorter than the service's
// latency fails the poll promptly.
func TestPollHonoursContextDeadline(t *testing.T) {
	env := newCosmosEnv(t, 2, dotNetV0)
	s := newScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
	poll(t, s)
	env.server.Handler.SetLatency(5 * time.Second)
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

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// accountState is what the recreation test builds in an account: appdb/orders
// with 4 ranges, appdb/leases, one processor per lease format and per
// variant, each checkpointed before pending items are written to every range.
type accountState struct {
	leases     *cosmostest.Container
	processors map[string]*leasetest.Writer // by processor name
	tokens     map[string][]string
}

const recreateRanges = 4

func buildAccountState(t *testing.T, a *cosmostest.Account, names []string, formats map[string]cosmostest.LeaseFormat, pending int) *accountState {
	t.Helper()
	db := a.CreateDatabase("appdb")
	monitored := db.CreateContainer("orders", "/customerId", recreateRanges)
	s := &accountState{leases: db.CreateContainer("leases", "/id", 1), processors: map[string]*leasetest.Writer{}, tokens: map[string][]string{}}
	for _, name := range names {
		w := leasetest.NewWriter(name, monitored, s.leases, formats[name])
		tokens, err := w.CreateLeases(true)
		if err != nil {
			t.Fatal(err)
		}
		s.processors[name], s.tokens[name] = w, tokens
	}
	for _, r := range monitored.Ranges() {
		if err := monitored.WriteItemsToRange(r.ID, pending); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// recreatePoll is one GetMetrics or IsActive call of one ScaledObject.
type recreatePoll struct {
	start, end time.Time
	value      int64 // the metric, or 1/0 for IsActive
	isActive   bool
	err        error
}

// The external scaler under load while the account's state is made anew:
// cosmoslag serve (here the embedded server) stopped, started again on the
// same address with the same key, and the same databases, containers,
// leases and backlog created again, so every container has new RIDs. Every
// ScaledObject (every lease format; old leases deleted or left behind; three
// thresholds) answers right by its second poll after the new state is in
// place, and no answer at any time is a value the account never had: a poll
// over the old state gives the old value, one over the new state the new
// value, one in between either or an error.
func TestRecreatedAccountUnderLoad(t *testing.T) {
	const oldPending, newPending = 30, 20
	thresholds := []int64{10, 25, 1000}
	formats := map[string]cosmostest.LeaseFormat{}
	leftBehind := map[string]bool{}
	var names []string
	for copy := range 3 { // processors of one format share the lease container, as real ones may
		for _, format := range cosmostest.LeaseFormats {
			for _, left := range []bool{false, true} {
				if left && format == cosmostest.JavaV0 {
					continue // its lease ids hold names: the new leases are the old documents
				}
				name := fmt.Sprintf("%s-%s-%d", format, map[bool]string{false: "recreated", true: "left-behind"}[left], copy)
				names, formats[name], leftBehind[name] = append(names, name), format, left
			}
		}
	}

	before, err := cosmostest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(before.Close)
	oldState := buildAccountState(t, before.Account, names, formats, oldPending)
	env := map[string]string{connEnv: before.ConnectionString()}
	logs := &testhelp.SyncBuffer{}
	srv := newServer(serverOptions{
		httpTimeout: 5 * time.Second, streamInterval: time.Second,
		logger:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		lookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
		newScaler: newCosmosScaler,
	}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	client := pb.NewExternalScalerClient(conn)

	// The value a ScaledObject's metric has over a state with pending items
	// per range: min(total lag, active partitions x threshold).
	want := func(threshold, pending int64) int64 { return min(recreateRanges*pending, recreateRanges*threshold) }
	type scaledObject struct {
		ref       *pb.ScaledObjectRef
		metric    string
		threshold int64
		polls     []recreatePoll
	}
	var objects []*scaledObject
	for _, name := range names {
		for _, threshold := range thresholds {
			md := metadata("processorName", name, "changeFeedLagThreshold", fmt.Sprint(threshold))
			ref := &pb.ScaledObjectRef{Namespace: testNamespace, Name: fmt.Sprintf("%s-%d", name, threshold), ScalerMetadata: md}
			spec, err := client.GetMetricSpec(testContext(t), ref)
			if err != nil {
				t.Fatal(err)
			}
			objects = append(objects, &scaledObject{ref: ref, metric: spec.MetricSpecs[0].MetricName, threshold: threshold})
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards every polls slice
	for _, so := range objects {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				p := recreatePoll{start: time.Now(), isActive: i%2 == 1}
				if p.isActive {
					var resp *pb.IsActiveResponse
					if resp, p.err = client.IsActive(ctx, so.ref); p.err == nil && resp.Result {
						p.value = 1
					}
				} else {
					var resp *pb.GetMetricsResponse
					if resp, p.err = client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: so.ref, MetricName: so.metric}); p.err == nil {
						p.value = resp.MetricValues[0].MetricValue
					}
				}
				cancel()
				p.end = time.Now()
				mu.Lock()
				so.polls = append(so.polls, p)
				mu.Unlock()
			}
		})
	}
	pollsSince := func(so *scaledObject, since time.Time) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range so.polls {
			if !p.start.Before(since) && p.err == nil {
				n++
			}
		}
		return n
	}
	waitForPolls := func(since time.Time, n int) {
		testhelp.Eventually(t, 60*time.Second, 20*time.Millisecond, fmt.Sprintf("%d answered polls of every ScaledObject", n), func() error {
			for _, so := range objects {
				if got := pollsSince(so, since); got < n {
					return fmt.Errorf("%s: %d", so.ref.Name, got)
				}
			}
			return nil
		})
	}
	waitForPolls(time.Time{}, 2)

	u, err := url.Parse(before.URL())
	if err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	before.Close()
	// The old processors had drained their backlog; the leases of the
	// left-behind variants stay in the new lease container, checkpointed
	// past its LSNs. (Caught up in memory, with the server closed: no poll
	// sees it.)
	for name, w := range oldState.processors {
		for _, token := range oldState.tokens[name] {
			if err := w.CatchUp(token); err != nil {
				t.Fatal(err)
			}
		}
	}
	var oldLeases []map[string]any
	for _, doc := range oldState.leases.Items() {
		for name, w := range oldState.processors {
			if id, _ := doc["id"].(string); leftBehind[name] && strings.HasPrefix(id, w.Prefix()) {
				oldLeases = append(oldLeases, doc)
			}
		}
	}
	after, err := cosmostest.New(cosmostest.WithAddress(u.Host), cosmostest.WithKey(before.Key()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(after.Close)
	// Nothing answers until the whole state is there, as when a restored
	// account comes up: a poll in between fails.
	unavailable := after.Handler.InjectFault(cosmostest.Fault{Status: 503})
	newState := buildAccountState(t, after.Account, names, formats, newPending)
	for _, doc := range oldLeases {
		if _, err := newState.leases.Upsert(doc); err != nil {
			t.Fatal(err)
		}
	}
	ready := time.Now()
	unavailable()
	waitForPolls(ready, 3)
	close(stop)
	wg.Wait()
	_ = conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.shutdown(ctx)
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}

	wrong, late := 0, 0
	for _, so := range objects {
		oldValue, newValue := want(so.threshold, oldPending), want(so.threshold, newPending)
		var afterReady []recreatePoll
		for _, p := range so.polls {
			right := map[int64]bool{}
			switch {
			case !p.end.After(closed):
				right[oldValue] = true
			case !p.start.Before(ready):
				right[newValue] = true
				afterReady = append(afterReady, p)
			default:
				right[oldValue], right[newValue] = true, true
			}
			if p.isActive { // both states have a backlog
				right = map[int64]bool{1: true}
			}
			if p.err == nil && !right[p.value] {
				if wrong++; wrong <= 10 {
					call := map[bool]string{false: "GetMetrics", true: "IsActive"}[p.isActive]
					t.Errorf("%s %s %s after the restart: got %d, want one of %v", so.ref.Name, call, p.start.Sub(closed).Round(time.Millisecond), p.value, right)
				}
			}
		}
		if len(afterReady) >= 2 && afterReady[0].err != nil && afterReady[1].err != nil {
			late++
			t.Errorf("%s: no answer by its second poll after the new state: %v", so.ref.Name, afterReady[1].err)
		}
	}
	t.Logf("%d ScaledObjects, %d wrong answers, %d without an answer by their second poll after the restart", len(objects), wrong, late)
}

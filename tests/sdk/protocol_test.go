//go:build linux

package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/go-logr/logr"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// Headers that differ per request or per client and say nothing about the
// protocol: signing, transport, telemetry.
var volatileHeaders = map[string]bool{
	"authorization": true, "x-ms-date": true, "user-agent": true, "content-length": true,
	"accept-encoding": true, "connection": true, "host": true, "x-ms-activity-id": true,
	"x-ms-cosmos-correlated-activityid": true, "cache-control": true, "accept": true,
}

// scalerOnly are the headers the scaler may send although the JavaScript
// SDK does not, with the reason (docs/protocol.md).
var scalerOnly = map[string]string{}

// valueMayDiffer are protocol headers both send with legitimately different
// values, with the reason.
var valueMayDiffer = map[string]string{
	"x-ms-version":        "each client speaks its own REST API version (JS 4.10.1: 2020-07-15; scaler and azcosmos v1.5.0: 2020-11-05)",
	"x-ms-max-item-count": "the lease query's page size is the client's choice (scaler 1000, the capture 2)",
}

// TestScalerRequestsMatchTheJavaScriptSDK performs the scaler's reads with
// the JavaScript SDK and with the scaler against one server, and checks in
// the server's request log that the scaler sends no protocol header the SDK
// does not send, and the same values where both send one.
func TestScalerRequestsMatchTheJavaScriptSDK(t *testing.T) {
	node, jsDir := jsSuite(t)

	srv := cosmostest.NewTLSServer(cosmostest.WithKey(accountKey))
	defer srv.Close()
	db := srv.Account.CreateDatabase("shop")
	orders := db.CreateContainer("orders", "/pk", 2)
	leases := db.CreateContainer("leases", "/id", 2)
	physical := orders.Ranges()[0]
	if err := orders.WriteItemsToRange(physical.ID, 20); err != nil {
		t.Fatal(err)
	}
	proc := leasetest.NewWriter("orders-proc", orders, leases, cosmostest.DotNetV0)
	if _, err := proc.CreateLeases(false); err != nil {
		t.Fatal(err)
	}
	// Resume from LSN 3 of range 0: items are pending, one is read.
	etag := `"3"`
	sub := struct{ min, max string }{physical.MinInclusive, "3F"}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, srv.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}

	spec, _ := json.Marshal(map[string]any{
		"database": "shop", "container": "orders", "rid": orders.RID(), "leases": "leases",
		"prefix": "orders-proc", "pageSize": 2,
		"full": map[string]string{"min": physical.MinInclusive, "max": physical.MaxExclusive, "etag": etag},
		"sub":  map[string]string{"min": sub.min, "max": sub.max, "etag": etag},
	})
	cmd := exec.Command(node, filepath.Join(jsDir, "capture.mjs"))
	cmd.Env = append(os.Environ(), "COSMOS_ENDPOINT="+srv.URL(), "COSMOS_KEY="+accountKey,
		"NODE_EXTRA_CA_CERTS="+caFile, "CAPTURE_SPEC="+string(spec))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("capture.mjs: %v\n%s", err, out)
	}
	t.Logf("JavaScript SDK: %s", strings.TrimSpace(string(out)))
	sdk := srv.Handler.Requests()
	srv.Handler.ResetRequests()

	// The scaler's own reads of the same positions: a probe processor's two
	// leases (the physical range, and an EPK sub-range of it) read by the
	// scaler's estimator, which also runs the lease query.
	probe := "orders-probe" + srv.Account.Host() + "_" + db.RID() + "_" + orders.RID() + ".."
	for _, doc := range []map[string]any{
		{"id": probe + physical.ID, "version": 0, "LeaseToken": physical.ID, "ContinuationToken": etag},
		{"id": probe + sub.min + "-" + sub.max, "version": 1, "LeaseToken": sub.min + "-" + sub.max, "ContinuationToken": etag,
			"FeedRange": map[string]any{"Range": map[string]any{"min": sub.min, "max": sub.max}}},
	} {
		if _, err := leases.Upsert(doc); err != nil {
			t.Fatal(err)
		}
	}
	srv.Handler.ResetRequests()
	data, leaseConn, err := azure.ResolveCosmosDBConnections(azure.CosmosDBAuth{Connection: azure.CosmosDBSecret(srv.ConnectionString())}, srv.Client(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	estimator := azure.NewCosmosDBLagEstimator(azure.NewCosmosDBClient(data, srv.Client()), azure.NewCosmosDBClient(leaseConn, srv.Client()),
		azure.CosmosDBContainers{Database: "shop", Container: "orders", LeaseDatabase: "shop", LeaseContainer: "leases", Processor: "orders-probe"})
	if estimate, err := estimator.Estimate(context.Background()); err != nil || len(estimate.Leases) != 2 {
		t.Fatalf("scaler: %d leases, %v", len(estimate.Leases), err)
	}
	scaler := srv.Handler.Requests()

	for _, op := range []struct {
		name string
		pick func(cosmostest.Request) bool
	}{
		{"change feed, physical range", func(r cosmostest.Request) bool {
			return r.Kind == cosmostest.KindChangeFeed && r.Header.Get("x-ms-start-epk") == "" && r.Header.Get("x-ms-read-key-type") == ""
		}},
		{"change feed, EPK sub-range", func(r cosmostest.Request) bool {
			return r.Kind == cosmostest.KindChangeFeed && r.Header.Get("x-ms-end-epk") != ""
		}},
		{"lease query page", func(r cosmostest.Request) bool {
			return r.Kind == cosmostest.KindQuery && r.Header.Get("x-ms-cosmos-is-query-plan-request") == ""
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			sdkReqs, scalerReqs := filter(sdk, op.pick), filter(scaler, op.pick)
			if len(sdkReqs) == 0 || len(scalerReqs) == 0 {
				t.Fatalf("requests seen: SDK %d, scaler %d", len(sdkReqs), len(scalerReqs))
			}
			s, m := protocolHeaders(sdkReqs[0]), protocolHeaders(scalerReqs[0])
			t.Logf("JavaScript SDK: %s %s\n%s", sdkReqs[0].Method, sdkReqs[0].Path, formatHeaders(s))
			t.Logf("scaler:         %s %s\n%s", scalerReqs[0].Method, scalerReqs[0].Path, formatHeaders(m))
			for name, v := range m {
				sv, both := s[name]
				switch {
				case !both && scalerOnly[name] == "":
					t.Errorf("the scaler sends %s: %q, the SDK does not", name, v)
				case both && !strings.EqualFold(sv, v) && valueMayDiffer[name] == "":
					t.Errorf("%s: the scaler sends %q, the SDK %q", name, v, sv)
				case both && sv != v:
					// The service reads these values case-insensitively; the
					// scaler writes them as the REST reference does.
					t.Logf("%s differs: scaler %q, SDK %q", name, v, sv)
				}
			}
			if op.name == "lease query page" {
				plans := filter(sdk, func(r cosmostest.Request) bool { return r.Header.Get("x-ms-cosmos-is-query-plan-request") != "" })
				t.Logf("the SDK sent %d query pages and %d query-plan requests", len(sdkReqs), len(plans))
			}
			if op.name == "lease query page" && len(sdkReqs) > 1 {
				// Continuations are opaque: the SDK sends back what the server gave.
				if sdkReqs[1].Header.Get("x-ms-continuation") == "" {
					t.Error("the SDK's second query page carries no x-ms-continuation")
				}
			}
		})
	}
}

func filter(reqs []cosmostest.Request, keep func(cosmostest.Request) bool) []cosmostest.Request {
	var out []cosmostest.Request
	for _, r := range reqs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// protocolHeaders is a request's headers by lower-case name, without the
// volatile ones.
func protocolHeaders(r cosmostest.Request) map[string]string {
	out := map[string]string{}
	for k, v := range r.Header {
		name := strings.ToLower(k)
		if !volatileHeaders[name] {
			out[name] = strings.Join(v, ",")
		}
	}
	return out
}

func formatHeaders(h map[string]string) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "  %s: %s\n", k, h[k])
	}
	return b.String()
}

package cosmostest

import (
	"fmt"
	"net/http"
	"testing"
)

func TestCreateDatabaseOverREST(t *testing.T) {
	s := newTestServer(t)
	resp, raw := call(t, s, http.MethodPost, "/dbs", nil, map[string]any{"id": "shop"})
	wantStatus(t, resp, raw, http.StatusCreated)
	if body := decode(t, raw); body["id"] != "shop" || body["_rid"] == "" {
		t.Errorf("body %s", raw)
	}
	resp, raw = call(t, s, http.MethodGet, "/dbs/shop", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	resp, raw = call(t, s, http.MethodPost, "/dbs", nil, map[string]any{"id": "shop"})
	wantStatus(t, resp, raw, http.StatusConflict)
	resp, raw = call(t, s, http.MethodPost, "/dbs", nil, map[string]any{"id": "a/b"})
	wantStatus(t, resp, raw, http.StatusBadRequest)
}

// A container created over REST gets its physical partitions from its
// throughput, about 10,000 RU/s each and at least one, as the service gives them.
func TestCreateContainerPartitionsFromThroughput(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("shop")
	for i, tc := range []struct {
		name   string
		header map[string]string
		ranges int
	}{
		{"no throughput", nil, 1},
		{"400 RU/s", map[string]string{"x-ms-offer-throughput": "400"}, 1},
		{"10,000 RU/s", map[string]string{"x-ms-offer-throughput": "10000"}, 1},
		{"25,000 RU/s", map[string]string{"x-ms-offer-throughput": "25000"}, 3},
		{"autoscale to 40,000 RU/s", map[string]string{"x-ms-cosmos-offer-autopilot-settings": `{"maxThroughput":40000}`}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("orders-%d", i)
			resp, raw := call(t, s, http.MethodPost, "/dbs/shop/colls", tc.header,
				map[string]any{"id": id, "partitionKey": map[string]any{"paths": []string{"/tenant"}, "kind": "Hash", "version": 2}})
			wantStatus(t, resp, raw, http.StatusCreated)
			resp, raw = call(t, s, http.MethodGet, "/dbs/shop/colls/"+id+"/pkranges", nil, nil)
			wantStatus(t, resp, raw, http.StatusOK)
			if n := len(decode(t, raw)["PartitionKeyRanges"].([]any)); n != tc.ranges {
				t.Errorf("%d physical ranges, want %d", n, tc.ranges)
			}
			c, ok := s.Account.Container("shop", id)
			if !ok || c.PartitionKeyPath() != "/tenant" || len(c.Ranges()) != tc.ranges {
				t.Errorf("Container(shop, %s) = %v, %v", id, c, ok)
			}
		})
	}
}

func TestCreateContainerRefusals(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("shop").CreateContainer("orders", "/pk", 1)
	pk := map[string]any{"paths": []string{"/pk"}, "kind": "Hash"}
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		body   map[string]any
		status int
	}{
		{"exists", "/dbs/shop/colls", nil, map[string]any{"id": "orders", "partitionKey": pk}, http.StatusConflict},
		{"no database", "/dbs/nope/colls", nil, map[string]any{"id": "x", "partitionKey": pk}, http.StatusNotFound},
		{"no partition key", "/dbs/shop/colls", nil, map[string]any{"id": "x"}, http.StatusBadRequest},
		{"hierarchical key", "/dbs/shop/colls", nil, map[string]any{"id": "x", "partitionKey": map[string]any{"paths": []string{"/a", "/b"}, "kind": "MultiHash"}}, http.StatusBadRequest},
		{"throughput not a number", "/dbs/shop/colls", map[string]string{"x-ms-offer-throughput": "lots"}, map[string]any{"id": "x", "partitionKey": pk}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := call(t, s, http.MethodPost, tc.path, tc.header, tc.body)
			wantStatus(t, resp, raw, tc.status)
		})
	}
}

func TestListDatabasesAndContainers(t *testing.T) {
	s := newTestServer(t)
	s.Account.CreateDatabase("a").CreateContainer("x", "/pk", 1)
	s.Account.CreateDatabase("a").CreateContainer("y", "/pk", 1)
	s.Account.CreateDatabase("b")
	resp, raw := call(t, s, http.MethodGet, "/dbs", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if dbs := decode(t, raw)["Databases"].([]any); len(dbs) != 2 || dbs[0].(map[string]any)["id"] != "a" {
		t.Errorf("databases %s", raw)
	}
	resp, raw = call(t, s, http.MethodGet, "/dbs/a/colls", nil, nil)
	wantStatus(t, resp, raw, http.StatusOK)
	if colls := decode(t, raw)["DocumentCollections"].([]any); len(colls) != 2 || colls[1].(map[string]any)["id"] != "y" {
		t.Errorf("containers %s", raw)
	}
	resp, raw = call(t, s, http.MethodGet, "/dbs/nope/colls", nil, nil)
	wantStatus(t, resp, raw, http.StatusNotFound)
	resp, raw = call(t, s, http.MethodDelete, "/dbs", nil, nil)
	wantStatus(t, resp, raw, http.StatusMethodNotAllowed)
}

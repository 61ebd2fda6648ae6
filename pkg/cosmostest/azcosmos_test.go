package cosmostest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The Azure SDK for Go, unchanged, must work against the server: that is the
// evidence that the server speaks the protocol and not only our dialect.

func sdkOptions(s *Server) *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: s.Client(),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}}
}

func TestAzcosmosClients(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tls       bool
		newClient func(s *Server) (*azcosmos.Client, error)
	}{
		{"connection string", false, func(s *Server) (*azcosmos.Client, error) {
			return azcosmos.NewClientFromConnectionString(s.ConnectionString(), sdkOptions(s))
		}},
		{"key credential", false, func(s *Server) (*azcosmos.Client, error) {
			cred, err := azcosmos.NewKeyCredential(s.Key())
			if err != nil {
				return nil, err
			}
			return azcosmos.NewClientWithKey(s.URL(), cred, sdkOptions(s))
		}},
		{"key credential over TLS", true, func(s *Server) (*azcosmos.Client, error) {
			cred, err := azcosmos.NewKeyCredential(s.Key())
			if err != nil {
				return nil, err
			}
			return azcosmos.NewClientWithKey(s.URL(), cred, sdkOptions(s))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *Server
			if tc.tls {
				s = NewTLSServer()
			} else {
				s = NewServer()
			}
			defer s.Close()
			exerciseSDK(t, s, tc.newClient)
		})
	}
}

func exerciseSDK(t *testing.T, s *Server, newClient func(*Server) (*azcosmos.Client, error)) {
	ctx := context.Background()
	db := s.Account.CreateDatabase("db")
	data := db.CreateContainer("data", "/pk", 3)
	leases := db.CreateContainer("leases", "/id", 2)

	client, err := newClient(s)
	if err != nil {
		t.Fatal(err)
	}
	dbClient, err := client.NewDatabase("db")
	if err != nil {
		t.Fatal(err)
	}
	dbResp, err := dbClient.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read database: %v", err)
	}
	if dbResp.DatabaseProperties.ResourceID != db.RID() {
		t.Errorf("database ResourceID %q, want %q", dbResp.DatabaseProperties.ResourceID, db.RID())
	}
	if s.Handler.Count(kindAccount) == 0 {
		t.Error("the SDK did not read account properties first")
	}

	cont, err := client.NewContainer("db", "data")
	if err != nil {
		t.Fatal(err)
	}
	props, err := cont.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	if props.ContainerProperties.ResourceID != data.RID() || props.ContainerProperties.PartitionKeyDefinition.Paths[0] != "/pk" {
		t.Errorf("container properties %+v", props.ContainerProperties)
	}

	pk := azcosmos.NewPartitionKeyString("tenant-1")
	item, _ := json.Marshal(map[string]any{"id": "a", "pk": "tenant-1", "n": 1})
	if _, err := cont.CreateItem(ctx, pk, item, nil); err != nil {
		t.Fatalf("create item: %v", err)
	}
	_, err = cont.CreateItem(ctx, pk, item, nil)
	var respErr *azcore.ResponseError
	if !errors.As(err, &respErr) || respErr.StatusCode != http.StatusConflict {
		t.Errorf("second create: %v, want 409", err)
	}
	item, _ = json.Marshal(map[string]any{"id": "a", "pk": "tenant-1", "n": 2})
	up, err := cont.UpsertItem(ctx, pk, item, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("upsert item: %v", err)
	}
	var echoed map[string]any
	if err := json.Unmarshal(up.Value, &echoed); err != nil || echoed["n"] != float64(2) {
		t.Errorf("upsert response %s", up.Value)
	}
	read, err := cont.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read item: %v", err)
	}
	if read.SessionToken == nil || *read.SessionToken == "" || read.ETag == "" || read.RequestCharge == 0 {
		t.Errorf("read item response lacks session token, etag or charge: %+v", read.Response)
	}
	item, _ = json.Marshal(map[string]any{"id": "a", "pk": "tenant-1", "n": 3})
	if _, err := cont.ReplaceItem(ctx, pk, "a", item, &azcosmos.ItemOptions{IfMatchEtag: &read.ETag}); err != nil {
		t.Fatalf("replace item: %v", err)
	}
	if _, err := cont.DeleteItem(ctx, pk, "a", nil); err != nil {
		t.Fatalf("delete item: %v", err)
	}

	// A paged cross-partition query over a lease container, as the scaler runs it.
	leaseClient, err := client.NewContainer("db", "leases")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 35; i++ {
		id := fmt.Sprintf("proc..%02d", i)
		doc, _ := json.Marshal(map[string]any{"id": id})
		if _, err := leaseClient.UpsertItem(ctx, azcosmos.NewPartitionKeyString(id), doc, nil); err != nil {
			t.Fatalf("upsert lease: %v", err)
		}
	}
	if _, err := leases.Upsert(map[string]any{"id": "other..0"}); err != nil {
		t.Fatal(err)
	}
	pager := leaseClient.NewQueryItemsPager("SELECT * FROM c WHERE STARTSWITH(c.id, @p)", azcosmos.NewPartitionKey(),
		&azcosmos.QueryOptions{PageSizeHint: 10, QueryParameters: []azcosmos.QueryParameter{{Name: "@p", Value: "proc.."}}})
	var got []string
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("query page %d: %v", pages, err)
		}
		pages++
		for _, raw := range page.Items {
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			got = append(got, doc["id"].(string))
		}
	}
	if len(got) != 35 || pages != 4 {
		t.Errorf("query returned %d items in %d pages, want 35 in 4", len(got), pages)
	}

	// A query the server does not understand fails loudly.
	bad := leaseClient.NewQueryItemsPager("SELECT * FROM c WHERE LOWER(c.Owner) = 'x'", azcosmos.NewPartitionKey(), nil)
	if _, err := bad.NextPage(ctx); !errors.As(err, &respErr) || respErr.StatusCode != http.StatusBadRequest {
		t.Errorf("unsupported query: %v, want 400", err)
	}
}

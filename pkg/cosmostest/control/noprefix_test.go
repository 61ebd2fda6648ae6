package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// An empty processor name writes the leases of a processor without a
// prefix, as an Azure Functions trigger without LeaseContainerPrefix does,
// in the formats Functions writes: ids start with the account host, beside
// ".info" and ".lock". A second such processor on the same container is a
// conflict; another container's empty-prefix processor is not.
func TestCreateLeasesWithoutPrefix(t *testing.T) {
	for _, format := range []string{"dotnet-v0", "dotnet-v1", "dotnet-v2-library"} {
		t.Run(format, func(t *testing.T) {
			c, srv := newControl(t)
			setUp(t, c, 2)
			ctx := context.Background()
			got, err := c.CreateLeases(ctx, control.CreateLeasesRequest{
				Name: "", Database: "db", Monitored: "items", Leases: "leases", Format: format, StartFromNow: true})
			if err != nil {
				t.Fatal(err)
			}
			items, _ := srv.Account.Container("db", "items")
			want := srv.Account.Host() + "_" + items.Database().RID() + "_" + items.RID()
			if got.Prefix != want || len(got.Leases) != 2 || got.Format != format {
				t.Fatalf("answer %+v, want prefix %q, 2 leases in %s", got, want, format)
			}
			leases, _ := srv.Account.Container("db", "leases")
			for _, id := range []string{got.Leases[0].ID, got.Leases[1].ID, want + ".info", want + ".lock"} {
				if _, ok := leases.Get(id); !ok {
					t.Errorf("document %s not written", id)
				}
			}
			var apiErr *control.Error
			if _, err := c.CreateLeases(ctx, control.CreateLeasesRequest{Database: "db", Monitored: "items", Leases: "leases", Format: format}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
				t.Errorf("second empty-prefix processor: %v, want 409", err)
			}
			one := 1
			if _, err := c.CreateContainer(ctx, control.CreateContainerRequest{Database: "db", ID: "payments", PartitionKeyPath: "/pk", Ranges: &one}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateLeases(ctx, control.CreateLeasesRequest{Database: "db", Monitored: "payments", Leases: "leases", Format: format}); err != nil {
				t.Errorf("another container's empty-prefix processor: %v", err)
			}
		})
	}
}

// Over the wire an absent name is still refused, and a present one is
// still checked; only "name": "" is the processor without a prefix.
func TestCreateLeasesNameValidation(t *testing.T) {
	srv, err := cosmostest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("db")
	db.CreateContainer("items", "/pk", 1)
	db.CreateContainer("leases", "/id", 1)
	h := control.NewHandler(srv, io.Discard)
	post := func(body string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, control.RouteProcessors, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"database":"db","monitored":"items","leases":"leases"}`, 400, "name is required"},
		{`{"name":null,"database":"db","monitored":"items","leases":"leases"}`, 400, "name is required"},
		{`{"name":"a/b","database":"db","monitored":"items","leases":"leases"}`, 400, "name must not contain"},
		{`{"name":" p","database":"db","monitored":"items","leases":"leases"}`, 400, "name must not contain control characters or start or end with a space"},
		{`{"name":"` + strings.Repeat("n", 256) + `","database":"db","monitored":"items","leases":"leases"}`, 400, "name must be at most 255 characters long"},
		{`{"name":"","database":"","monitored":"items","leases":"leases"}`, 400, "database is required"},
		{`{"name":"","database":"db","monitored":"items","leases":"leases","format":"JavaV3"}`, 400, "format must be one of"},
		{`{"name":"","database":"db","monitored":"items","leases":"leases"}`, 201, `"prefix":"` + srv.Account.Host() + `_`},
	} {
		status, body := post(tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.body, status, body, tc.status, tc.want)
		}
		if status == 201 {
			var out control.Leases
			if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Leases) != 1 || !strings.HasPrefix(out.Leases[0].ID, srv.Account.Host()+"_") {
				t.Errorf("answer %s: %v", body, err)
			}
		}
	}
}

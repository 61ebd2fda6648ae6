package control_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
)

// newControl serves the control API of a fresh account and returns a client
// for it and the account.
func newControl(t *testing.T, opts ...cosmostest.Option) (*control.Client, *cosmostest.Server) {
	t.Helper()
	srv, err := cosmostest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	api := httptest.NewServer(control.NewHandler(srv, io.Discard))
	t.Cleanup(api.Close)
	return control.NewClient(api.URL, api.Client()), srv
}

func setUp(t *testing.T, c *control.Client, ranges int) {
	t.Helper()
	ctx := context.Background()
	one := 1
	for _, req := range []control.CreateContainerRequest{
		{Database: "db", ID: "items", PartitionKeyPath: "/pk", Ranges: &ranges},
		{Database: "db", ID: "leases", PartitionKeyPath: "/id", Ranges: &one},
	} {
		if _, err := c.CreateContainer(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
}

// The control API answers with the lease format names cosmoslag prints
// (the cosmostest.LeaseFormat values), the only names it accepts.
func TestLeasesAnswerWithTheFormatNamesTheyAccept(t *testing.T) {
	for _, tc := range []struct {
		format, answered string
		epk              bool
	}{
		{"", "dotnet-v0", false},
		{string(cosmostest.DotNetV0), "dotnet-v0", false},
		{string(cosmostest.DotNetV1), "dotnet-v1", true},
		{"JAVA-V0", "java-v0", false},
		{string(cosmostest.JavaV1), "java-v1", true},
		{string(cosmostest.DotNetV2Library), "dotnet-v2-library", false},
	} {
		t.Run(tc.format, func(t *testing.T) {
			c, srv := newControl(t)
			setUp(t, c, 2)
			got, err := c.CreateLeases(context.Background(), control.CreateLeasesRequest{
				Name: "p", Database: "db", Monitored: "items", Leases: "leases", Format: tc.format})
			if err != nil {
				t.Fatal(err)
			}
			if got.Format != tc.answered || len(got.Leases) != 2 || strings.Contains(got.Leases[0].Token, "-") != tc.epk {
				t.Errorf("answer %+v, want format %s, 2 leases, EPK tokens %v", got, tc.answered, tc.epk)
			}
			leases, _ := srv.Account.Container("db", "leases")
			if _, ok := leases.Get(got.Leases[0].ID); !ok {
				t.Errorf("lease %s not written", got.Leases[0].ID)
			}
		})
	}
}

func TestClientReportsTheAPIError(t *testing.T) {
	c, _ := newControl(t)
	setUp(t, c, 1)
	_, err := c.CreateLeases(context.Background(), control.CreateLeasesRequest{
		Name: "p", Database: "db", Monitored: "items", Leases: "leases", Format: "dotnet-v3"})
	var apiErr *control.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest ||
		!strings.Contains(apiErr.Message, `format must be one of dotnet-v0, dotnet-v1, java-v0, java-v1, dotnet-v2-library, got "dotnet-v3"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := c.Container(context.Background(), "db", "nope"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("missing container: %v", err)
	}
	if err := c.Healthy(context.Background()); err != nil {
		t.Errorf("healthz: %v", err)
	}
}

// A container created by Go calls on the account is visible to the control
// API: the handler looks containers up in the account.
func TestControlSeesContainersOfTheAccount(t *testing.T) {
	c, srv := newControl(t)
	srv.Account.CreateDatabase("db").CreateContainer("direct", "/pk", 3)
	got, err := c.Container(context.Background(), "db", "direct")
	if err != nil || len(got.Ranges) != 3 || got.PartitionKeyPath != "/pk" {
		t.Errorf("container %+v, %v", got, err)
	}
	split, err := c.Split(context.Background(), "db", "direct", "1")
	if err != nil || split.Left.Parents[0] != "1" {
		t.Errorf("split %+v, %v", split, err)
	}
}

// A processor's mode is written into its leases as its library writes it;
// a format without an all-versions-and-deletes mode, or an unknown mode, is 400.
func TestLeasesCarryTheProcessorsMode(t *testing.T) {
	c, srv := newControl(t)
	setUp(t, c, 1)
	ctx := context.Background()
	got, err := c.CreateLeases(ctx, control.CreateLeasesRequest{
		Name: "audit", Database: "db", Monitored: "items", Leases: "leases", Format: "dotnet-v0", Mode: "allversionsanddeletes", StartFromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	leases, _ := srv.Account.Container("db", "leases")
	doc, _ := leases.Get(got.Leases[0].ID)
	// The .NET v3 SDK records the mode as the A-IM value it reads with.
	if doc["Mode"] != "Full-Fidelity Feed" {
		t.Fatalf("lease %v records mode %v, want \"Full-Fidelity Feed\"", doc["id"], doc["Mode"])
	}
	for _, req := range []control.CreateLeasesRequest{
		{Name: "a", Database: "db", Monitored: "items", Leases: "leases", Format: "java-v0", Mode: "AllVersionsAndDeletes"},
		{Name: "b", Database: "db", Monitored: "items", Leases: "leases", Mode: "Everything"},
	} {
		var apiErr *control.Error
		if _, err := c.CreateLeases(ctx, req); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "mode") {
			t.Errorf("%+v: %v, want 400 naming the mode", req, err)
		}
	}
}

// Merges: two live adjacent ranges, in either order, on an account with
// partition merge enabled; the answer is the new range.
func TestControlMergesOnMergeEnabledAccounts(t *testing.T) {
	ctx := context.Background()
	c, _ := newControl(t, cosmostest.WithPartitionMerge())
	setUp(t, c, 3)
	merged, err := c.Merge(ctx, "db", "items", "1", "0")
	if err != nil {
		t.Fatal(err)
	}
	if merged.ID != "3" || strings.Join(merged.Parents, ",") != "0,1" || merged.MinInclusive != "" {
		t.Errorf("merged %+v, want range 3 from the start of the key space with parents 0, 1", merged)
	}
	got, err := c.Container(ctx, "db", "items")
	if err != nil || len(got.Ranges) != 2 || got.Ranges[0].ID != "3" {
		t.Errorf("ranges after the merge %+v, %v", got.Ranges, err)
	}
	var apiErr *control.Error
	for _, tc := range []struct {
		a, b   string
		status int
		want   string
	}{
		{"0", "2", http.StatusNotFound, `range "0" of db/items is not a live partition key range (live: 3, 2)`},
		{"2", "9", http.StatusNotFound, `range "9"`},
		{"2", "2", http.StatusConflict, "cannot merge with itself"},
		{"", "2", http.StatusBadRequest, "ranges must name two ranges"},
	} {
		if _, err := c.Merge(ctx, "db", "items", tc.a, tc.b); !errors.As(err, &apiErr) || apiErr.Status != tc.status || !strings.Contains(apiErr.Message, tc.want) {
			t.Errorf("merge %q %q: %v, want %d with %q", tc.a, tc.b, err, tc.status, tc.want)
		}
	}
	if _, err := c.Merge(ctx, "db", "nope", "0", "1"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("merge in a missing container: %v", err)
	}

	plain, _ := newControl(t)
	setUp(t, plain, 2)
	if _, err := plain.Merge(ctx, "db", "items", "0", "1"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict ||
		!strings.Contains(apiErr.Message, "--enable-partition-merge") {
		t.Errorf("merge on an account without partition merge: %v, want 409 naming --enable-partition-merge", err)
	}
}

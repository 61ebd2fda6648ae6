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
func newControl(t *testing.T) (*control.Client, *cosmostest.Server) {
	t.Helper()
	srv, err := cosmostest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	api := httptest.NewServer(control.NewHandler(srv.Account, io.Discard))
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

// The control API accepts the lease format names cosmoslag prints (the
// cosmostest.LeaseFormat values) and its own names (DotNetV1EPK, …), and
// answers with its own.
func TestLeasesAcceptBothFormatVocabularies(t *testing.T) {
	for _, tc := range []struct {
		format, answered string
		epk              bool
	}{
		{"", "DotNetV0", false},
		{string(cosmostest.DotNetV0), "DotNetV0", false},
		{"DotNetV1EPK", "DotNetV1EPK", true},
		{string(cosmostest.DotNetV1), "DotNetV1EPK", true},
		{"JAVA-V0", "JavaV0", false},
		{"javav1epk", "JavaV1EPK", true},
		{string(cosmostest.JavaV1), "JavaV1EPK", true},
		{string(cosmostest.DotNetV2Library), "DotNetV2Library", false},
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
			leases, _ := srv.Container("db", "leases")
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
		!strings.Contains(apiErr.Message, "format must be one of DotNetV0, DotNetV1EPK, JavaV0, JavaV1EPK, DotNetV2Library (or dotnet-v0, dotnet-v1, java-v0, java-v1, dotnet-v2-library)") {
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
	srv.CreateDatabase("db").CreateContainer("direct", "/pk", 3)
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
	leases, _ := srv.Container("db", "leases")
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

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// The command's test helpers, once for every test file.

// runCmd runs cosmoslag in-process and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newShopAccount is an embedded account with database shop: container
// orders over ranges physical ranges, container leases, and the lease
// writer of processor order-projector in format (no lease written yet).
func newShopAccount(t *testing.T, ranges int, format cosmostest.LeaseFormat) (*cosmostest.Server, *cosmostest.Container, *leasetest.Writer) {
	t.Helper()
	srv := cosmostest.NewServer()
	t.Cleanup(srv.Close)
	db := srv.Account.CreateDatabase("shop")
	data := db.CreateContainer("orders", "/pk", ranges)
	leases := db.CreateContainer("leases", "/id", 1)
	return srv, data, leasetest.NewWriter("order-projector", data, leases, format)
}

func assertNoSecret(t *testing.T, secret string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, secret) {
			t.Errorf("a secret appears in the output:\n%s", o)
		}
	}
}

// writeMinimalScaledObject writes a ScaledObject with one azure-cosmosdb
// trigger; extra is appended inside its flow-style metadata map.
func writeMinimalScaledObject(t *testing.T, extra string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "so.yaml", `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders}
spec:
  scaleTargetRef: {name: orders}
  triggers:
    - type: azure-cosmosdb
      metadata: {databaseId: shop, containerId: orders, leaseDatabaseId: shop, leaseContainerId: leases, processorName: p`+extra+`}
`)
}

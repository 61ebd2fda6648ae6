package check

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	if args := os.Getenv("COSMOSLAG_RUN_HELPER"); args != "" {
		return runHelper(args) // a test's child process: cosmoslag itself, in the environment it was given
	}
	return clitest.Main(m)
}

const (
	bearerResource           = "https://cosmos.private.example"
	clientSecret             = "entra-client-secret-canary"
	servicePrincipalAuthYAML = `apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmos-auth
  namespace: shop
spec:
  secretTargetRef:
    - {parameter: tenantId, name: cosmos-sp, key: tenantId}
    - {parameter: clientId, name: cosmos-sp, key: clientId}
    - {parameter: clientSecret, name: cosmos-sp, key: clientSecret}
    - {parameter: endpoint, name: cosmos-cloud, key: endpoint}
    - {parameter: cloud, name: cosmos-cloud, key: cloud}
    - {parameter: cosmosDBResourceURL, name: cosmos-cloud, key: cosmosDBResourceURL}
    - {parameter: activeDirectoryEndpoint, name: cosmos-cloud, key: activeDirectoryEndpoint}
`
)

// privateCloudEnv gives the private cloud's parameters, which the
// TriggerAuthentication holds with its service principal (the endpoint
// rule): the endpoint, cloud: Private, its audience and authority.
func privateCloudEnv(t *testing.T, endpoint string) {
	t.Setenv("endpoint", endpoint)
	t.Setenv("cloud", "Private")
	t.Setenv("cosmosDBResourceURL", bearerResource)
	t.Setenv("activeDirectoryEndpoint", clitest.Issuer.URL())
}

// workloadPrivateCloudEnv is the KEDA operator's private cloud for its
// workload identity: cloud: AzureStackCloud and the operator's environment
// file (AZURE_ENVIRONMENT_FILEPATH), whose Cosmos DB DNS suffix is here the
// test server's loopback address and whose audience is bearerResource.
func workloadPrivateCloudEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "environment.json")
	content := `{"name": "AzureStackCloud", "cosmosDBDNSSuffix": "127.0.0.1", "resourceIdentifiers": {"cosmosDB": "` + bearerResource + `"}}`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", file)
	t.Setenv("cloud", "AzureStackCloud")
}

// bearerScaledObject is the test ScaledObject for endpoint, an account of a
// private cloud that takes only Entra ID tokens for bearerResource.
func bearerScaledObject(endpoint string) string {
	metadata := fmt.Sprintf("endpoint: %s\n        changeFeedLagThreshold:", endpoint)
	return strings.Replace(clitest.ScaledObjectYAML, "changeFeedLagThreshold:", metadata, 1)
}

// check and validate read an account that takes only Entra ID tokens as
// they read one with a key: with a service principal and with workload
// identity, check shows every lease row, its lag and owner, labels the
// leases whose range split (EPK leases: from the ranges the estimate holds)
// and reports the leases never checkpointed, all through the scaler's own
// client; neither the client secret nor the federated token is printed.
func TestCheckWithEntraIDTokens(t *testing.T) {
	const resource = bearerResource
	srv := cosmostest.NewServer(cosmostest.WithTokenVerifier(clitest.Issuer.Verifier(resource + "/.default")))
	defer srv.Close()
	db := srv.Account.CreateDatabase("shop")
	data := db.CreateContainer("orders", "/pk", 3)
	proc := leasetest.NewWriter("order-projector", data, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV1)
	tokens, err := proc.CreateLeases(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range tokens[:2] {
		if err := proc.CatchUp(token); err != nil {
			t.Fatal(err)
		}
	}
	left, right, err := data.Split("0") // lease tokens[0] now spans two ranges
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteItemsToRange("1", 7); err != nil {
		t.Fatal(err)
	}

	endpoint := clitest.OverTLS(t, srv)
	so := bearerScaledObject(endpoint)
	for _, tc := range []struct {
		name, Auth string
		env        map[string]string
		grant      string
	}{
		{"service principal", servicePrincipalAuthYAML, map[string]string{"tenantId": "shop-tenant", "clientId": "order-scaler", "clientSecret": clientSecret}, "secret"},
		{"workload identity", `apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmos-auth
  namespace: shop
spec:
  podIdentity:
    provider: azure-workload
  secretTargetRef:
    - {parameter: cloud, name: cosmos-cloud, key: cloud}
    - {parameter: cosmosDBResourceURL, name: cosmos-cloud, key: cosmosDBResourceURL}
`, nil, "assertion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			privateCloudEnv(t, endpoint)
			if tc.grant == "assertion" {
				clitest.Issuer.SetWorkloadIdentityEnv(t, "shop-tenant", "order-workload")
				workloadPrivateCloudEnv(t)
			}
			dir := t.TempDir()
			soFile, taFile := clitest.WriteFile(t, dir, "so.yaml", so), clitest.WriteFile(t, dir, "ta.yaml", tc.Auth)
			before := len(clitest.Issuer.Grants())
			code, table, stderr := runCmd(t, "check", "-f", soFile, "--auth", taFile)
			if code != cli.ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, table, stderr)
			}
			grants := clitest.Issuer.Grants()[before:]
			if len(grants) == 0 || grants[0].Credential != tc.grant || grants[0].Scope != resource+"/.default" {
				t.Fatalf("token grants %+v, want a %s grant for %s/.default", grants, tc.grant, resource)
			}
			code, out, _ := runCmd(t, "check", "-f", soFile, "--auth", taFile, "-o", "json")
			var r checkReport
			if err := json.Unmarshal([]byte(out), &r); err != nil || code != cli.ExitOK || r.checkEstimate == nil {
				t.Fatalf("json: exit %d, %v\n%s", code, err, out)
			}
			for _, token := range tokens[:2] {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(token) + `\s+v1\s+LatestVersion\s`).MatchString(table) {
					t.Errorf("no table row for lease %s:\n%s", token, table)
				}
			}
			split := leaseRowOf(t, r, tokens[0])
			if split.RangeChange != "split" || strings.Join(split.LiveRanges, ",") != left.ID+","+right.ID {
				t.Errorf("lease %s: rangeChange %q, liveRanges %q; want split into %s, %s", tokens[0], split.RangeChange, split.LiveRanges, left.ID, right.ID)
			}
			if lag := leaseRowOf(t, r, tokens[1]).Lag; lag != 7 {
				t.Errorf("lease %s: lag %d, want 7", tokens[1], lag)
			}
			if strings.Join(r.NeverCheckpointed, ",") != tokens[2] || !strings.Contains(table, "1 never checkpointed (no continuation: "+tokens[2]+")") {
				t.Errorf("neverCheckpointed %q, want [%s]; table:\n%s", r.NeverCheckpointed, tokens[2], table)
			}
			clitest.AssertNoSecret(t, clientSecret, table, stderr, out)
			clitest.AssertNoSecret(t, "federated-service-account-token", table, stderr, out)

			code, out, stderr = runCmd(t, "validate", "-f", soFile, "-f", taFile)
			if code != cli.ExitOK {
				t.Errorf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
		})
	}
}

// A range-id lease whose range split is a stale parent the estimate holds
// no ranges for: check reads them with the scaler's client, here with a
// service principal's token, and labels the lease.
func TestCheckLabelsSplitRangeWithEntraIDTokens(t *testing.T) {
	srv := cosmostest.NewServer(cosmostest.WithTokenVerifier(clitest.Issuer.Verifier(bearerResource + "/.default")))
	defer srv.Close()
	db := srv.Account.CreateDatabase("shop")
	data := db.CreateContainer("orders", "/pk", 2)
	proc := leasetest.NewWriter("order-projector", data, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
	if _, err := proc.CreateLeases(true); err != nil {
		t.Fatal(err)
	}
	left, right, err := data.Split("0")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"tenantId": "shop-tenant", "clientId": "order-scaler", "clientSecret": clientSecret} {
		t.Setenv(k, v)
	}
	endpoint := clitest.OverTLS(t, srv)
	privateCloudEnv(t, endpoint)
	dir := t.TempDir()
	code, out, stderr := runCmd(t, "check", "-f", clitest.WriteFile(t, dir, "so.yaml", bearerScaledObject(endpoint)), "--auth", clitest.WriteFile(t, dir, "ta.yaml", servicePrincipalAuthYAML), "-o", "json")
	var r checkReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != cli.ExitOK || r.checkEstimate == nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	if l := leaseRowOf(t, r, "0"); !l.StaleParent || l.RangeChange != "split" || strings.Join(l.LiveRanges, ",") != left.ID+","+right.ID {
		t.Errorf("lease 0: staleParent %v, rangeChange %q, liveRanges %q; want a stale parent split into %s, %s", l.StaleParent, l.RangeChange, l.LiveRanges, left.ID, right.ID)
	}
	clitest.AssertNoSecret(t, clientSecret, out, stderr)
}

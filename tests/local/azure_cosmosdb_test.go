//go:build e2elocal

// Package local runs KEDA, built with this repository's azure-cosmosdb
// scaler in its tree, against a real control plane (etcd, kube-apiserver,
// kube-controller-manager) and the embedded Cosmos DB server, all inside a
// private network namespace. hack/e2e-local.sh (make e2e-local) starts all
// of it and then runs these tests; run on their own they fail fast.
//
// Pods never start (there is no kubelet): a Deployment's spec.replicas, set
// by KEDA and the HPA controller, is what the tests assert.
package local

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/resource"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

const (
	namespace          = "cosmosdb-e2e"
	database           = "e2e"
	monitored          = "orders"
	leases             = "leases"
	processorName      = "orders-processor"
	physicalPartitions = 4

	lagThreshold           = 10
	activationLagThreshold = 5
	maxReplicas            = 10
	fallbackReplicas       = 3

	// Bounds for one scaling step: KEDA polls every 2 s, the HPA controller
	// syncs every 5 s, and the cooldown before scaling to zero is 10 s.
	scaleTimeout    = 60 * time.Second
	scaleToZeroWait = 90 * time.Second
)

type manifestData struct {
	Namespace, Connection, Endpoint, Key, WrongKey                      string
	Database, Monitored, Leases, Processor                              string
	LagThreshold, ActivationLagThreshold, MaxReplicas, FallbackReplicas int
	// PollingInterval and CooldownPeriod of every ScaledObject: 2 s and
	// 10 s when 0.
	PollingInterval, CooldownPeriod int
	Targets                         []scaleTarget
}

// scaleTarget is one Deployment and the ScaledObject that scales it.
type scaleTarget struct {
	Name      string
	Replicas  int    // the Deployment's replicas before KEDA takes over
	Auth      string // TriggerAuthentication name
	Processor string // processorName, when not manifestData's
}

// Three ScaledObjects watch the same processor: "orders" authenticates with
// a connection string, "orders-key" with endpoint + account key, and
// "orders-badkey" with a wrong key (its Deployment starts at one replica, so
// the HPA is running when the fallback applies).
const manifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: {{.Namespace}}
---
apiVersion: v1
kind: Secret
metadata:
  name: cosmosdb
  namespace: {{.Namespace}}
type: Opaque
stringData:
  connection: "{{.Connection}}"
  key: "{{.Key}}"
  wrongKey: "{{.WrongKey}}"
  # The served account has an in-namespace IP, not a documents.azure.com name:
  # a TriggerAuthentication's key given apart from its endpoint goes there only
  # with the endpoint and cloud: Private in the same TriggerAuthentication
  # (docs/security.md, "Private clouds").
  endpoint: "{{.Endpoint}}"
  cloud: Private
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmosdb-connection
  namespace: {{.Namespace}}
spec:
  secretTargetRef:
  - parameter: connection
    name: cosmosdb
    key: connection
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmosdb-key
  namespace: {{.Namespace}}
spec:
  secretTargetRef:
  - parameter: cosmosDBKey
    name: cosmosdb
    key: key
  - parameter: endpoint
    name: cosmosdb
    key: endpoint
  - parameter: cloud
    name: cosmosdb
    key: cloud
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: cosmosdb-wrong-key
  namespace: {{.Namespace}}
spec:
  secretTargetRef:
  - parameter: cosmosDBKey
    name: cosmosdb
    key: wrongKey
  - parameter: endpoint
    name: cosmosdb
    key: endpoint
  - parameter: cloud
    name: cosmosdb
    key: cloud
{{range .Targets}}---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Name}}
  namespace: {{$.Namespace}}
spec:
  replicas: {{.Replicas}}
  selector:
    matchLabels:
      app: {{.Name}}
  template:
    metadata:
      labels:
        app: {{.Name}}
    spec:
      containers:
      - name: processor
        image: registry.invalid/placeholder:never-pulled
{{end}}
{{range .Targets}}---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{.Name}}
  namespace: {{$.Namespace}}
spec:
  scaleTargetRef:
    name: {{.Name}}
  pollingInterval: {{or $.PollingInterval 2}}
  cooldownPeriod: {{or $.CooldownPeriod 10}}
  minReplicaCount: 0
  maxReplicaCount: {{$.MaxReplicas}}
  fallback:
    failureThreshold: 3
    replicas: {{$.FallbackReplicas}}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown:
          stabilizationWindowSeconds: 0
  triggers:
  - type: azure-cosmosdb
    metadata:
      databaseId: {{$.Database}}
      containerId: {{$.Monitored}}
      leaseDatabaseId: {{$.Database}}
      leaseContainerId: {{$.Leases}}
      processorName: {{or .Processor $.Processor}}
      changeFeedLagThreshold: "{{$.LagThreshold}}"
      activationChangeFeedLagThreshold: "{{$.ActivationLagThreshold}}"
    authenticationRef:
      name: {{.Auth}}
{{end}}`

func TestAzureCosmosDBScalesOnChangeFeedLag(t *testing.T) {
	account, k := setUp(t, "intree")
	ctx := context.Background()
	// The in-process scaler logs through controller-runtime, as in KEDA.
	logf.SetLogger(funcr.New(func(prefix, args string) { t.Log("scaler:", prefix, args) }, funcr.Options{}))

	items, proc := firstStart(ctx, t, account, database)

	wrongKey := strings.Repeat("A", 86) + "=="
	k.apply(t, manifests, manifestData{
		Namespace: namespace, Connection: account.connectionString(), Endpoint: account.endpoint,
		Key: account.key, WrongKey: wrongKey,
		Database: database, Monitored: monitored, Leases: leases, Processor: processorName,
		LagThreshold: lagThreshold, ActivationLagThreshold: activationLagThreshold,
		MaxReplicas: maxReplicas, FallbackReplicas: fallbackReplicas,
		Targets: []scaleTarget{
			{Name: "orders", Auth: "cosmosdb-connection"},
			{Name: "orders-key", Auth: "cosmosdb-key"},
			{Name: "orders-badkey", Replicas: 1, Auth: "cosmosdb-wrong-key"},
		},
	})
	t.Logf("%s applied Secret, TriggerAuthentications, Deployments and ScaledObjects", k.elapsed())
	timelineCtx, stopTimeline := context.WithCancel(ctx)
	timelineDone := make(chan struct{})
	go func() {
		defer close(timelineDone)
		k.recordTimeline(timelineCtx, t, namespace, "orders", "orders-key", "orders-badkey")
	}()
	defer func() { stopTimeline(); <-timelineDone }()

	t.Run("stays at zero without lag", func(t *testing.T) {
		k.holdReplicas(t, namespace, "orders", 0, 15*time.Second)
	})

	t.Run("stays at zero below the activation threshold", func(t *testing.T) {
		if err := account.writeItems(ctx, database, monitored, items.Ranges[0].ID, activationLagThreshold-2); err != nil {
			t.Fatal(err)
		}
		k.holdReplicas(t, namespace, "orders", 0, 10*time.Second)
	})

	t.Run("activates from zero to one past the activation threshold", func(t *testing.T) {
		// 3 + 3 = 6 items behind in one partition: above activation (5), below the target (10).
		if err := account.writeItems(ctx, database, monitored, items.Ranges[0].ID, 3); err != nil {
			t.Fatal(err)
		}
		k.waitReplicas(t, namespace, "orders", 1, scaleTimeout)
		k.waitReplicas(t, namespace, "orders-key", 1, scaleTimeout)
		k.holdReplicas(t, namespace, "orders", 1, 10*time.Second)
	})

	t.Run("scales to the number of lagging partitions and no further", func(t *testing.T) {
		// 3 × 10 more items in each partition: 126 behind would be 13 replicas
		// at a target of 10, but only 4 partitions can be worked in parallel.
		for _, r := range items.Ranges {
			if err := account.writeItems(ctx, database, monitored, r.ID, 3*lagThreshold); err != nil {
				t.Fatal(err)
			}
		}
		k.waitReplicas(t, namespace, "orders", physicalPartitions, scaleTimeout)
		k.waitReplicas(t, namespace, "orders-key", physicalPartitions, scaleTimeout)
		k.holdReplicas(t, namespace, "orders", physicalPartitions, 15*time.Second)
	})

	// From here on no scaler runs in the test process: a request in the
	// account's log that carries this scaler's signature is KEDA's.
	var inProcessDone time.Time
	t.Run("the metric served through the aggregated API is the scaler's", func(t *testing.T) {
		metricName := "s0-azure-cosmosdb-" + leases + "-" + processorName
		served, err := k.externalMetric(ctx, namespace, metricName, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(served.Items) != 1 {
			t.Fatalf("external metrics API returned %d values, want 1: %+v", len(served.Items), served)
		}
		computed := scalerMetric(t, account, metricName)
		inProcessDone = time.Now()
		if served.Items[0].Value.Cmp(computed) != 0 {
			t.Fatalf("external metrics API serves %s, the scaler computes %s for the same state", served.Items[0].Value.String(), computed.String())
		}
		if want := resource.NewQuantity(physicalPartitions*lagThreshold, resource.DecimalSI); computed.Cmp(*want) != 0 {
			t.Fatalf("metric %s, want the cap %s (4 lagging partitions × threshold 10)", computed.String(), want.String())
		}
		t.Logf("%s metric %s = %s through /apis/external.metrics.k8s.io and in-process", k.elapsed(), metricName, computed.String())
	})

	t.Run("one hot partition holds one replica", func(t *testing.T) {
		// Every partition but the first catches up; the first keeps 36 behind,
		// which alone would be 4 replicas at a target of 10.
		for _, r := range items.Ranges[1:] {
			if err := proc.catchUp(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		k.waitReplicas(t, namespace, "orders", 1, scaleTimeout)
		k.holdReplicas(t, namespace, "orders", 1, 15*time.Second)
	})

	t.Run("scales back to zero after catching up and the cooldown", func(t *testing.T) {
		if err := proc.catchUp(ctx, items.Ranges[0].ID); err != nil {
			t.Fatal(err)
		}
		k.waitReplicas(t, namespace, "orders", 0, scaleToZeroWait)
		k.waitReplicas(t, namespace, "orders-key", 0, scaleToZeroWait)
	})

	t.Run("a split leaving a stale parent lease wakes exactly one replica", func(t *testing.T) {
		parent := items.Ranges[2]
		if _, err := account.control.Split(ctx, database, monitored, parent.ID); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s split partition %s; its lease is now a stale parent, no item is pending", k.elapsed(), parent.ID)
		k.waitReplicas(t, namespace, "orders", 1, scaleTimeout)
		k.holdReplicas(t, namespace, "orders", 1, 10*time.Second)

		// The woken processor replaces the parent lease with its children;
		// nothing is pending, so the scaler lets it go back to zero.
		children, err := proc.followSplit(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s processor replaced lease %s with %v", k.elapsed(), parent.ID, children)
		k.waitReplicas(t, namespace, "orders", 0, scaleToZeroWait)
	})

	t.Run("KEDA ran this repository's scaler: the account's request log", func(t *testing.T) {
		if inProcessDone.IsZero() {
			t.Skip("the in-process scaler's subtest did not run")
		}
		evidence, err := scalerRequests(ctx, account, inProcessDone, items.Ranges[2].ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("request log: %s", evidence)
		if evidence.feedReads == 0 || evidence.staleParentReads == 0 || evidence.unauthorized == 0 {
			t.Fatalf("the account's request log does not show KEDA running this scaler: %s", evidence)
		}
	})

	t.Run("a wrong account key reports the error and applies the fallback", func(t *testing.T) {
		k.waitReplicas(t, namespace, "orders-badkey", fallbackReplicas, scaleTimeout)
		eventually(t, scaleTimeout, "ScaledObject orders-badkey Fallback condition", func() error {
			status, reason, message, err := k.condition(ctx, namespace, "orders-badkey", "Fallback")
			if err != nil {
				return err
			}
			if status != "True" {
				return fmt.Errorf("Fallback=%q (%s: %s)", status, reason, message)
			}
			return nil
		})
		var message string
		eventually(t, scaleTimeout, "KEDAScalerFailed event for orders-badkey", func() error {
			events, err := k.warningEvents(ctx, namespace, "orders-badkey", "KEDAScalerFailed")
			if err != nil {
				return err
			}
			if len(events) == 0 {
				return fmt.Errorf("no KEDAScalerFailed warning yet")
			}
			message = events[0].Message
			return nil
		})
		t.Logf("%s orders-badkey: KEDAScalerFailed: %s", k.elapsed(), message)
		if !containsAny(message, "401", "Unauthorized", "unauthorized", "authorization") {
			t.Errorf("the scaler error does not say the request was unauthorized: %q", message)
		}
		if containsAny(message, account.key, wrongKey) {
			t.Errorf("the scaler error contains an account key")
		}
	})
}

// scalerMetric runs this repository's scaler in the test process with the
// trigger of ScaledObject "orders" and returns the metric value it computes.
func scalerMetric(t *testing.T, account *cosmosAccount, metricName string) resource.Quantity {
	t.Helper()
	s, err := scalers.NewAzureCosmosDBScaler(&scalersconfig.ScalerConfig{
		TriggerMetadata: map[string]string{
			"databaseId": database, "containerId": monitored,
			"leaseDatabaseId": database, "leaseContainerId": leases, "processorName": processorName,
			"changeFeedLagThreshold": "10", "activationChangeFeedLagThreshold": "5",
		},
		AuthParams:        map[string]string{"connection": account.connectionString()},
		GlobalHTTPTimeout: 10 * time.Second,
		TriggerType:       "azure-cosmosdb",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	values, _, err := s.GetMetricsAndActivity(context.Background(), metricName)
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != 1 {
		t.Fatalf("scaler returned %d values", len(values))
	}
	return values[0].Value
}

// scalerEvidence counts the requests in the account's log that only this
// repository's scaler makes: every request of it declares the
// PartitionMerge capability (x-ms-cosmos-sdk-supportedcapabilities: 1),
// which KEDA v2.21.0's scaler does not send, nor do the tests' own REST
// calls; its change feed reads ask for one item.
type scalerEvidence struct {
	since                                 time.Time
	requests, feedReads, staleParentReads int
	unauthorized                          int
	parent                                string
}

func (e scalerEvidence) String() string {
	return fmt.Sprintf("%d requests with this scaler's capability header since %s: %d change feed reads of one item, %d of them on split range %s answered 410 (stale parent), %d answered 401 (the wrong key of orders-badkey)",
		e.requests, e.since.UTC().Format("15:04:05.000"), e.feedReads, e.staleParentReads, e.parent, e.unauthorized)
}

func scalerRequests(ctx context.Context, account *cosmosAccount, since time.Time, parent string) (scalerEvidence, error) {
	e := scalerEvidence{since: since, parent: parent}
	log, err := account.control.Requests(ctx)
	if err != nil {
		return e, err
	}
	for _, r := range log.Requests {
		if !r.At.After(since) || strings.Join(r.Header["X-Ms-Cosmos-Sdk-Supportedcapabilities"], ",") != "1" {
			continue
		}
		e.requests++
		if r.Status == http.StatusUnauthorized {
			e.unauthorized++
		}
		if r.Kind != "changefeed" || strings.Join(r.Header["X-Ms-Max-Item-Count"], ",") != "1" {
			continue
		}
		e.feedReads++
		if r.RangeID == parent && r.Status == http.StatusGone {
			e.staleParentReads++
		}
	}
	return e, nil
}

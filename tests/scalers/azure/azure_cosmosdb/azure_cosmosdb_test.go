//go:build e2e

// This suite scales KEDA's test processor (ghcr.io/kedacore/tests-azure-cosmosdb)
// with a connection string: to zero with no lag, not woken by lag at or below
// activationChangeFeedLagThreshold, out on lag, and back to zero once the
// processor has drained it. Before KEDA first scales the processor to zero, it
// waits until every lease of the processor carries a continuation at the end of
// its partition, so that the lag KEDA measures is the items written after that.
//
// The account may be serverless (as kedacore/testing-infrastructure's is): no
// container is created with throughput. The step "partition cap" needs a
// container with two physical partitions, so throughput; it runs only when
// TF_AZURE_COSMOSDB_PROVISIONED_THROUGHPUT=true says the account is a
// provisioned-throughput one, and is skipped with that reason otherwise.
//
// Retries (KEDA's e2e runner retries a failed test at once): KEDA's
// CreateNamespace (through CreateKubernetesResources) deletes the namespace of an
// earlier attempt and waits up to 600 s for it to be gone (WaitForNamespaceDeletion)
// before creating it again; the cleanup deletes the namespace with KEDA's
// DeleteNamespace and does not wait. Each run uses a database of its own.
//
// Worst case 15 minutes (KEDA's runner gives a test 20): every wait of the steps
// is cut to the time left before a deadline 12.5 minutes after the start, and the
// cleanups that follow have 60 s (the two-partition container 30 s, the database
// 30 s). KEDA's wait for an earlier attempt's namespace is not cut, but it follows
// at most 60 s of setup and ends before the deadline. kubectl commands and the API
// calls of KEDA's helpers carry no deadline of their own and are not counted.
package azure_cosmosdb_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/joho/godotenv"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	azurehelper "github.com/kedacore/keda-cosmosdb-scaler/tests/scalers/azure/helper"
	. "github.com/kedacore/keda/v2/tests/helper"
)

// Load environment variables from .env file
var _ = godotenv.Load("../../../.env")

const (
	testName = "azure-cosmosdb-test"

	lagThreshold           = 10
	activationLagThreshold = 5

	// stepsTimeout ends the steps; the cleanups have their 60 s after it.
	stepsTimeout = 750 * time.Second
)

var (
	connectionString = os.Getenv("TF_AZURE_COSMOSDB_CONNECTION_STRING")
	testNamespace    = fmt.Sprintf("%s-ns", testName)
	secretName       = fmt.Sprintf("%s-secret", testName)
	triggerAuthName  = fmt.Sprintf("%s-ta", testName)
	deploymentName   = fmt.Sprintf("%s-deployment", testName)
	scaledObjectName = fmt.Sprintf("%s-so", testName)
)

type templateData struct {
	TestNamespace          string
	SecretName             string
	Connection             string
	TriggerAuthName        string
	DeploymentName         string
	ScaledObjectName       string
	DatabaseID             string
	ContainerID            string
	LeaseContainerID       string
	ProcessorName          string
	LagThreshold           int
	ActivationLagThreshold int
	MaxReplicaCount        int
}

const (
	triggerAuthTemplate = `
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: {{.TriggerAuthName}}
  namespace: {{.TestNamespace}}
spec:
  secretTargetRef:
    - parameter: connection
      name: {{.SecretName}}
      key: connection
`

	scaledObjectTemplate = `
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{.ScaledObjectName}}
  namespace: {{.TestNamespace}}
spec:
  scaleTargetRef:
    name: {{.DeploymentName}}
  pollingInterval: 5
  minReplicaCount: 0
  maxReplicaCount: {{.MaxReplicaCount}}
  cooldownPeriod: 10
  triggers:
    - type: azure-cosmosdb
      metadata:
        databaseId: {{.DatabaseID}}
        containerId: {{.ContainerID}}
        leaseDatabaseId: {{.DatabaseID}}
        leaseContainerId: {{.LeaseContainerID}}
        processorName: {{.ProcessorName}}
        changeFeedLagThreshold: "{{.LagThreshold}}"
        activationChangeFeedLagThreshold: "{{.ActivationLagThreshold}}"
      authenticationRef:
        name: {{.TriggerAuthName}}
`
)

func TestScaler(t *testing.T) {
	// setup
	ctx := context.Background()
	deadline := azurehelper.NewDeadline(stepsTimeout)
	t.Log("--- setting up ---")
	require.NotEmpty(t, connectionString, "TF_AZURE_COSMOSDB_CONNECTION_STRING env variable is required for azure cosmosdb test")
	cosmos := azurehelper.NewCosmosDBHelper(t, connectionString, testName)
	setupCtx, cancel := deadline.Context(ctx, time.Minute)
	defer cancel()
	cosmos.CreateDatabase(setupCtx, t) // registers its deletion first

	// Create kubernetes resources; the processor runs before any ScaledObject exists.
	kc := GetKubernetesClient(t)
	data, templates := getTemplateData(cosmos)
	t.Cleanup(func() { DeleteNamespace(t, testNamespace) }) // registered first
	CreateKubernetesResources(t, kc, testNamespace, data, templates)
	testCheckpoints(ctx, t, kc, cosmos, deadline)
	KubectlApplyWithTemplate(t, data, "scaledObjectTemplate", scaledObjectTemplate)

	// test scaling
	testNoLag(t, kc, deadline)
	testActivation(ctx, t, kc, cosmos, deadline)
	testScaleOut(ctx, t, kc, cosmos, deadline)
	testScaleIn(t, kc, deadline)
	t.Run("partition cap", func(t *testing.T) { testPartitionCap(ctx, t, kc, cosmos, data, deadline) })
}

func getTemplateData(cosmos *azurehelper.CosmosDBHelper) (templateData, []Template) {
	return templateData{
			TestNamespace:          testNamespace,
			SecretName:             secretName,
			Connection:             base64.StdEncoding.EncodeToString([]byte(connectionString)),
			TriggerAuthName:        triggerAuthName,
			DeploymentName:         deploymentName,
			ScaledObjectName:       scaledObjectName,
			DatabaseID:             cosmos.DatabaseID,
			ContainerID:            cosmos.Container.ID,
			LeaseContainerID:       cosmos.LeaseContainerID,
			ProcessorName:          cosmos.ProcessorName,
			LagThreshold:           lagThreshold,
			ActivationLagThreshold: activationLagThreshold,
			// Above the partitions of testScaleOut (one) and testPartitionCap (two): the scaler, not maxReplicaCount, bounds the scale-out.
			MaxReplicaCount: 4,
		}, []Template{
			{Name: "secretTemplate", Config: azurehelper.CosmosDBSecretTemplate},
			{Name: "triggerAuthTemplate", Config: triggerAuthTemplate},
			{Name: "deploymentTemplate", Config: azurehelper.CosmosDBProcessorTemplate},
		}
}

// testCheckpoints: the processor creates its lease; items written to the
// container give it a batch, which it checkpoints.
func testCheckpoints(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, deadline azurehelper.Deadline) {
	t.Log("--- the processor checkpoints every lease ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, deadline.Iterations(24, 5), 5),
		"replica count should be 1 after 2 minutes")
	require.True(t, cosmos.WaitForCheckpoints(ctx, t, time.Duration(deadline.Seconds(150))*time.Second),
		"the processor should checkpoint every lease at the end of its partition within 150 s")
}

// testNoLag: with every lease caught up, KEDA scales the processor to zero.
func testNoLag(t *testing.T, kc *kubernetes.Clientset, deadline azurehelper.Deadline) {
	t.Log("--- testing no lag ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, deadline.Iterations(24, 5), 5),
		"replica count should be 0 after 2 minutes")
}

// testActivation: a lag at or below activationChangeFeedLagThreshold does not wake the processor.
func testActivation(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, deadline azurehelper.Deadline) {
	t.Log("--- testing activation ---")
	writeCtx, cancel := deadline.Context(ctx, 30*time.Second)
	defer cancel()
	cosmos.InsertItems(writeCtx, t, cosmos.Container, activationLagThreshold-2)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, deadline.Seconds(60))
}

// testScaleOut: lag above the threshold in the container's one partition wakes
// the processor: one replica, as one partition has work (the metric is capped at
// changeFeedLagThreshold per partition with lag).
func testScaleOut(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, deadline azurehelper.Deadline) {
	t.Log("--- testing scale out ---")
	writeCtx, cancel := deadline.Context(ctx, 30*time.Second)
	defer cancel()
	cosmos.InsertItems(writeCtx, t, cosmos.Container, 3*lagThreshold)
	lag, err := cosmos.ReadLag(writeCtx, cosmos.Container, cosmos.ProcessorName)
	require.NoError(t, err)
	t.Logf("lag: %+v", lag)
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, deadline.Iterations(24, 5), 5),
		"replica count should be 1 after 2 minutes")
}

// testScaleIn: the processor drains the lag and checkpoints; KEDA scales it back to zero.
func testScaleIn(t *testing.T, kc *kubernetes.Clientset, deadline azurehelper.Deadline) {
	t.Log("--- testing scale in ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, deadline.Iterations(36, 5), 5),
		"replica count should be 0 after 3 minutes, the processor having drained the lag")
}

// testPartitionCap: lag in each of a container's two physical partitions scales
// the deployment to exactly two replicas, one per partition with work, though the
// lag (3 x changeFeedLagThreshold x 2) would ask for six and maxReplicaCount (4)
// allows more; it holds there for 60 s.
//
// It runs only on a provisioned-throughput account
// (TF_AZURE_COSMOSDB_PROVISIONED_THROUGHPUT=true): the container it needs has two
// physical partitions, so 11,000 RU/s autoscale (see CreateContainer), which a
// serverless account refuses. Autoscale bills, for each hour, the highest
// throughput the container scaled to in that hour, and at least 10% of its
// maximum: at least 1,100 RU/s for each clock hour the step runs in. The
// container is created at the step's start, its deletion registered first, so
// it is deleted when the step ends, passed or failed.
//
// The helper writes the two leases itself, in the documented partition key
// range lease format, at the end of each partition's change feed, under a
// processor name of their own, so the step needs no processor start-up; only
// the ScaledObject is pointed at them, the deployment's configuration (the
// first container, its own processor name) is not changed.
func testPartitionCap(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, data templateData, deadline azurehelper.Deadline) {
	if !azurehelper.Provisioned() {
		t.Skipf("skipped: the step needs a container with two physical partitions, so throughput, which a serverless account refuses; set %s=true for a provisioned-throughput account", azurehelper.ProvisionedThroughputEnv)
	}
	t.Log("--- testing the active-partition cap ---")
	stepCtx, cancel := deadline.Context(ctx, time.Minute)
	defer cancel()
	container := cosmos.CreateContainer(stepCtx, t, "items-two-partitions", 2)
	processor := "cap-" + cosmos.ProcessorName // not a prefix of the deployment's processor
	cosmos.WriteLeases(stepCtx, t, container, processor)
	data.ContainerID, data.ProcessorName = container.ID, processor
	KubectlApplyWithTemplate(t, data, "scaledObjectTemplate", scaledObjectTemplate)
	cosmos.InsertItemsIntoEveryPartition(stepCtx, t, container, 3*lagThreshold*container.PartitionCount())
	lag, err := cosmos.ReadLag(stepCtx, container, processor)
	require.NoError(t, err)
	t.Logf("lag: %+v", lag)
	require.Equal(t, container.PartitionCount(), lag.Lagging, "every partition should lag")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, lag.Lagging, deadline.Iterations(24, 5), 5),
		"replica count should be %d after 2 minutes", lag.Lagging)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, lag.Lagging, deadline.Seconds(60))
}

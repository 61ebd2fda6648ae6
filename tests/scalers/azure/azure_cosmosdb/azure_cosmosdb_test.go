//go:build e2e

// This suite scales KEDA's test processor (ghcr.io/kedacore/tests-azure-cosmosdb)
// with a connection string. It waits until every lease of the processor carries a
// continuation before KEDA first scales the processor to zero: the scaler does not
// count a lease without one, as it has no position to measure lag from.
//
// Worst case, the sum of every wait and timeout below, in seconds (KEDA's runner
// gives a test 20 minutes): setup requests 60 + namespace 30 + processor ready 120
// + checkpoints 150 + scale to zero 120 + activation writes 30 + activation hold 60
// + partition cap: requests 60 + two replicas 120 + hold 60 + container deletion 30
// + database deletion 30 = 870 s, 14.5 minutes. kubectl commands and the API calls
// of KEDA's helpers carry no deadline of their own and are not counted.
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
	t.Log("--- setting up ---")
	require.NotEmpty(t, connectionString, "TF_AZURE_COSMOSDB_CONNECTION_STRING env variable is required for azure cosmosdb test")
	cosmos := azurehelper.NewCosmosDBHelper(t, connectionString, testName)
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cosmos.CreateDatabase(setupCtx, t) // registers its deletion first

	// Create kubernetes resources; the processor runs before any ScaledObject exists.
	kc := GetKubernetesClient(t)
	data, templates := getTemplateData(cosmos)
	azurehelper.CreateNamespace(t, kc, testNamespace) // registers its deletion first
	KubectlApplyMultipleWithTemplate(t, data, templates)
	testCheckpoints(ctx, t, kc, cosmos)
	KubectlApplyWithTemplate(t, data, "scaledObjectTemplate", scaledObjectTemplate)

	// test scaling
	testNoLag(t, kc)
	testActivation(ctx, t, kc, cosmos)
	t.Run("partition cap", func(t *testing.T) { testPartitionCap(ctx, t, kc, cosmos, data) })
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
			// Above the two partitions of testPartitionCap: the scaler, not maxReplicaCount, bounds the scale-out.
			MaxReplicaCount: 4,
		}, []Template{
			{Name: "secretTemplate", Config: azurehelper.CosmosDBSecretTemplate},
			{Name: "triggerAuthTemplate", Config: triggerAuthTemplate},
			{Name: "deploymentTemplate", Config: azurehelper.CosmosDBProcessorTemplate},
		}
}

// testCheckpoints: the processor creates its lease; items written to the
// container give it a batch, which it checkpoints.
func testCheckpoints(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- the processor checkpoints every lease ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, 24, 5),
		"replica count should be 1 after 2 minutes")
	require.True(t, cosmos.WaitForCheckpoints(ctx, t, 150*time.Second),
		"the processor should checkpoint every lease at the end of its partition within 150 s")
}

// testNoLag: with every lease caught up, KEDA scales the processor to zero.
func testNoLag(t *testing.T, kc *kubernetes.Clientset) {
	t.Log("--- testing no lag ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 24, 5),
		"replica count should be 0 after 2 minutes")
}

// testActivation: a lag at or below activationChangeFeedLagThreshold does not wake the processor.
func testActivation(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing activation ---")
	writeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cosmos.InsertItems(writeCtx, t, cosmos.Container, activationLagThreshold-2)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testPartitionCap: lag in each of a container's two physical partitions scales
// the deployment to exactly two replicas, one per partition with work, though the
// lag (3 x changeFeedLagThreshold x 2) would ask for six and maxReplicaCount (4)
// allows more; it holds there for 60 s.
//
// The container exists only in this step: created at its start, its deletion
// registered first, so it is deleted when the step ends, passed or failed. It
// needs two physical partitions, so 11,000 RU/s autoscale (see
// CreateContainer), on a provisioned-throughput account (a serverless account
// refuses throughput). Autoscale bills each hour the highest throughput it
// scaled to in that hour, at least 10% of the maximum: 1,100 RU/s for the one
// clock hour the step runs in (two when it crosses the hour), more only if the
// step's requests scale it up, which its few hundred sequential requests are
// not expected to; the price of an RU/s-hour depends on the account's region.
//
// The helper writes the two leases itself, in the documented partition key
// range lease format, at the end of each partition's change feed, under a
// processor name of their own, so the step needs no processor start-up; only
// the ScaledObject is pointed at them, the deployment's configuration (the
// first container, its own processor name) is not changed.
func testPartitionCap(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, data templateData) {
	t.Log("--- testing the active-partition cap ---")
	stepCtx, cancel := context.WithTimeout(ctx, time.Minute)
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
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, lag.Lagging, 24, 5),
		"replica count should be %d after 2 minutes", lag.Lagging)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, lag.Lagging, 60)
}

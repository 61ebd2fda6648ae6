//go:build e2e

package azure_cosmosdb_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"

	"github.com/joho/godotenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	azurehelper "github.com/kedacore/keda-cosmosdb-scaler/tests/scalers/azure/helper"
	. "github.com/kedacore/keda/v2/tests/helper"
)

// Load environment variables from .env file
var _ = godotenv.Load("../../../.env")

const (
	testName = "azure-cosmosdb-test"

	// Target lag per replica and the lag needed to wake the processor from zero.
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
	secretTemplate = `
apiVersion: v1
kind: Secret
metadata:
  name: {{.SecretName}}
  namespace: {{.TestNamespace}}
data:
  connection: {{.Connection}}
`

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

	// The deployment stands in for the change feed processor: the test
	// itself moves the processor's checkpoints.
	deploymentTemplate = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.DeploymentName}}
  namespace: {{.TestNamespace}}
  labels:
    app: {{.DeploymentName}}
spec:
  replicas: 0
  selector:
    matchLabels:
      app: {{.DeploymentName}}
  template:
    metadata:
      labels:
        app: {{.DeploymentName}}
    spec:
      containers:
        - name: {{.DeploymentName}}
          image: ghcr.io/nginx/nginx-unprivileged:1.26
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
	t.Cleanup(func() { cosmos.DeleteDatabase(context.Background(), t) })
	cosmos.CreateContainers(ctx, t)
	require.GreaterOrEqual(t, cosmos.PartitionCount(), 2,
		"the monitored container needs two or more physical partitions to show the active-partition cap")
	cosmos.PlantLeases(ctx, t)

	// Create kubernetes resources
	kc := GetKubernetesClient(t)
	data, templates := getTemplateData(cosmos)
	t.Cleanup(func() { DeleteKubernetesResources(t, testNamespace, data, templates) })
	CreateKubernetesResources(t, kc, testNamespace, data, templates)

	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 1),
		"replica count should be 0 after 1 minute")

	// test scaling
	testNoLag(t, kc)
	testActivation(ctx, t, kc, cosmos)
	testScaleOut(ctx, t, kc, cosmos, data.MaxReplicaCount)
	testScaleIn(ctx, t, kc, cosmos)
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
			ContainerID:            cosmos.MonitoredContainer,
			LeaseContainerID:       cosmos.LeaseContainer,
			ProcessorName:          cosmos.ProcessorName,
			LagThreshold:           lagThreshold,
			ActivationLagThreshold: activationLagThreshold,
			// Above the partition count, so that the scaler's cap, not
			// maxReplicaCount, is what stops the scale-out.
			MaxReplicaCount: cosmos.PartitionCount() + 2,
		}, []Template{
			{Name: "secretTemplate", Config: secretTemplate},
			{Name: "triggerAuthTemplate", Config: triggerAuthTemplate},
			{Name: "deploymentTemplate", Config: deploymentTemplate},
			{Name: "scaledObjectTemplate", Config: scaledObjectTemplate},
		}
}

// testNoLag: every lease is checkpointed at the end of its partition's feed.
func testNoLag(t *testing.T, kc *kubernetes.Clientset) {
	t.Log("--- testing no lag ---")
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testActivation: a lag at or below activationChangeFeedLagThreshold does not wake the processor.
func testActivation(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing activation ---")
	cosmos.InsertItems(ctx, t, activationLagThreshold-2)

	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testScaleOut: the lag asks for three replicas per partition, but one
// partition is processed by one replica at a time, so the scaler caps the
// metric at one threshold per lagging partition.
func testScaleOut(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, maxReplicas int) {
	t.Log("--- testing scale out ---")
	cosmos.InsertItemsIntoEveryPartition(ctx, t, 3*lagThreshold*cosmos.PartitionCount())
	pending := cosmos.PendingPerPartition(ctx, t)
	t.Logf("pending items per partition: %v", pending)
	expected := azurehelper.CosmosDBExpectedReplicas(pending, lagThreshold, maxReplicas)
	require.Equal(t, cosmos.PartitionCount(), expected, "every partition should lag by more than the threshold")

	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, expected, 60, 3),
		"replica count should be %d (one per lagging partition) after 3 minutes", expected)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, expected, 30)
}

// testScaleIn: the processor checkpoints everything it was given.
func testScaleIn(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing scale in ---")
	cosmos.CatchUpCheckpoints(ctx, t)

	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 3),
		"replica count should be 0 after 3 minutes")
}

//go:build e2e
// +build e2e

// This suite scales KEDA's test processor (ghcr.io/kedacore/tests-azure-cosmosdb,
// the .NET SDK's change feed processor) and lets it checkpoint every lease before
// KEDA first scales it to zero. A .NET processor checkpoints a lease only after
// processing a batch from it (an empty read, 304, writes nothing); the scaler
// ignores a lease without a continuation, as it has no position to measure lag
// from; and a default .NET processor that acquires such a lease reads from "now",
// so a backlog counted there would be skipped by the replica it wakes.
//
// The scaler authenticates with Azure Workload Identity; the identity needs a
// Cosmos DB data-plane role on the account (Cosmos DB Built-in Data Reader is
// enough). The processor and the test itself use the connection string.
package azure_cosmosdb_aad_wi_test

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
	testName = "azure-cosmosdb-aad-wi-test"

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
	Endpoint               string
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
  podIdentity:
    provider: azure-workload
`

	deploymentTemplate = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.DeploymentName}}
  namespace: {{.TestNamespace}}
  labels:
    app: {{.DeploymentName}}
spec:
  replicas: 1
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
          image: ghcr.io/kedacore/tests-azure-cosmosdb
          env:
            - name: RUN_MODE
              value: processor
            - name: CosmosDbConfig__Connection
              valueFrom:
                secretKeyRef:
                  name: {{.SecretName}}
                  key: connection
            - name: CosmosDbConfig__DatabaseId
              value: {{.DatabaseID}}
            - name: CosmosDbConfig__ContainerId
              value: {{.ContainerID}}
            - name: CosmosDbConfig__LeaseDatabaseId
              value: {{.DatabaseID}}
            - name: CosmosDbConfig__LeaseContainerId
              value: {{.LeaseContainerID}}
            - name: CosmosDbConfig__ProcessorName
              value: {{.ProcessorName}}
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
        endpoint: {{.Endpoint}}
        leaseEndpoint: {{.Endpoint}}
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
	t.Cleanup(func() { cosmos.DeleteDatabase(ctx, t) })
	cosmos.CreateContainers(ctx, t, 1) // one physical partition: azure_cosmosdb tests the cap over two

	// Create kubernetes resources; the processor runs before any ScaledObject exists.
	kc := GetKubernetesClient(t)
	data, templates := getTemplateData(cosmos)
	t.Cleanup(func() { DeleteKubernetesResources(t, testNamespace, data, templates) })
	CreateKubernetesResources(t, kc, testNamespace, data, templates)
	testCheckpoints(ctx, t, kc, cosmos)
	KubectlApplyWithTemplate(t, data, "scaledObjectTemplate", scaledObjectTemplate)

	// test scaling
	testNoLag(t, kc)
	testActivation(ctx, t, kc, cosmos)
	testScaleOutAndIn(ctx, t, kc, cosmos)
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
			ContainerID:            cosmos.ContainerID,
			LeaseContainerID:       cosmos.LeaseContainerID,
			ProcessorName:          cosmos.ProcessorName,
			LagThreshold:           lagThreshold,
			ActivationLagThreshold: activationLagThreshold,
			// Above the partition count: the scaler, not maxReplicaCount, bounds the scale-out.
			MaxReplicaCount: cosmos.PartitionCount() + 2,
			Endpoint:        cosmos.Endpoint(),
		}, []Template{
			{Name: "secretTemplate", Config: secretTemplate},
			{Name: "triggerAuthTemplate", Config: triggerAuthTemplate},
			{Name: "deploymentTemplate", Config: deploymentTemplate},
		}
}

// testCheckpoints: the processor creates a lease per partition; items written
// to every partition give each lease a batch, which the processor checkpoints.
func testCheckpoints(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- the processor checkpoints every lease ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, 60, 5),
		"replica count should be 1 after 5 minutes")
	require.True(t, cosmos.WaitForCheckpoints(ctx, t),
		"the processor should checkpoint every lease at the end of its partition within 5 minutes")
}

// testNoLag: with every lease caught up, KEDA scales the processor to zero.
func testNoLag(t *testing.T, kc *kubernetes.Clientset) {
	t.Log("--- testing no lag ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 2),
		"replica count should be 0 after 2 minutes")
}

// testActivation: a lag at or below activationChangeFeedLagThreshold does not wake the processor.
func testActivation(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing activation ---")
	cosmos.InsertItems(ctx, t, activationLagThreshold-2)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testScaleOutAndIn: lag in the container's one partition wakes the processor,
// to one replica; it drains and checkpoints, and is scaled back to zero.
func testScaleOutAndIn(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing scale out ---")
	cosmos.InsertItemsIntoEveryPartition(ctx, t, 3*lagThreshold*cosmos.PartitionCount())
	lag, err := cosmos.ReadLag(ctx)
	require.NoError(t, err)
	t.Logf("lag: %+v", lag)
	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, 60, 2),
		"replica count should be 1 after 2 minutes")

	t.Log("--- testing scale in ---")
	assert.True(t, cosmos.WaitForCheckpoints(ctx, t), "the processor should catch up within 5 minutes")
	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 2),
		"replica count should be 0 after 2 minutes")
}

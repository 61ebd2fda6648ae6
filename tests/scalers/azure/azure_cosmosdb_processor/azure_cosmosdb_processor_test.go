//go:build e2e

// This variant scales a real change feed processor: KEDA's test image
// ghcr.io/kedacore/tests-azure-cosmosdb runs the .NET SDK's processor, which
// creates and checkpoints the leases itself, so the scaler reads leases the
// real SDK wrote on the real service. The processor drains its backlog as
// soon as it runs, so this variant checks reading, activation and scale-in;
// azure_cosmosdb_test.go, whose leases the test plants, checks the
// active-partition cap and splits.
package azure_cosmosdb_processor_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/joho/godotenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	azurehelper "github.com/kedacore/keda-cosmosdb-scaler/tests/scalers/azure/helper"
	. "github.com/kedacore/keda/v2/tests/helper"
)

// Load environment variables from .env file
var _ = godotenv.Load("../../../.env")

const (
	testName = "azure-cosmosdb-processor-test"

	processorImage = "ghcr.io/kedacore/tests-azure-cosmosdb"

	lagThreshold           = 10
	activationLagThreshold = 20
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
	ProcessorImage         string
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

	// The image reads either naming of its settings; both are set.
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
        - name: processor
          image: {{.ProcessorImage}}
          env:
            - name: RUN_MODE
              value: processor
            - name: COSMOS_CONNECTION
              valueFrom:
                secretKeyRef:
                  name: {{.SecretName}}
                  key: connection
            - name: COSMOS_DATABASE_ID
              value: {{.DatabaseID}}
            - name: COSMOS_CONTAINER_ID
              value: {{.ContainerID}}
            - name: COSMOS_LEASE_DATABASE_ID
              value: {{.DatabaseID}}
            - name: COSMOS_LEASE_CONTAINER_ID
              value: {{.LeaseContainerID}}
            - name: COSMOS_PROCESSOR_NAME
              value: {{.ProcessorName}}
            - name: CosmosDbConfig__Connection
              valueFrom:
                secretKeyRef:
                  name: {{.SecretName}}
                  key: connection
            - name: CosmosDbConfig__DatabaseId
              value: {{.DatabaseID}}
            - name: CosmosDbConfig__ContainerId
              value: {{.ContainerID}}
            - name: CosmosDbConfig__LeaseConnection
              valueFrom:
                secretKeyRef:
                  name: {{.SecretName}}
                  key: connection
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
        changeFeedLagThreshold: "{{.LagThreshold}}"
        activationChangeFeedLagThreshold: "{{.ActivationLagThreshold}}"
      authenticationRef:
        name: {{.TriggerAuthName}}
`
)

func TestScalerWithRealProcessor(t *testing.T) {
	// setup
	ctx := context.Background()
	t.Log("--- setting up ---")
	require.NotEmpty(t, connectionString, "TF_AZURE_COSMOSDB_CONNECTION_STRING env variable is required for azure cosmosdb test")

	cosmos := azurehelper.NewCosmosDBHelper(t, connectionString, testName)
	// The processor image creates its monitored container with /id if it is
	// missing, and refuses an existing one with another partition key path.
	cosmos.MonitoredPartitionKey = "/id"
	t.Cleanup(func() { cosmos.DeleteDatabase(context.Background(), t) })
	cosmos.CreateContainers(ctx, t)

	kc := GetKubernetesClient(t)
	data := getTemplateData(cosmos)
	templates := []Template{
		{Name: "secretTemplate", Config: secretTemplate},
		{Name: "triggerAuthTemplate", Config: triggerAuthTemplate},
		{Name: "deploymentTemplate", Config: deploymentTemplate},
	}
	t.Cleanup(func() {
		DeleteKubernetesResources(t, testNamespace, data, append(templates, Template{Name: "scaledObjectTemplate", Config: scaledObjectTemplate}))
	})
	CreateKubernetesResources(t, kc, testNamespace, data, templates)

	testProcessorWritesLeases(ctx, t, kc, cosmos)

	// From here KEDA scales the processor.
	KubectlApplyWithTemplate(t, data, "scaledObjectTemplate", scaledObjectTemplate)
	testNoLag(t, kc)
	testActivation(ctx, t, kc, cosmos)
	testScaleOutAndIn(ctx, t, kc, cosmos)
}

func getTemplateData(cosmos *azurehelper.CosmosDBHelper) templateData {
	return templateData{
		TestNamespace:          testNamespace,
		SecretName:             secretName,
		Connection:             base64.StdEncoding.EncodeToString([]byte(connectionString)),
		TriggerAuthName:        triggerAuthName,
		DeploymentName:         deploymentName,
		ScaledObjectName:       scaledObjectName,
		ProcessorImage:         processorImage,
		DatabaseID:             cosmos.DatabaseID,
		ContainerID:            cosmos.MonitoredContainer,
		LeaseContainerID:       cosmos.LeaseContainer,
		ProcessorName:          cosmos.ProcessorName,
		LagThreshold:           lagThreshold,
		ActivationLagThreshold: activationLagThreshold,
		MaxReplicaCount:        cosmos.PartitionCount() + 2,
	}
}

// testProcessorWritesLeases: the processor, running before any
// ScaledObject exists, creates one lease per partition and checkpoints
// each once it has processed items there; then it is scaled to zero,
// caught up.
func testProcessorWritesLeases(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- the real processor creates and checkpoints its leases ---")
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, 60, 5),
		"the processor should be running after 5 minutes")
	require.True(t, waitForLeases(ctx, t, cosmos, func(p azurehelper.CosmosDBLeaseProgress) bool { return p.Leases >= cosmos.PartitionCount() }),
		"the processor should have created a lease per partition")

	cosmos.InsertItemsIntoEveryPartition(ctx, t, 5*cosmos.PartitionCount())
	require.True(t, waitForLeases(ctx, t, cosmos, func(p azurehelper.CosmosDBLeaseProgress) bool { return p.Checkpointed == p.Leases }),
		"the processor should have checkpointed every lease")

	KubernetesScaleDeployment(t, kc, deploymentName, 0, testNamespace)
	require.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 1),
		"the processor should be stopped after 1 minute")
}

// testNoLag: the SDK's checkpoints are at the end of every partition's feed.
func testNoLag(t *testing.T, kc *kubernetes.Clientset) {
	t.Log("--- testing no lag ---")
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testActivation: a total lag at or below activationChangeFeedLagThreshold
// does not wake the processor.
func testActivation(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing activation ---")
	cosmos.InsertItems(ctx, t, activationLagThreshold-5)
	AssertReplicaCountNotChangeDuringTimePeriod(t, kc, deploymentName, testNamespace, 0, 60)
}

// testScaleOutAndIn: lag past the activation threshold wakes the processor;
// it drains the backlog and checkpoints, and KEDA scales it back to zero.
func testScaleOutAndIn(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper) {
	t.Log("--- testing scale out ---")
	cosmos.InsertItemsIntoEveryPartition(ctx, t, 3*lagThreshold*cosmos.PartitionCount())
	assert.True(t, waitForReplicasAtLeast(ctx, t, kc, 1, 3*time.Minute),
		"the processor should be woken from zero within 3 minutes")

	t.Log("--- testing scale in ---")
	assert.True(t, waitForLeases(ctx, t, cosmos, func(p azurehelper.CosmosDBLeaseProgress) bool { return p.Checkpointed == p.Leases }),
		"the processor should have checkpointed every lease")
	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, 60, 5),
		"replica count should be 0 within 5 minutes of the processor catching up")
}

// waitForLeases polls the lease container for up to 5 minutes.
func waitForLeases(ctx context.Context, t *testing.T, cosmos *azurehelper.CosmosDBHelper, done func(azurehelper.CosmosDBLeaseProgress) bool) bool {
	t.Helper()
	var progress azurehelper.CosmosDBLeaseProgress
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		if progress = cosmos.LeaseProgress(ctx, t); progress.Leases > 0 && done(progress) {
			t.Logf("leases: %+v", progress)
			return true
		}
	}
	t.Logf("leases after 5 minutes: %+v", progress)
	return false
}

// waitForReplicasAtLeast waits for the Deployment's desired replicas (what
// KEDA and the HPA set) to reach n. Ready replicas may never get there: the
// processor drains the backlog quickly, and the count falls again.
func waitForReplicasAtLeast(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, n int32, timeout time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		deployment, err := kc.AppsV1().Deployments(testNamespace).Get(ctx, deploymentName, metav1.GetOptions{})
		require.NoError(t, err)
		if deployment.Spec.Replicas != nil && *deployment.Spec.Replicas >= n {
			return true
		}
	}
	return false
}

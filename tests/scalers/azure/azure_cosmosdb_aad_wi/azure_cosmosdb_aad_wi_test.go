//go:build e2e

// This suite scales KEDA's test processor (ghcr.io/kedacore/tests-azure-cosmosdb)
// with Azure Workload Identity: to zero with no lag, out on lag, and back to zero
// once the processor has drained it. Before KEDA first scales the processor to
// zero, it waits until every lease of the processor carries a continuation at the
// end of its partition, so that the lag KEDA measures is the items written after
// that. The identity needs a Cosmos DB data-plane role on the account (Cosmos DB
// Built-in Data Reader is enough); the processor and the test itself use the
// connection string. azure_cosmosdb tests activation and the partition cap.
//
// The account may be serverless: no container is created with throughput.
// Retries (KEDA's e2e runner retries a failed test at once): KEDA's
// CreateNamespace (through CreateKubernetesResources) deletes the namespace of an
// earlier attempt and waits up to 600 s for it to be gone (WaitForNamespaceDeletion)
// before creating it again; the cleanup deletes the namespace with KEDA's
// DeleteNamespace and does not wait. Each run uses a database of its own.
//
// Worst case 15 minutes (KEDA's runner gives a test 20): every wait of the steps
// is cut to the time left before a deadline 12.5 minutes after the start, and the
// cleanups that follow have 30 s (the database). KEDA's wait for an earlier
// attempt's namespace is not cut, but it follows at most 60 s of setup and ends
// before the deadline. kubectl commands and the API calls of KEDA's helpers carry
// no deadline of their own and are not counted.
package azure_cosmosdb_aad_wi_test

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
	"k8s.io/client-go/kubernetes"

	azurehelper "github.com/kedacore/keda-cosmosdb-scaler/tests/scalers/azure/helper"
	. "github.com/kedacore/keda/v2/tests/helper"
)

// Load environment variables from .env file
var _ = godotenv.Load("../../../.env")

const (
	testName = "azure-cosmosdb-aad-wi-test"

	lagThreshold = 10

	// stepsTimeout ends the steps; the cleanup has its 30 s after it.
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
	TestNamespace    string
	SecretName       string
	Connection       string
	TriggerAuthName  string
	DeploymentName   string
	ScaledObjectName string
	DatabaseID       string
	ContainerID      string
	LeaseContainerID string
	ProcessorName    string
	LagThreshold     int
	MaxReplicaCount  int
	Endpoint         string
}

const (
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
	testScaleOutAndIn(ctx, t, kc, cosmos, deadline)
}

func getTemplateData(cosmos *azurehelper.CosmosDBHelper) (templateData, []Template) {
	return templateData{
			TestNamespace:    testNamespace,
			SecretName:       secretName,
			Connection:       base64.StdEncoding.EncodeToString([]byte(connectionString)),
			TriggerAuthName:  triggerAuthName,
			DeploymentName:   deploymentName,
			ScaledObjectName: scaledObjectName,
			DatabaseID:       cosmos.DatabaseID,
			ContainerID:      cosmos.Container.ID,
			LeaseContainerID: cosmos.LeaseContainerID,
			ProcessorName:    cosmos.ProcessorName,
			LagThreshold:     lagThreshold,
			// Above the partition count: the scaler, not maxReplicaCount, bounds the scale-out.
			MaxReplicaCount: 3,
			Endpoint:        cosmos.Endpoint(),
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

// testScaleOutAndIn: lag in the container's one partition wakes the processor,
// to one replica; it drains and checkpoints, and is scaled back to zero.
func testScaleOutAndIn(ctx context.Context, t *testing.T, kc *kubernetes.Clientset, cosmos *azurehelper.CosmosDBHelper, deadline azurehelper.Deadline) {
	t.Log("--- testing scale out ---")
	writeCtx, cancel := deadline.Context(ctx, 30*time.Second)
	defer cancel()
	cosmos.InsertItems(writeCtx, t, cosmos.Container, 3*lagThreshold)
	lag, err := cosmos.ReadLag(writeCtx, cosmos.Container, cosmos.ProcessorName)
	require.NoError(t, err)
	t.Logf("lag: %+v", lag)
	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 1, deadline.Iterations(24, 5), 5),
		"replica count should be 1 after 2 minutes")

	t.Log("--- testing scale in ---")
	assert.True(t, WaitForDeploymentReplicaReadyCount(t, kc, deploymentName, testNamespace, 0, deadline.Iterations(36, 5), 5),
		"replica count should be 0 after 3 minutes, the processor having drained the lag")
}

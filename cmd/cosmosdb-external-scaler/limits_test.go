package main

import (
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// maxMessage is the most a status message or a log line produced from one
// huge input may hold: a few KiB, whatever the input's size.
const maxMessage = 4 << 10

// scalerLogs watches every line the in-tree scalers log through
// controller-runtime's logger (TestMain installs it), V(1) included.
var scalerLogs = &lineWatch{}

// lineWatch keeps the length and the start of the longest line it saw,
// rather than every line of the whole test run.
type lineWatch struct {
	mu      sync.Mutex
	longest int
	head    string
}

func (w *lineWatch) add(prefix, args string) {
	line := prefix + " " + args
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(line) > w.longest {
		w.longest, w.head = len(line), line[:min(len(line), 300)]
	}
}

func (w *lineWatch) max() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest, w.head
}

// 1 MiB values in the ScaledObjectRef, through the real gRPC API: every
// call is refused or fails with a message of a few KiB, and no log line
// (the server's or the in-tree scaler's) grows with the input.
func TestHugeInputsStayBounded(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	huge := strings.Repeat("a", 1<<20)
	cases := []struct {
		name string
		ref  *pb.ScaledObjectRef
		code codes.Code
	}{
		{"processorName", ref(metadata("processorName", huge)), codes.InvalidArgument},
		{"databaseId", ref(metadata("databaseId", huge)), codes.InvalidArgument},
		{"leaseContainerId", ref(metadata("leaseContainerId", huge)), codes.InvalidArgument},
		{"changeFeedLagThreshold", ref(metadata("changeFeedLagThreshold", huge)), codes.InvalidArgument},
		{"changeFeedLagThreshold digits", ref(metadata("changeFeedLagThreshold", strings.Repeat("9", 1<<20))), codes.InvalidArgument},
		{"activationChangeFeedLagThreshold", ref(metadata("activationChangeFeedLagThreshold", huge)), codes.InvalidArgument},
		{"cloud", ref(metadata("cloud", huge)), codes.InvalidArgument},
		{"podIdentityProvider", ref(metadata("podIdentityProvider", huge)), codes.InvalidArgument},
		{"connectionFromScalerEnv", ref(metadata("connectionFromScalerEnv", huge)), codes.FailedPrecondition},
		{"connectionFromEnv", ref(metadata("connectionFromScalerEnv", "", "connectionFromEnv", huge)), codes.FailedPrecondition},
		{"endpoint", ref(metadata("connectionFromScalerEnv", "", "endpoint", "https://"+huge+".documents.azure.com/")), codes.InvalidArgument},
		{"namespace", &pb.ScaledObjectRef{Namespace: huge, Name: testName, ScalerMetadata: metadata()}, codes.InvalidArgument},
		{"name", &pb.ScaledObjectRef{Namespace: testNamespace, Name: huge, ScalerMetadata: metadata()}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, tc.ref)
			assertBoundedStatus(t, err, tc.code)
			_, err = f.client.IsActive(ctx, tc.ref)
			assertBoundedStatus(t, err, tc.code)
			_, err = f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: tc.ref, MetricName: huge})
			assertBoundedStatus(t, err, tc.code)
		})
	}

	// A valid trigger asked for a huge metric name it does not serve.
	_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(metadata()), MetricName: huge})
	assertBoundedStatus(t, err, codes.NotFound)

	// Ids at Cosmos DB's limit are accepted; the estimate fails (no such
	// database) with an error that quotes the id whole, and no more.
	longID := strings.Repeat("d", 255)
	_, err = f.client.IsActive(ctx, ref(metadata("databaseId", longID)))
	assertBoundedStatus(t, err, codes.Unavailable)
	if !strings.Contains(status.Convert(err).Message(), "read database "+longID) {
		t.Errorf("the estimate error does not name the database: %v", err)
	}

	for _, line := range strings.Split(f.logs.String(), "\n") {
		if len(line) > maxMessage {
			t.Errorf("server log line of %d bytes: %.300s…", len(line), line)
		}
	}
	if n, head := scalerLogs.max(); n > maxMessage {
		t.Errorf("scaler log line of %d bytes: %s…", n, head)
	}
}

func assertBoundedStatus(t *testing.T, err error, code codes.Code) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Errorf("got %v (%.300s), want code %v", st.Code(), st.Message(), code)
	}
	if n := len(st.Message()); n > maxMessage {
		t.Errorf("status message of %d bytes: %.300s…", n, st.Message())
	}
}

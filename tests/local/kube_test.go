//go:build e2elocal

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

var scaledObjectResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// cluster is the control plane hack/e2e-local.sh started (KUBECONFIG).
type cluster struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	start   time.Time // the timeline's zero
}

func newCluster() (*cluster, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{kube: kube, dynamic: dyn, start: time.Now()}, nil
}

// setUp skips the test unless hack/e2e-local.sh runs in mode (E2E_LOCAL_MODE:
// "intree", the default, or "external"), then connects to the embedded
// account and the control plane the script started.
func setUp(t *testing.T, mode string) (*cosmosAccount, *cluster) {
	t.Helper()
	switch got := os.Getenv("E2E_LOCAL_MODE"); {
	case mode == "intree" && got == "external":
		t.Skip("in-tree mode only: in external-scaler mode KEDA is stock v2.21.0")
	case mode == "external" && got != "external":
		t.Skip("external-scaler mode only (E2E_LOCAL_MODE=external: make e2e-local-external)")
	}
	account, err := cosmosAccountFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	k, err := newCluster()
	if err != nil {
		t.Fatal(err)
	}
	return account, k
}

// apply renders a manifest template and applies it with kubectl, as KEDA's
// e2e helpers do.
func (c *cluster) apply(t *testing.T, manifest string, data any) {
	t.Helper()
	var buf bytes.Buffer
	if err := template.Must(template.New("manifest").Option("missingkey=error").Parse(manifest)).Execute(&buf, data); err != nil {
		t.Fatalf("render manifest: %v", err)
	}
	cmd := exec.Command("kubectl", "apply", "-f", "-")
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func (c *cluster) replicas(ctx context.Context, ns, deployment string) (int32, error) {
	d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 1, nil
	}
	return *d.Spec.Replicas, nil
}

// elapsed is the time since the test run started, for the timeline.
func (c *cluster) elapsed() string {
	return fmt.Sprintf("t+%5.1fs", time.Since(c.start).Seconds())
}

// waitReplicas waits until the Deployment's spec.replicas is want, logging
// every change on the way. It fails the test after timeout.
func (c *cluster) waitReplicas(t *testing.T, ns, deployment string, want int32, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	began := time.Now()
	last := int32(-1)
	for {
		got, err := c.replicas(ctx, ns, deployment)
		if err == nil && got != last {
			t.Logf("%s %s replicas=%d", c.elapsed(), deployment, got)
			last = got
		}
		if err == nil && got == want {
			t.Logf("%s %s reached %d replicas in %.1fs", c.elapsed(), deployment, want, time.Since(began).Seconds())
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: replicas %d after %v, want %d (last error: %v)", deployment, last, timeout, want, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// holdReplicas asserts that spec.replicas stays want for the whole period.
func (c *cluster) holdReplicas(t *testing.T, ns, deployment string, want int32, period time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(period)
	for time.Now().Before(deadline) {
		got, err := c.replicas(ctx, ns, deployment)
		if err != nil {
			t.Fatalf("%s: %v", deployment, err)
		}
		if got != want {
			t.Fatalf("%s %s: replicas %d, want it to stay %d", c.elapsed(), deployment, got, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("%s %s held %d replicas for %v", c.elapsed(), deployment, want, period)
}

// recordTimeline logs every change of the Deployments' spec.replicas until
// ctx ends: the scaling timeline of the whole run, in one place.
func (c *cluster) recordTimeline(ctx context.Context, t *testing.T, ns string, deployments ...string) {
	last := map[string]int32{}
	for ctx.Err() == nil {
		for _, d := range deployments {
			got, err := c.replicas(ctx, ns, d)
			if err != nil {
				continue
			}
			if prev, seen := last[d]; !seen || prev != got {
				t.Logf("timeline %s %-14s replicas %d", c.elapsed(), d, got)
				last[d] = got
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// externalMetric reads one metric through the aggregated API, the way the
// HPA controller does.
func (c *cluster) externalMetric(ctx context.Context, ns, metric, scaledObject string) (v1beta1.ExternalMetricValueList, error) {
	var list v1beta1.ExternalMetricValueList
	raw, err := c.kube.CoreV1().RESTClient().Get().
		AbsPath("/apis/external.metrics.k8s.io/v1beta1/namespaces", ns, metric).
		Param("labelSelector", "scaledobject.keda.sh/name="+scaledObject).
		DoRaw(ctx)
	if err != nil {
		return list, fmt.Errorf("%w: %s", err, raw)
	}
	return list, json.Unmarshal(raw, &list)
}

// condition returns a ScaledObject status condition.
func (c *cluster) condition(ctx context.Context, ns, name, typ string) (status, reason, message string, err error) {
	so, err := c.dynamic.Resource(scaledObjectResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", "", err
	}
	conds, _, _ := unstructured.NestedSlice(so.Object, "status", "conditions")
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		if cond["type"] == typ {
			status, _ = cond["status"].(string)
			reason, _ = cond["reason"].(string)
			message, _ = cond["message"].(string)
			return status, reason, message, nil
		}
	}
	return "", "", "", nil
}

// warningEvents lists the Warning events about an object with the given reason.
func (c *cluster) warningEvents(ctx context.Context, ns, object, reason string) ([]corev1.Event, error) {
	list, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object + ",reason=" + reason})
	if err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out, nil
}

// eventually polls f every 500 ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	testhelp.Eventually(t, timeout, 500*time.Millisecond, what, f)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

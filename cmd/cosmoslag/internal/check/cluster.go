package check

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// clusterOptions are the flags of check's cluster form,
// cosmoslag check -n NAMESPACE SCALEDOBJECT.
type clusterOptions struct {
	namespace, context, kubeconfig string
	name                           string // the ScaledObject, the positional argument
}

func clusterFlags(fs *flag.FlagSet, o *clusterOptions) {
	fs.StringVar(&o.namespace, "n", "", "with a ScaledObject name: its namespace (default: the kubeconfig context's)")
	fs.StringVar(&o.namespace, "namespace", "", "the same as -n")
	fs.StringVar(&o.context, "context", "", "with a ScaledObject name: the kubeconfig context to use (default: the current one)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with a ScaledObject name: the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
}

// errNoKubeconfig replaces client-go's "try setting KUBERNETES_MASTER",
// which names no way out a user of check has.
var errNoKubeconfig = errors.New("no kubeconfig found (--kubeconfig, $KUBECONFIG or ~/.kube/config): give one to read from a cluster, or check a file with -f scaledobject.yaml")

// connectCluster makes the clients of the kubeconfig by client-go's usual
// loading rules, and the namespace of its context; tests replace it.
var connectCluster = func(kubeconfig, context string) (*trigger.Cluster, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	namespace, _, err := cc.Namespace()
	var rc *rest.Config
	if err == nil {
		rc, err = cc.ClientConfig()
	}
	if clientcmd.IsEmptyConfig(err) {
		return nil, "", errNoKubeconfig
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return &trigger.Cluster{Kube: kube, Dynamic: dyn}, namespace, nil
}

// problem says what is wrong with the cluster form's arguments, or "".
func (c *clusterOptions) problem(o *trigger.Options, positional []string) string {
	if len(positional) > 1 {
		return fmt.Sprintf("one ScaledObject name at most, got %d arguments", len(positional))
	}
	if len(positional) == 0 {
		if c.namespace != "" || c.context != "" || c.kubeconfig != "" {
			return "-n, --context and --kubeconfig go with a ScaledObject name: cosmoslag check -n NAMESPACE SCALEDOBJECT"
		}
		if o.File == "" && o.Set.Malformed == 0 {
			return "give the trigger: -f scaledobject.yaml (a file), or -n NAMESPACE SCALEDOBJECT (from the cluster); see --help"
		}
		return ""
	}
	c.name = positional[0]
	switch {
	case o.File != "":
		return "give either -f FILE or a ScaledObject name to read from the cluster, not both"
	case len(o.Auth) > 0 || len(o.EnvFiles) > 0 || o.Sample:
		return "--auth, --env-file and --emulator go with -f; with a ScaledObject name, the cluster supplies the objects and values (--set still overrides)"
	}
	o.File = "-" // satisfies Options.Problem; never read
	return ""
}

// openCluster reads the ScaledObject and what its trigger takes from the
// cluster and resolves the trigger as KEDA would.
func openCluster(ctx context.Context, c *clusterOptions, o *trigger.Options, stderr io.Writer) (*trigger.Setup, *clusterView, error) {
	cluster, namespace, err := connectCluster(c.kubeconfig, c.context)
	if err != nil {
		return nil, nil, err
	}
	namespace = cli.Or(c.namespace, cli.Or(namespace, "default"))
	m, values, so, err := cluster.ReadCluster(ctx, namespace, c.name, o.Trigger)
	if err != nil {
		return nil, nil, err
	}
	values.Set = o.Set.Values
	setup, err := trigger.FromManifests("check", m, o.Trigger, values, stderr)
	if err != nil {
		return nil, nil, err
	}
	view, err := readKEDAView(ctx, cluster.Kube, so)
	if err != nil {
		return nil, nil, err
	}
	return setup, view, nil
}

// clusterView is what KEDA and its HPA say of the ScaledObject now.
type clusterView struct {
	so  *kedav1alpha1.ScaledObject
	hpa *autoscalingv2.HorizontalPodAutoscaler // nil: KEDA has made none
}

// readKEDAView reads the HPA KEDA made for the ScaledObject (its
// status.hpaName, else keda-hpa-NAME). None is part of the view; a refused
// read is an error naming it.
func readKEDAView(ctx context.Context, kube kubernetes.Interface, so *kedav1alpha1.ScaledObject) (*clusterView, error) {
	name := cli.Or(so.Status.HpaName, "keda-hpa-"+so.Name)
	hpa, err := kube.AutoscalingV2().HorizontalPodAutoscalers(so.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &clusterView{so: so}, nil
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading HorizontalPodAutoscaler %s/%s is forbidden: the Role cosmoslag check runs with must allow get on it (see the README's Role)", so.Namespace, name)
	case err != nil:
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, fmt.Errorf("reading HorizontalPodAutoscaler %s/%s: %s", so.Namespace, name, status.Status().Message)
		}
		return nil, fmt.Errorf("reading HorizontalPodAutoscaler %s/%s: %w", so.Namespace, name, err)
	}
	return &clusterView{so: so, hpa: hpa}, nil
}

// kedaReport is KEDA's view beside the estimate, in check's report.
type kedaReport struct {
	Conditions []kedaCondition `json:"conditions"`
	HPA        string          `json:"hpa"`       // its name; "" when KEDA has made none
	HPAMetric  string          `json:"hpaMetric"` // the HPA's current value of the trigger's metric, as it reports it; "" none
	// HPAMetricTotal is that value as the trigger's metric (an
	// AverageValue times the HPA's current replicas).
	HPAMetricTotal  *float64 `json:"hpaMetricTotal,omitempty"`
	CurrentReplicas *int32   `json:"currentReplicas,omitempty"`
	DesiredReplicas *int32   `json:"desiredReplicas,omitempty"`
	Agree           bool     `json:"agree"`
	Verdict         string   `json:"verdict"`
}

type kedaCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// currentReplicas is the count the HPA's decision starts from in the
// cluster form: the HPA's current replicas, or 0 without an HPA.
func (v *clusterView) currentReplicas() int {
	if v.hpa == nil {
		return 0
	}
	return int(v.hpa.Status.CurrentReplicas)
}

// fill sets KEDA's view in the report and says whether it agrees with the
// estimate: the same desired replicas, no fallback in use.
func (v *clusterView) fill(r *checkReport) {
	k := &kedaReport{Conditions: []kedaCondition{}}
	fallback := ""
	for _, c := range v.so.Status.Conditions {
		k.Conditions = append(k.Conditions, kedaCondition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
		if c.Type == kedav1alpha1.ConditionFallback && c.Status == metav1.ConditionTrue {
			fallback = c.Message
		}
	}
	r.KEDA = k
	if v.hpa != nil {
		k.HPA = v.hpa.Name
		cur, desired := v.hpa.Status.CurrentReplicas, v.hpa.Status.DesiredReplicas
		k.CurrentReplicas, k.DesiredReplicas = &cur, &desired
		for _, m := range v.hpa.Status.CurrentMetrics {
			if m.Type != autoscalingv2.ExternalMetricSourceType || m.External == nil || m.External.Metric.Name != r.MetricName {
				continue
			}
			switch {
			case m.External.Current.AverageValue != nil:
				k.HPAMetric = m.External.Current.AverageValue.String() + " (average)"
				total := math.Round(m.External.Current.AverageValue.AsApproximateFloat64()*float64(cur)*100) / 100
				k.HPAMetricTotal = &total
			case m.External.Current.Value != nil:
				k.HPAMetric = m.External.Current.Value.String()
				total := m.External.Current.Value.AsApproximateFloat64()
				k.HPAMetricTotal = &total
			}
		}
	}
	switch {
	case r.checkEstimate == nil:
		k.Verdict = "not compared: the estimate failed"
	case fallback != "":
		k.Verdict = fmt.Sprintf("they disagree: KEDA is using the ScaledObject's fallback (%s), not this trigger's metric; this estimate reads metric %d", fallback, r.Metric)
	case v.hpa == nil:
		k.Verdict = fmt.Sprintf("not compared: KEDA has made no HPA for the ScaledObject; this estimate reads metric %d", r.Metric)
	case r.Replicas != nil && *k.DesiredReplicas == r.Replicas.Desired:
		k.Agree = true
		k.Verdict = fmt.Sprintf("they agree: %d desired replica(s); metric %d here, %s", r.Replicas.Desired, r.Metric, k.hpaMetricText())
	default:
		k.Verdict = fmt.Sprintf("they disagree: the HPA wants %d replica(s), this estimate %d; metric %d here, %s (the HPA's is from KEDA's last poll)",
			*k.DesiredReplicas, r.Replicas.Desired, r.Metric, k.hpaMetricText())
	}
}

// hpaMetricText is the HPA's value of the metric as the trigger's metric,
// comparable with this estimate's: an AverageValue is shown times the
// HPA's current replicas ("100 in the HPA (50 average × 2 replica(s))").
func (k *kedaReport) hpaMetricText() string {
	switch {
	case k.HPAMetricTotal == nil:
		return "none in the HPA"
	case strings.HasSuffix(k.HPAMetric, " (average)"):
		return fmt.Sprintf("%s in the HPA (%s average × %d replica(s))", strconv.FormatFloat(*k.HPAMetricTotal, 'f', -1, 64), strings.TrimSuffix(k.HPAMetric, " (average)"), *k.CurrentReplicas)
	}
	return k.HPAMetric + " in the HPA"
}

// writeKEDAView writes KEDA's view and the verdict.
func writeKEDAView(b *strings.Builder, r *checkReport) {
	k := r.KEDA
	if k == nil {
		return
	}
	b.WriteString("\nKEDA's view\n")
	for _, c := range k.Conditions {
		// KEDA leaves a condition's reason and message empty at times
		// (Paused False on a ScaledObject that was never paused).
		detail := c.Reason
		if c.Message != "" {
			detail = strings.TrimPrefix(detail+": "+c.Message, ": ")
		}
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-10s %-7s %s", c.Type, c.Status, detail), " ") + "\n")
	}
	if k.HPA == "" {
		b.WriteString("  HPA        none: KEDA has made no HPA for this ScaledObject\n")
	} else {
		fmt.Fprintf(b, "  HPA        %s: metric %s, replicas %d current, %d desired\n", k.HPA, cli.Or(k.HPAMetric, "not reported"), *k.CurrentReplicas, *k.DesiredReplicas)
	}
	fmt.Fprintf(b, "KEDA and this estimate: %s\n", k.Verdict)
}

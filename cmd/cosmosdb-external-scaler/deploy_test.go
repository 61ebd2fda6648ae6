package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// manifestPath installs the external scaler and nothing else;
// examplePath holds only the example ScaledObject that uses it.
const (
	manifestPath = "../../deploy/external-scaler.yaml"
	examplePath  = "../../deploy/external-scaler-scaledobject.yaml"
)

// deployManifest holds the objects of both files.
type deployManifest struct {
	secret       corev1.Secret
	deployment   appsv1.Deployment
	service      corev1.Service
	policy       networkingv1.NetworkPolicy
	scaledObject kedav1alpha1.ScaledObject
}

func readDeployManifest(t *testing.T) deployManifest {
	t.Helper()
	var m deployManifest
	readManifestFile(t, manifestPath, &m, "Secret", "ServiceAccount", "Deployment", "Service", "NetworkPolicy")
	readManifestFile(t, examplePath, &m, "ScaledObject")
	return m
}

// readManifestFile decodes path's documents into m, which must be exactly
// of the given kinds, each present.
func readManifestFile(t *testing.T, path string, m *deployManifest, kinds ...string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if head.Kind != "" && !slices.Contains(kinds, head.Kind) {
			t.Fatalf("%s holds a %s; it should hold only %v", path, head.Kind, kinds)
		}
		var target any
		switch head.Kind {
		case "":
			continue // comments only
		case "Secret":
			target = &m.secret
		case "ServiceAccount":
			target = &corev1.ServiceAccount{}
		case "Deployment":
			target = &m.deployment
		case "Service":
			target = &m.service
		case "NetworkPolicy":
			target = &m.policy
		case "ScaledObject":
			target = &m.scaledObject
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s %s: %v", path, head.Kind, err)
		}
		seen[head.Kind] = true
	}
	for _, kind := range kinds {
		if !seen[kind] {
			t.Fatalf("%s has no %s", path, kind)
		}
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// deploy/external-scaler.yaml and its example ScaledObject fit together: the container's flags are
// valid, its ports, probes, Service and scalerAddress agree, the Secret is
// its environment, and the example trigger builds a scaler with the
// variables the Secret defines.
func TestDeployManifest(t *testing.T) {
	m := readDeployManifest(t)
	pod := m.deployment.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]

	var cfg config
	fs := newFlagSet(&cfg)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("container args: %v", err)
	}
	if err := cfg.validate(); err != nil {
		t.Fatalf("container args: %v", err)
	}
	if _, err := newLogger(&bytes.Buffer{}, cfg.logLevel, cfg.logFormat); err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, p := range c.Ports {
		ports[p.Name] = fmt.Sprint(p.ContainerPort)
	}
	if ports["grpc"] != portOf(t, cfg.address) || ports["health"] != portOf(t, cfg.healthAddress) {
		t.Errorf("container ports %v, flags --address %s --health-address %s", ports, cfg.address, cfg.healthAddress)
	}
	for name, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.GRPC == nil || fmt.Sprint(probe.GRPC.Port) != ports["health"] {
			t.Errorf("%s probe is not a gRPC probe on the health port", name)
		}
	}
	if grace := pod.Spec.TerminationGracePeriodSeconds; grace == nil || float64(*grace) <= cfg.shutdownTimeout.Seconds() {
		t.Errorf("terminationGracePeriodSeconds must exceed --shutdown-timeout %v", cfg.shutdownTimeout)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != m.secret.Name {
		t.Errorf("the container does not load Secret %s as its environment", m.secret.Name)
	}
	if m.secret.Namespace != m.deployment.Namespace || m.service.Namespace != m.deployment.Namespace {
		t.Error("Secret, Deployment and Service are not in one namespace")
	}
	for k, v := range m.service.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the pod labels", k, v)
		}
	}
	if len(m.service.Spec.Ports) != 1 || m.service.Spec.Ports[0].TargetPort.String() != "grpc" {
		t.Fatalf("Service ports %+v", m.service.Spec.Ports)
	}

	triggers := m.scaledObject.Spec.Triggers
	if len(triggers) != 1 || (triggers[0].Type != "external" && triggers[0].Type != "external-push") {
		t.Fatalf("triggers %+v", triggers)
	}
	md := triggers[0].Metadata
	wantAddr := fmt.Sprintf("%s.%s.svc.cluster.local:%d", m.service.Name, m.service.Namespace, m.service.Spec.Ports[0].Port)
	if md["scalerAddress"] != wantAddr {
		t.Errorf("scalerAddress %q, want %q", md["scalerAddress"], wantAddr)
	}
	for k := range md {
		if strings.HasSuffix(k, "FromEnv") || slices.Contains(secretParams, k) {
			t.Errorf("example trigger uses %s, which KEDA rewrites or which holds a secret", k)
		}
	}

	// The trigger against the Secret's variables (their placeholder values
	// replaced by a well-formed connection string).
	env := map[string]string{}
	for name := range m.secret.StringData {
		env[name] = "AccountEndpoint=https://example.documents.azure.com:443/;AccountKey=" + fakeKey + ";"
	}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	r := &pb.ScaledObjectRef{Namespace: m.scaledObject.Namespace, Name: m.scaledObject.Name, ScalerMetadata: md}
	in, err := newInstance(r, instanceKey{r.Namespace, r.Name, metadataHash(md)}, serverOptions{httpTimeout: cfg.httpTimeout, lookupEnv: lookup, newScaler: newCosmosScaler})
	if err != nil {
		t.Fatalf("example trigger: %v", err)
	}
	if in.target != 100 {
		t.Errorf("example target %d", in.target)
	}
}

// fakeKey is a syntactically valid account key (64 zero bytes, base64).
var fakeKey = strings.Repeat("A", 86) + "=="

// The plain manifest serves plain text, so its NetworkPolicy admits only
// KEDA's operator and metrics server pods, in KEDA's namespace, to the
// gRPC port of the scaler's pods; the health port stays reachable for
// probes and Prometheus.
func TestDeployManifestNetworkPolicy(t *testing.T) {
	m := readDeployManifest(t)
	np := m.policy
	pod := m.deployment.Spec.Template
	if np.Namespace != m.deployment.Namespace || len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Fatalf("NetworkPolicy %s/%s selects %v", np.Namespace, np.Name, np.Spec.PodSelector.MatchLabels)
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("NetworkPolicy selector %s=%s does not match the pod labels %v", k, v, pod.Labels)
		}
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v, want Ingress", np.Spec.PolicyTypes)
	}
	var grpcPeers []string
	healthOpen := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			switch {
			case p.Port == nil:
				t.Errorf("a rule opens every port: %+v", rule)
			case p.Port.String() == "grpc":
				if len(rule.From) == 0 {
					t.Errorf("the gRPC port is open to anyone: %+v", rule)
				}
				for _, peer := range rule.From {
					if peer.NamespaceSelector == nil || peer.PodSelector == nil || peer.IPBlock != nil {
						t.Fatalf("peer %+v is not a namespace and pod selector together", peer)
					}
					grpcPeers = append(grpcPeers, peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]+"/"+peer.PodSelector.MatchLabels["app.kubernetes.io/name"])
				}
			case p.Port.String() == "health":
				healthOpen = true
			default:
				t.Errorf("a rule names port %s", p.Port.String())
			}
		}
	}
	if want := []string{"keda/keda-operator", "keda/keda-operator-metrics-apiserver"}; !slices.Equal(grpcPeers, want) {
		t.Errorf("the gRPC port admits %v, want %v", grpcPeers, want)
	}
	if !healthOpen {
		t.Error("the health port (probes, /metrics) is not admitted")
	}
}

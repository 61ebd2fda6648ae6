// Package chart tests the external scaler's Helm chart with the pinned
// helm from the Go module proxy: helm lint --strict, and assertions on
// what helm template renders, the command line checked against the real
// command. Its own package, so that building helm gets its own timeout.
package chart

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

const (
	root  = "../../.."
	chart = "deploy/helm/cosmosdb-external-scaler"
)

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// helmBinary installs the Makefile's pinned helm into .cache/bin (a no-op
// when `make tools` did already) and returns its path; offline outside CI
// the test is skipped, saying so.
func helmBinary(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^HELM_PKG := (\S+@v\S+)$`).FindStringSubmatch(readRepoFile(t, "Makefile"))
	if m == nil {
		t.Fatal("the Makefile pins no HELM_PKG := pkg@version")
	}
	bin, err := filepath.Abs(filepath.Join(root, ".cache", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "install", m[1])
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	testhelp.NetworkStep(t, "go install "+m[1], "the Go module proxy", err, out)
	return filepath.Join(bin, "helm")
}

var helmPath string

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if helmPath == "" {
		helmPath = helmBinary(t)
	}
	cmd := exec.Command(helmPath, args...)
	cmd.Dir = root
	// No cluster, no user configuration.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// rendered is helm template's output, by kind.
type rendered struct {
	docs map[string][][]byte
}

func (r rendered) one(t *testing.T, kind string, into any) {
	t.Helper()
	if len(r.docs[kind]) != 1 {
		t.Fatalf("rendered %d %s, want 1", len(r.docs[kind]), kind)
	}
	if err := yaml.UnmarshalStrict(r.docs[kind][0], into); err != nil {
		t.Fatalf("%s: %v\n%s", kind, err, r.docs[kind][0])
	}
}

func template(t *testing.T, set ...string) rendered {
	t.Helper()
	return templateChart(t, chart, set...)
}

// kubeVersion is the cluster version helm template assumes: a helm built
// with go install reports no Kubernetes version of its own (v1.20.0).
const kubeVersion = "1.32.0"

func templateChart(t *testing.T, dir string, set ...string) rendered {
	t.Helper()
	args := []string{"template", "cosmosdb-external-scaler", dir, "--namespace", "keda", "--kube-version", kubeVersion}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	r := rendered{docs: map[string][][]byte{}}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered document is not YAML: %v\n%s", err, doc)
		}
		if head.Kind != "" {
			r.docs[head.Kind] = append(r.docs[head.Kind], []byte(doc))
		}
	}
	return r
}

func TestHelmLintStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	for _, set := range [][]string{nil, {"tls.enabled=true", "tls.existingSecret=scaler-tls", "credentials.existingSecret=cosmos", "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true"}} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// The default render: 2 replicas with a PodDisruptionBudget, the
// restricted security context, the gRPC and health ports, probes on the
// health port, a Service whose selector picks the pods; the command line is
// one the real command accepts.
func TestChartDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	r := template(t)
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if len(r.docs[kind]) != 0 {
			t.Errorf("a %s is rendered by default", kind)
		}
	}
	var d appsv1.Deployment
	r.one(t, "Deployment", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template
	var pdb policyv1.PodDisruptionBudget
	r.one(t, "PodDisruptionBudget", &pdb)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !selects(pdb.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("PodDisruptionBudget %+v does not keep 1 of the pods %v", pdb.Spec, pod.Labels)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	appVersion := regexp.MustCompile(`(?m)^appVersion: "?([^"\n]+)"?$`).FindStringSubmatch(readRepoFile(t, chart+"/Chart.yaml"))
	if appVersion == nil || c.Image != "ghcr.io/kedacore/cosmosdb-external-scaler:"+appVersion[1] {
		t.Errorf("image %q, want the chart's appVersion %v", c.Image, appVersion)
	}
	// The plain manifest deploys the same image.
	if m := regexp.MustCompile(`(?m)^\s+image: (\S+)`).FindStringSubmatch(readRepoFile(t, "deploy/external-scaler.yaml")); m == nil || m[1] != c.Image {
		t.Errorf("deploy/external-scaler.yaml runs image %v, the chart %s", m, c.Image)
	}
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot and the RuntimeDefault seccomp profile", psc)
	}
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v is not restricted", sc)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc"] != 6000 || ports["health"] != 6001 {
		t.Errorf("ports %v", ports)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.GRPC == nil || p.GRPC.Port != ports["health"] {
			t.Errorf("%s probe %+v is not a gRPC probe on the health port", name, p)
		}
	}
	if !slices.Contains(c.Args, "--health-address=:6001") || !slices.Contains(c.Args, "--address=:6000") {
		t.Errorf("args %v do not listen on the ports", c.Args)
	}
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom %v without credentials.existingSecret", c.EnvFrom)
	}
	if pod.Annotations["prometheus.io/port"] != "6001" || pod.Annotations["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v", pod.Annotations)
	}
	var svc corev1.Service
	r.one(t, "Service", &svc)
	if !selects(svc.Spec.Selector, pod.Labels) {
		t.Errorf("Service selector %v does not pick the pods %v", svc.Spec.Selector, pod.Labels)
	}
	svcPorts := map[string]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = p
	}
	if p := svcPorts["grpc"]; p.Port != 6000 || p.TargetPort.String() != "grpc" {
		t.Errorf("Service grpc port %+v", p)
	}
	var sa corev1.ServiceAccount
	r.one(t, "ServiceAccount", &sa)
	if pod.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the pod runs as %q, the chart creates %q", pod.Spec.ServiceAccountName, sa.Name)
	}
	checkArgsWithTheCommand(t, c.Args)
}

// TLS from an existing Secret, credentials from an existing Secret as
// environment variables, the ServiceMonitor on the metrics port, the
// PrometheusRule with deploy/'s rules.
func TestChartOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	r := template(t, "tls.enabled=true", "tls.existingSecret=scaler-tls", "credentials.existingSecret=cosmos-credentials",
		"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prometheus", "metrics.prometheusRule.enabled=true",
		"replicaCount=3", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		`config.allowedEndpoints=gw.internal\,*.gw.internal`)
	var d appsv1.Deployment
	r.one(t, "Deployment", &d)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	for _, want := range []string{"--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key", "--tls-client-ca=/tls/ca.crt", "--allowed-endpoints=gw.internal,*.gw.internal"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/tls" || !c.VolumeMounts[0].ReadOnly ||
		len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "scaler-tls" {
		t.Errorf("the TLS Secret is not mounted read-only at /tls: %+v %+v", c.VolumeMounts, pod.Volumes)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "cosmos-credentials" {
		t.Errorf("envFrom %+v, want the credentials Secret", c.EnvFrom)
	}
	if !strings.HasSuffix(c.Image, "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") {
		t.Errorf("image %q does not use the digest", c.Image)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *d.Spec.Replicas)
	}
	checkArgsWithTheCommand(t, c.Args)

	var sm struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			Selector  struct{ MatchLabels map[string]string }
			Endpoints []struct {
				Port, Path  string
				HonorLabels bool `json:"honorLabels"`
			}
		}
	}
	if len(r.docs["ServiceMonitor"]) != 1 || yaml.Unmarshal(r.docs["ServiceMonitor"][0], &sm) != nil {
		t.Fatalf("ServiceMonitor: %d rendered", len(r.docs["ServiceMonitor"]))
	}
	var svc corev1.Service
	r.one(t, "Service", &svc)
	hasMetricsPort := slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" && p.TargetPort.String() == "health" })
	if sm.Metadata.Labels["release"] != "prometheus" || !selects(sm.Spec.Selector.MatchLabels, svc.Labels) || !hasMetricsPort ||
		len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" || !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor %+v does not scrape the Service's metrics port %+v", sm, svc.Spec.Ports)
	}

	if len(r.docs["PrometheusRule"]) != 1 {
		t.Fatalf("%d PrometheusRules", len(r.docs["PrometheusRule"]))
	}
	if got, want := ruleExprs(t, r.docs["PrometheusRule"][0]), ruleExprs(t, []byte(readRepoFile(t, "deploy/external-scaler-prometheusrule.yaml"))); !slices.Equal(got, want) {
		t.Errorf("the chart's alert rules differ from deploy/external-scaler-prometheusrule.yaml:\n%q\n%q", got, want)
	}

	// The user's own server certificate: the chart generates none, and
	// without a client Secret for KEDA it has nothing to put into a
	// ClusterTriggerAuthentication.
	if n := len(r.docs["Secret"]); n != 0 {
		t.Errorf("with tls.existingSecret the chart renders %d Secrets, want none", n)
	}
	if n := len(r.docs["ClusterTriggerAuthentication"]); n != 0 {
		t.Errorf("with tls.existingSecret and no tls.kedaClient.existingSecret the chart renders %d ClusterTriggerAuthentications", n)
	}
	withClient := template(t, "tls.existingSecret=scaler-tls", "tls.kedaClient.existingSecret=keda-client", "tls.kedaClient.namespace=autoscaling")
	if got := ctaSecrets(t, withClient); !maps.Equal(got, map[string]string{"caCert": "keda-client/ca.crt", "tlsClientCert": "keda-client/tls.crt", "tlsClientKey": "keda-client/tls.key"}) {
		t.Errorf("ClusterTriggerAuthentication with tls.kedaClient.existingSecret: %v", got)
	}
}

// ctaSecrets returns the one rendered ClusterTriggerAuthentication's
// parameters as "secret/key".
func ctaSecrets(t *testing.T, r rendered) map[string]string {
	t.Helper()
	var cta struct {
		Spec struct {
			SecretTargetRef []struct{ Parameter, Name, Key string } `json:"secretTargetRef"`
		}
	}
	if len(r.docs["ClusterTriggerAuthentication"]) != 1 || yaml.Unmarshal(r.docs["ClusterTriggerAuthentication"][0], &cta) != nil {
		t.Fatalf("rendered %d ClusterTriggerAuthentications, want 1", len(r.docs["ClusterTriggerAuthentication"]))
	}
	out := map[string]string{}
	for _, ref := range cta.Spec.SecretTargetRef {
		out[ref.Parameter] = ref.Name + "/" + ref.Key
	}
	return out
}

// notes renders NOTES.txt with the given values: helm template leaves it
// out, so a copy of the chart renders it into a ConfigMap with tpl, in the
// same context.
func notes(t *testing.T, set ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, chart))); err != nil {
		t.Fatal(err)
	}
	notesTemplate, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "NOTES.txt"), notesTemplate, 0o644); err != nil {
		t.Fatal(err)
	}
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n{{ tpl (.Files.Get \"files/NOTES.txt\") . | indent 4 }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	r := templateChart(t, dir, set...)
	var notesMap corev1.ConfigMap
	r.one(t, "ConfigMap", &notesMap)
	return notesMap.Data["notes"]
}

// notesObject is a Kubernetes object the notes show.
type notesObject struct {
	Kind string
	Spec struct {
		Triggers []struct {
			Type              string
			Metadata          map[string]string
			AuthenticationRef struct{ Kind, Name string } `json:"authenticationRef"`
		}
		SecretTargetRef []struct{ Parameter, Name, Key string } `json:"secretTargetRef"`
	}
	Metadata struct{ Name string }
}

// notesObjects parses the YAML blocks of the notes (indented paragraphs
// that start with apiVersion), by kind; a block that does not parse fails.
func notesObjects(t *testing.T, notes string) map[string]notesObject {
	t.Helper()
	out := map[string]notesObject{}
	for _, para := range strings.Split(notes, "\n\n") {
		if !strings.HasPrefix(para, "  apiVersion: ") {
			continue
		}
		var o notesObject
		if err := yaml.Unmarshal([]byte(para), &o); err != nil || o.Kind == "" {
			t.Fatalf("a block of the notes does not parse: %v\n%s", err, para)
		}
		out[o.Kind] = o
	}
	return out
}

// NOTES.txt shows the ScaledObject a user writes next, with the scaler's
// address and, with TLS, enableTLS and the (Cluster)TriggerAuthentication
// that gives KEDA the client certificate.
func TestChartNotes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	text := notes(t, "tls.existingSecret=scaler-tls", "credentials.existingSecret=cosmos-credentials")
	for _, want := range []string{"kind: ScaledObject", "type: external", "scalerAddress: cosmosdb-external-scaler.keda.svc.cluster.local:6000",
		`enableTLS: "true"`, "connectionFromScalerEnv: COSMOS_CONNECTION", "cosmos-credentials", "processorName:"} {
		if !strings.Contains(text, want) {
			t.Errorf("NOTES lack %q:\n%s", want, text)
		}
	}
	objects := notesObjects(t, text)
	so := objects["ScaledObject"]
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "external" {
		t.Fatalf("the notes' ScaledObject has triggers %+v", so.Spec.Triggers)
	}
	// The user's own server certificate: a TriggerAuthentication to write.
	ta, ok := objects["TriggerAuthentication"]
	if ref := so.Spec.Triggers[0].AuthenticationRef; !ok || ref.Name != ta.Metadata.Name || ref.Kind != "" {
		t.Errorf("the ScaledObject's authenticationRef %+v does not name the notes' TriggerAuthentication %+v", ref, ta.Metadata)
	}
	checkTLSParameters(t, ta)

	// The defaults: the chart's ClusterTriggerAuthentication.
	text = notes(t)
	objects = notesObjects(t, text)
	cta, ok := objects["ClusterTriggerAuthentication"]
	if ref := objects["ScaledObject"].Spec.Triggers[0].AuthenticationRef; !ok || ref.Kind != "ClusterTriggerAuthentication" || ref.Name != "cosmosdb-external-scaler-tls" || cta.Metadata.Name != ref.Name {
		t.Errorf("the default notes' authenticationRef %+v, ClusterTriggerAuthentication %+v", ref, cta.Metadata)
	}
	checkTLSParameters(t, cta)
	if !strings.Contains(text, "client certificates required") {
		t.Errorf("the default notes do not say the endpoint requires client certificates:\n%s", text)
	}

	// Without TLS: no authentication, and the NetworkPolicy (or its absence) is named.
	text = notes(t, "tls.enabled=false")
	objects = notesObjects(t, text)
	if ref := objects["ScaledObject"].Spec.Triggers[0].AuthenticationRef; ref.Name != "" || strings.Contains(text, "enableTLS") {
		t.Errorf("tls.enabled=false: the notes' trigger still uses TLS (%+v)", ref)
	}
	if !strings.Contains(text, "NetworkPolicy cosmosdb-external-scaler admits only KEDA") {
		t.Errorf("tls.enabled=false: the notes do not name the NetworkPolicy:\n%s", text)
	}
	if text := notes(t, "tls.enabled=false", "networkPolicy.enabled=false"); !strings.Contains(text, "WARNING") {
		t.Errorf("neither mutual TLS nor a NetworkPolicy, and no warning:\n%s", text)
	}
}

// checkTLSParameters: the three parameters KEDA's external-scaler client
// reads, from the ca.crt, tls.crt and tls.key of one Secret.
func checkTLSParameters(t *testing.T, o notesObject) {
	t.Helper()
	got := map[string]string{}
	secret := ""
	for _, ref := range o.Spec.SecretTargetRef {
		got[ref.Parameter] = ref.Key
		if secret != "" && ref.Name != secret {
			t.Errorf("%s: parameters from Secrets %s and %s", o.Kind, secret, ref.Name)
		}
		secret = ref.Name
	}
	if want := map[string]string{"caCert": "ca.crt", "tlsClientCert": "tls.crt", "tlsClientKey": "tls.key"}; !maps.Equal(got, want) || secret == "" {
		t.Errorf("%s %s: parameters %v from Secret %q, want %v", o.Kind, o.Metadata.Name, got, secret, want)
	}
}

func ruleExprs(t *testing.T, doc []byte) []string {
	t.Helper()
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Expr, For string }
			}
		}
	}
	if err := yaml.Unmarshal(doc, &rule); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Alert+" for "+r.For+": "+strings.TrimSpace(r.Expr))
		}
	}
	return out
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var commandBinary string

// checkArgsWithTheCommand runs the real command with the rendered
// arguments and --version: every flag must exist (the command parses all
// flags before it prints its version).
func checkArgsWithTheCommand(t *testing.T, args []string) {
	t.Helper()
	if commandBinary == "" {
		commandBinary = filepath.Join(t.TempDir(), "cosmosdb-external-scaler")
		build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", commandBinary, "./cmd/cosmosdb-external-scaler")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		t.Cleanup(func() { commandBinary = "" })
	}
	out, err := exec.Command(commandBinary, append(slices.Clone(args), "--version")...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "cosmosdb-external-scaler ") {
		t.Errorf("the command refuses the chart's arguments %v: %v\n%s", args, err, out)
	}
}

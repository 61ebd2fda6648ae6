//go:build e2elocal

package local

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// External-scaler mode (E2E_LOCAL_MODE=external, make e2e-local-external):
// a stock KEDA v2.21.0, without this repository's scaler in its tree,
// scales a Deployment through `type: external` on cmd/cosmosdb-external-scaler,
// which runs with exactly the command line and environment that the Helm
// chart renders (helm template), its TLS files being the Secrets the chart
// renders, and KEDA calling it with the chart's ClusterTriggerAuthentication
// (mutual TLS).
const (
	extRelease   = "cosmosdb-external-scaler"
	extNamespace = "keda" // the chart's namespace, and KEDA's
	extChart     = "../../deploy/helm/cosmosdb-external-scaler"
	extCreds     = "cosmosdb-credentials" // credentials.existingSecret
	extDatabase  = "external"
	extTarget    = "orders-external"
)

// chartRender is what helm template renders for the release.
type chartRender struct {
	deployment appsv1.Deployment
	service    corev1.Service
	secrets    map[string]corev1.Secret // by name
	secretDocs map[string]string        // raw Secret documents by name
	docs       map[string][]string      // raw documents by kind
}

func renderChart(t *testing.T, kubeVersion string, set ...string) chartRender {
	t.Helper()
	helmBin := os.Getenv("E2E_HELM")
	if helmBin == "" {
		t.Fatal("E2E_HELM is not set (run through hack/e2e-local.sh)")
	}
	args := []string{"template", extRelease, extChart, "--namespace", extNamespace, "--kube-version", kubeVersion}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	r := chartRender{secrets: map[string]corev1.Secret{}, secretDocs: map[string]string{}, docs: map[string][]string{}}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered document is not YAML: %v", err)
		}
		r.docs[head.Kind] = append(r.docs[head.Kind], doc)
		switch head.Kind {
		case "Deployment":
			err = yaml.UnmarshalStrict([]byte(doc), &r.deployment)
		case "Service":
			err = yaml.UnmarshalStrict([]byte(doc), &r.service)
		case "Secret":
			var s corev1.Secret
			err = yaml.UnmarshalStrict([]byte(doc), &s)
			r.secrets[s.Name], r.secretDocs[s.Name] = s, doc
		}
		if err != nil {
			t.Fatalf("rendered %s: %v", head.Kind, err)
		}
	}
	if len(r.docs["Deployment"]) != 1 || len(r.docs["Service"]) != 1 {
		t.Fatalf("rendered %d Deployments and %d Services, want one each", len(r.docs["Deployment"]), len(r.docs["Service"]))
	}
	return r
}

// scalerProcess is the external scaler, started as the chart's container
// would be: its args with each volume mount's path pointing at a directory
// holding the rendered Secret's keys as files (what the kubelet mounts), its
// envFrom Secret's variables (the credentials Secret is the user's: the test
// supplies its values) and its env.
type scalerProcess struct {
	cmd        *exec.Cmd
	grpcAddr   string // host:port of the container's grpc port
	healthAddr string
	done       chan error
}

func startScaler(t *testing.T, r chartRender, credentials map[string]string, extraEnv ...string) *scalerProcess {
	t.Helper()
	binary := os.Getenv("E2E_EXTERNAL_SCALER")
	if binary == "" {
		t.Fatal("E2E_EXTERNAL_SCALER is not set (run through hack/e2e-local.sh)")
	}
	pod := r.deployment.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the chart's pod has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	// The kubelet's part: each mounted Secret's keys as files.
	mounts := map[string]string{} // mount path -> local directory
	root := t.TempDir()
	for _, m := range c.VolumeMounts {
		var secretName string
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				secretName = v.Secret.SecretName
			}
		}
		s, ok := r.secrets[secretName]
		if !ok {
			t.Fatalf("volume mount %s: the chart renders no Secret %q", m.Name, secretName)
		}
		dir := filepath.Join(root, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for k, v := range s.Data {
			if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		mounts[strings.TrimSuffix(m.MountPath, "/")] = dir
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		for path, dir := range mounts {
			a = strings.ReplaceAll(a, path+"/", dir+"/")
		}
		args[i] = a
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	env = append(env, extraEnv...)
	for _, from := range c.EnvFrom {
		switch {
		case from.SecretRef != nil && from.SecretRef.Name == extCreds:
			for k, v := range credentials {
				env = append(env, from.Prefix+k+"="+v)
			}
		default:
			t.Fatalf("envFrom %+v: only the credentials Secret %s is supplied by the test", from, extCreds)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("env %s: valueFrom is not supplied by the test", e.Name)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc"] == 0 || ports["health"] == 0 {
		t.Fatalf("container ports %v: want grpc and health", ports)
	}

	logPath := filepath.Join(os.Getenv("E2E_LOCAL_LOGS"), "external-scaler.log")
	if os.Getenv("E2E_LOCAL_LOGS") == "" {
		logPath = filepath.Join(root, "external-scaler.log")
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	p := &scalerProcess{
		cmd:        exec.Command(binary, args...),
		grpcAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports["grpc"]))),
		healthAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports["health"]))),
		done:       make(chan error, 1),
	}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	t.Logf("starting %s with the chart's %d arguments (mount paths pointing at the rendered Secrets), its envFrom %s (log %s)", filepath.Base(binary), len(args), extCreds, logPath)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	eventually(t, 30*time.Second, "the external scaler's /metrics", func() error {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("the external scaler exited: %v (log %s)", err, logPath)
		default:
		}
		_, err := p.metric("cosmosdb_external_scaler_scalers", nil)
		return err
	})
	return p
}

// metric reads one series of the scaler's /metrics: the first sample whose
// name is name and whose labels include every pair of labels.
func (p *scalerProcess) metric(name string, labels map[string]string) (float64, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}).Get("http://" + p.healthAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for k, v := range labels {
			if !strings.Contains(line, k+`="`+v+`"`) {
				continue lines
			}
		}
		fields := strings.Fields(line)
		return strconv.ParseFloat(fields[len(fields)-1], 64)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return 0, err
	}
	return 0, fmt.Errorf("no %s%v series", name, labels)
}

const externalManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: {{.Namespace}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
spec:
  replicas: 0
  selector:
    matchLabels:
      app: {{.Name}}
  template:
    metadata:
      labels:
        app: {{.Name}}
    spec:
      containers:
      - name: processor
        image: registry.invalid/placeholder:never-pulled
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
spec:
  scaleTargetRef:
    name: {{.Name}}
  pollingInterval: 2
  cooldownPeriod: 10
  minReplicaCount: 0
  maxReplicaCount: {{.MaxReplicas}}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown:
          stabilizationWindowSeconds: 0
  triggers:
  - type: external
    metadata:
      scalerAddress: {{.ScalerAddress}}
      databaseId: {{.Database}}
      containerId: {{.Monitored}}
      leaseDatabaseId: {{.Database}}
      leaseContainerId: {{.Leases}}
      processorName: {{.Processor}}
      changeFeedLagThreshold: "{{.LagThreshold}}"
      activationChangeFeedLagThreshold: "{{.ActivationLagThreshold}}"
      connectionFromScalerEnv: COSMOS_CONNECTION
    authenticationRef:
      kind: ClusterTriggerAuthentication
      name: {{.Auth}}
`

type externalData struct {
	Namespace, Name, ScalerAddress, Auth              string
	Database, Monitored, Leases, Processor            string
	LagThreshold, ActivationLagThreshold, MaxReplicas int
}

func TestExternalScalerOnStockKEDA(t *testing.T) {
	account, k := setUp(t, "external")
	ctx := context.Background()

	// The chart with its defaults (mutual TLS with generated certificates)
	// and the credentials Secret a user creates first.
	// helm template assumes the cluster's version (a helm built with go
	// install would assume v1.20.0, below the chart's kubeVersion).
	version, err := k.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	r := renderChart(t, version.GitVersion, "credentials.existingSecret="+extCreds)
	if len(r.docs["ClusterTriggerAuthentication"]) != 1 {
		t.Fatalf("the chart renders %d ClusterTriggerAuthentications by default, want 1 (mutual TLS)", len(r.docs["ClusterTriggerAuthentication"]))
	}
	var cta struct {
		Metadata struct{ Name string }
		Spec     struct {
			SecretTargetRef []struct{ Parameter, Name, Key string } `json:"secretTargetRef"`
		}
	}
	if err := yaml.Unmarshal([]byte(r.docs["ClusterTriggerAuthentication"][0]), &cta); err != nil {
		t.Fatal(err)
	}
	var clientSecret corev1.Secret
	for _, ref := range cta.Spec.SecretTargetRef {
		s, ok := r.secrets[ref.Name]
		if !ok || s.Namespace != extNamespace {
			t.Fatalf("ClusterTriggerAuthentication %s names Secret %q, which the chart does not render in KEDA's namespace %s", cta.Metadata.Name, ref.Name, extNamespace)
		}
		clientSecret = s
	}

	// KEDA dials the Service's name; hack/e2e-local.sh maps it to the
	// scaler's address in the namespace's hosts file.
	svcPort := r.service.Spec.Ports[0]
	scalerHost := fmt.Sprintf("%s.%s.svc.cluster.local", r.service.Name, r.service.Namespace)
	if addrs, err := net.DefaultResolver.LookupHost(ctx, scalerHost); err != nil || len(addrs) == 0 {
		t.Fatalf("%s does not resolve (%v): hack/e2e-local.sh writes it into the namespace's hosts file", scalerHost, err)
	}
	scalerAddress := net.JoinHostPort(scalerHost, strconv.Itoa(int(svcPort.Port)))

	proc := startScaler(t, r, map[string]string{"COSMOS_CONNECTION": account.connectionString()},
		// The served account's certificate is self-signed; in a cluster
		// the image's CA bundle trusts Cosmos DB's.
		"SSL_CERT_FILE="+os.Getenv("COSMOS_CA_FILE"))
	if !strings.HasSuffix(proc.grpcAddr, ":"+strconv.Itoa(int(svcPort.Port))) || svcPort.TargetPort.String() != "grpc" {
		t.Fatalf("Service port %+v does not reach the container's grpc port %s as it would in a cluster", svcPort, proc.grpcAddr)
	}

	t.Run("the gRPC endpoint refuses a caller without KEDA's client certificate", func(t *testing.T) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(clientSecret.Data["ca.crt"]) {
			t.Fatal("the client Secret's ca.crt holds no certificate")
		}
		clientCert, err := tls.X509KeyPair(clientSecret.Data["tls.crt"], clientSecret.Data["tls.key"])
		if err != nil {
			t.Fatal(err)
		}
		call := func(certs []tls.Certificate) error {
			conn, err := grpc.NewClient(scalerAddress, grpc.WithTransportCredentials(credentials.NewTLS(
				&tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12})))
			if err != nil {
				return err
			}
			defer conn.Close()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			// No processor named: the scaler answers InvalidArgument
			// once the call gets through.
			_, err = pb.NewExternalScalerClient(conn).IsActive(cctx, &pb.ScaledObjectRef{Namespace: "probe", Name: "probe", ScalerMetadata: map[string]string{}})
			return err
		}
		err = call(nil)
		if err == nil || status.Code(err) == codes.InvalidArgument {
			t.Fatalf("a call without a client certificate got through (%v)", err)
		}
		t.Logf("without a client certificate: %v", err)
		if err := call([]tls.Certificate{clientCert}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("with KEDA's client certificate the call should reach the scaler and be refused for its metadata, got %v", err)
		}
	})

	items, p := firstStart(ctx, t, account, extDatabase)

	// The chart's client Secret and ClusterTriggerAuthentication, as helm
	// install would create them; then the user's objects.
	k.apply(t, strings.Join(append(r.docs["ClusterTriggerAuthentication"], r.secretDocs[clientSecret.Name]), "\n---\n"), nil)
	k.apply(t, externalManifests, externalData{
		Namespace: namespace, Name: extTarget, ScalerAddress: scalerAddress, Auth: cta.Metadata.Name,
		Database: extDatabase, Monitored: monitored, Leases: leases, Processor: processorName,
		LagThreshold: lagThreshold, ActivationLagThreshold: activationLagThreshold, MaxReplicas: maxReplicas,
	})
	t.Logf("%s applied the chart's ClusterTriggerAuthentication and client Secret, Deployment and ScaledObject %s (type: external, %s)", k.elapsed(), extTarget, scalerAddress)
	timelineCtx, stopTimeline := context.WithCancel(ctx)
	timelineDone := make(chan struct{})
	go func() {
		defer close(timelineDone)
		k.recordTimeline(timelineCtx, t, namespace, extTarget)
	}()
	defer func() { stopTimeline(); <-timelineDone }()

	t.Run("stays at zero without lag", func(t *testing.T) {
		// KEDA is polling through the scaler: it has answered IsActive.
		eventually(t, scaleTimeout, "KEDA's IsActive calls answered by the external scaler", func() error {
			n, err := proc.metric("cosmosdb_external_scaler_grpc_calls_total", map[string]string{"method": "IsActive", "code": "OK"})
			if err == nil && n == 0 {
				err = fmt.Errorf("none yet")
			}
			return err
		})
		k.holdReplicas(t, namespace, extTarget, 0, 10*time.Second)
	})

	t.Run("activates from zero to one past the activation threshold", func(t *testing.T) {
		// 6 items behind in one partition: above activation (5), below the target (10).
		if err := account.writeItems(ctx, extDatabase, monitored, items.Ranges[0].ID, activationLagThreshold+1); err != nil {
			t.Fatal(err)
		}
		k.waitReplicas(t, namespace, extTarget, 1, scaleTimeout)
		k.holdReplicas(t, namespace, extTarget, 1, 10*time.Second)
	})

	t.Run("scales to the number of lagging partitions and no further", func(t *testing.T) {
		// 3 × 10 more items in each partition: 126 behind would be 13
		// replicas at a target of 10, but only 4 partitions can be worked.
		for _, rg := range items.Ranges {
			if err := account.writeItems(ctx, extDatabase, monitored, rg.ID, 3*lagThreshold); err != nil {
				t.Fatal(err)
			}
		}
		k.waitReplicas(t, namespace, extTarget, physicalPartitions, scaleTimeout)
		k.holdReplicas(t, namespace, extTarget, physicalPartitions, 15*time.Second)
		// What KEDA was served: the scaler's own per-trigger series.
		labels := map[string]string{"namespace": namespace, "scaledObject": extTarget}
		served, err := proc.metric("cosmosdb_external_scaler_trigger_metric_value", labels)
		if err != nil {
			t.Fatal(err)
		}
		lag, err := proc.metric("cosmosdb_external_scaler_trigger_lag", labels)
		if err != nil {
			t.Fatal(err)
		}
		if served != physicalPartitions*lagThreshold || lag != 4*3*lagThreshold+activationLagThreshold+1 {
			t.Fatalf("the scaler served %v for a lag of %v, want the cap %d for %d", served, lag, physicalPartitions*lagThreshold, 4*3*lagThreshold+activationLagThreshold+1)
		}
		calls, err := proc.metric("cosmosdb_external_scaler_grpc_calls_total", map[string]string{"method": "GetMetrics", "code": "OK"})
		if err != nil || calls == 0 {
			t.Fatalf("the scaler answered no GetMetrics call from KEDA (%v, %v)", calls, err)
		}
		t.Logf("%s the scaler served %v (lag %v) to %v GetMetrics calls", k.elapsed(), served, lag, calls)
	})

	t.Run("scales back to zero after catching up and the cooldown", func(t *testing.T) {
		for _, rg := range items.Ranges {
			if err := p.catchUp(ctx, rg.ID); err != nil {
				t.Fatal(err)
			}
		}
		k.waitReplicas(t, namespace, extTarget, 0, scaleToZeroWait)
	})
}

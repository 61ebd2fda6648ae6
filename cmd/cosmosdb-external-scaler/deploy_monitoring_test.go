package main

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// deploy/external-scaler-monitoring.yaml scrapes what the Deployment
// serves: its Service selects the scaler's pods and targets the health
// port, where --health-address serves /metrics; the ServiceMonitor selects
// that Service and its port. The pod's prometheus.io annotations agree.
func TestDeployMonitoringManifest(t *testing.T) {
	m := readDeployManifest(t)
	pod := m.deployment.Spec.Template
	var healthPort int32
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.Name == "health" {
			healthPort = p.ContainerPort
		}
	}
	if healthPort == 0 {
		t.Fatal("the container has no health port")
	}
	if a := pod.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics" || a["prometheus.io/port"] != strconv.Itoa(int(healthPort)) {
		t.Errorf("pod annotations %v do not point at /metrics on the health port %d", a, healthPort)
	}

	raw, err := os.ReadFile("../../deploy/external-scaler-monitoring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var service corev1.Service
	var monitor struct {
		Kind     string
		Metadata struct{ Namespace string }
		Spec     struct {
			Selector  struct{ MatchLabels map[string]string }
			Endpoints []struct{ Port, Path string }
		}
	}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Service":
			err = yaml.UnmarshalStrict(doc, &service)
		case "ServiceMonitor":
			err = yaml.Unmarshal(doc, &monitor)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range service.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("metrics Service selector %s=%s does not match the pod labels", k, v)
		}
	}
	if len(service.Spec.Ports) != 1 || service.Spec.Ports[0].TargetPort.String() != "health" {
		t.Fatalf("metrics Service ports %+v, want one targeting the health port", service.Spec.Ports)
	}
	if service.Namespace != m.deployment.Namespace || monitor.Metadata.Namespace != m.deployment.Namespace {
		t.Error("the metrics Service and ServiceMonitor are not in the Deployment's namespace")
	}
	for k, v := range monitor.Spec.Selector.MatchLabels {
		if service.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not match the metrics Service", k, v)
		}
	}
	if len(monitor.Spec.Endpoints) != 1 || monitor.Spec.Endpoints[0].Port != service.Spec.Ports[0].Name || monitor.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on port %s", monitor.Spec.Endpoints, service.Spec.Ports[0].Name)
	}
}

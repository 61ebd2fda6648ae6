package chart

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// secrets returns the rendered Secrets by name.
func secrets(t *testing.T, r rendered) map[string]corev1.Secret {
	t.Helper()
	out := map[string]corev1.Secret{}
	for _, doc := range r.docs["Secret"] {
		var s corev1.Secret
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			t.Fatalf("Secret: %v", err)
		}
		out[s.Name] = s
	}
	return out
}

// By default the gRPC endpoint is mutual TLS: the command serves the
// chart's generated server certificate, valid for the Service's names, and
// admits only clients whose certificate chains to the same CA; KEDA's
// client certificate lives in KEDA's namespace, and the
// ClusterTriggerAuthentication hands it to KEDA's external-scaler client.
// No NetworkPolicy is needed then.
func TestChartMutualTLSByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	r := template(t)
	var d appsv1.Deployment
	r.one(t, "Deployment", &d)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	for _, want := range []string{"--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key", "--tls-client-ca=/tls/ca.crt"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/tls" {
		t.Fatalf("no TLS Secret mounted at /tls: %+v %+v", pod.Volumes, c.VolumeMounts)
	}
	all := secrets(t, r)
	server, ok := all[pod.Volumes[0].Secret.SecretName]
	if !ok || server.Namespace != "keda" {
		t.Fatalf("the mounted Secret %q is not rendered in the release's namespace", pod.Volumes[0].Secret.SecretName)
	}
	refs := ctaSecrets(t, r)
	clientName, _, _ := strings.Cut(refs["caCert"], "/")
	client, ok := all[clientName]
	if !ok || client.Namespace != "keda" {
		t.Fatalf("ClusterTriggerAuthentication %v names Secret %q, which is not rendered in KEDA's namespace", refs, clientName)
	}
	if want := map[string]string{"caCert": clientName + "/ca.crt", "tlsClientCert": clientName + "/tls.crt", "tlsClientKey": clientName + "/tls.key"}; !maps.Equal(refs, want) {
		t.Errorf("ClusterTriggerAuthentication parameters %v, want %v", refs, want)
	}
	if clientName == server.Name {
		t.Error("KEDA's client Secret is the server's")
	}
	if len(r.docs["NetworkPolicy"]) != 0 {
		t.Error("a NetworkPolicy is rendered although the endpoint is mutual TLS")
	}

	// What KEDA dials: the scalerAddress host of NOTES.txt, the Service's name.
	var svc corev1.Service
	r.one(t, "Service", &svc)
	host := svc.Name + "." + svc.Namespace + ".svc.cluster.local"

	// The command's TLS configuration as --tls-cert, --tls-key and
	// --tls-client-ca build it (tls.go); KEDA's as util.NewTLSConfig builds
	// it from the three parameters.
	serverPair, err := tls.X509KeyPair(server.Data["tls.crt"], server.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(server.Data["ca.crt"]) {
		t.Fatal("the server Secret's ca.crt holds no certificate")
	}
	serverCfg := &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	rootCAs := x509.NewCertPool()
	if !rootCAs.AppendCertsFromPEM(client.Data["ca.crt"]) {
		t.Fatal("the client Secret's ca.crt holds no certificate")
	}
	clientPair, err := tls.X509KeyPair(client.Data["tls.crt"], client.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(serverCfg, &tls.Config{RootCAs: rootCAs, Certificates: []tls.Certificate{clientPair}, ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
		t.Errorf("KEDA's client certificate against the scaler at %s: %v", host, err)
	}
	if err := handshake(serverCfg, &tls.Config{RootCAs: rootCAs, ServerName: host, MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("a client without a certificate completed a handshake with the scaler")
	}
	if err := handshake(serverCfg, &tls.Config{RootCAs: rootCAs, Certificates: []tls.Certificate{clientPair}, ServerName: "other.example.net", MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("the server certificate is valid for a name that is not the Service's")
	}
	// Another render generates another CA: certificates of one install are
	// no good against another's.
	other := secrets(t, template(t))
	otherClient, err := tls.X509KeyPair(other[clientName].Data["tls.crt"], other[clientName].Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(serverCfg, &tls.Config{RootCAs: rootCAs, Certificates: []tls.Certificate{otherClient}, ServerName: host, MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("a client certificate of another render is accepted")
	}
}

// handshake runs one TLS handshake over a pipe and returns the first error
// either side sees.
func handshake(server, client *tls.Config) error {
	a, b := net.Pipe()
	srv := tls.Server(a, server)
	cli := tls.Client(b, client)
	done := make(chan error, 1)
	go func() {
		err := srv.Handshake()
		if err == nil {
			// TLS 1.3: the client learns of a refused certificate on its
			// first read; the server answers one byte once it accepts.
			_, err = srv.Write([]byte{1})
		}
		_ = srv.Close()
		done <- err
	}()
	err := cli.Handshake()
	if err == nil {
		_, err = io.ReadFull(cli, make([]byte, 1))
	}
	_ = cli.Close()
	return errors.Join(err, <-done)
}

// Opting out of mutual TLS renders a NetworkPolicy that admits only KEDA's
// operator and metrics server pods, in KEDA's namespace, to the gRPC port;
// its selectors are values; networkPolicy.enabled=false removes it and
// true keeps it with mutual TLS too.
func TestChartNetworkPolicyWithoutMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm")
	}
	for _, set := range [][]string{{"tls.enabled=false"}, {"tls.mutual=false"}} {
		r := template(t, set...)
		var np networkingv1.NetworkPolicy
		r.one(t, "NetworkPolicy", &np)
		var d appsv1.Deployment
		r.one(t, "Deployment", &d)
		if !selects(np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("%v: NetworkPolicy %+v does not restrict ingress to the scaler's pods", set, np.Spec)
		}
		peers := grpcPeers(t, np)
		want := []string{
			"ns{kubernetes.io/metadata.name=keda} pods{app.kubernetes.io/name=keda-operator}",
			"ns{kubernetes.io/metadata.name=keda} pods{app.kubernetes.io/name=keda-operator-metrics-apiserver}",
		}
		if !slices.Equal(peers, want) {
			t.Errorf("%v: the gRPC port admits %v, want only %v", set, peers, want)
		}
		if len(r.docs["ClusterTriggerAuthentication"]) != 0 && set[0] == "tls.enabled=false" {
			t.Errorf("%v: a ClusterTriggerAuthentication is rendered without TLS", set)
		}
	}
	// Without TLS the command serves plain text.
	var d appsv1.Deployment
	r := template(t, "tls.enabled=false")
	r.one(t, "Deployment", &d)
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--tls-") {
			t.Errorf("tls.enabled=false: args still hold %s", a)
		}
	}
	if len(r.docs["Secret"]) != 0 {
		t.Errorf("tls.enabled=false: %d Secrets rendered", len(r.docs["Secret"]))
	}

	// The selectors are configurable.
	var np networkingv1.NetworkPolicy
	template(t, "tls.enabled=false", "networkPolicy.kedaNamespaceSelector.matchLabels.team=autoscaling",
		"networkPolicy.kedaPodSelectors[0].matchLabels.app=my-keda").one(t, "NetworkPolicy", &np)
	if got, want := grpcPeers(t, np), []string{"ns{kubernetes.io/metadata.name=keda,team=autoscaling} pods{app=my-keda}"}; !slices.Equal(got, want) {
		t.Errorf("custom selectors: the gRPC port admits %v, want %v", got, want)
	}

	if n := len(template(t, "tls.enabled=false", "networkPolicy.enabled=false").docs["NetworkPolicy"]); n != 0 {
		t.Errorf("networkPolicy.enabled=false renders %d NetworkPolicies", n)
	}
	if n := len(template(t, "networkPolicy.enabled=true").docs["NetworkPolicy"]); n != 1 {
		t.Errorf("networkPolicy.enabled=true with mutual TLS renders %d NetworkPolicies, want 1", n)
	}
	if out, err := helm(t, "template", "x", chart, "--kube-version", kubeVersion, "--set", "networkPolicy.enabled=sometimes"); err == nil || !strings.Contains(out, "networkPolicy.enabled") {
		t.Errorf("networkPolicy.enabled=sometimes rendered (%v)", err)
	}
}

// grpcPeers describes who the NetworkPolicy admits to the gRPC port; it
// fails the test if the port is open to anyone or another rule opens it.
func grpcPeers(t *testing.T, np networkingv1.NetworkPolicy) []string {
	t.Helper()
	var peers []string
	for _, rule := range np.Spec.Ingress {
		grpc := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if p.Port == nil || p.Port.String() == "grpc" || p.Port.String() == "6000" {
				grpc = true
			}
		}
		if !grpc {
			continue
		}
		if len(rule.From) == 0 {
			t.Fatalf("an ingress rule opens the gRPC port to anyone: %+v", rule)
		}
		for _, peer := range rule.From {
			if peer.NamespaceSelector == nil || peer.PodSelector == nil || peer.IPBlock != nil {
				t.Fatalf("peer %+v is not a namespace and pod selector together", peer)
			}
			peers = append(peers, "ns{"+labels(peer.NamespaceSelector.MatchLabels)+"} pods{"+labels(peer.PodSelector.MatchLabels)+"}")
		}
	}
	return peers
}

func labels(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ",")
}

// Package facts establishes, black-box, what KEDA v2.21.0's azure-cosmosdb
// scaler does with credentials (which parameters it reads from plain
// trigger metadata), with a lease that was
// never checkpointed, and how it names its metric: it calls v2.21.0's
// exported scalers.NewAzureCosmosDBScaler, GetMetricsAndActivity and
// GetMetricSpecForScaling and records what reaches the network. Nothing of
// v2.21.0's scaler source is read.
//
// Every host a trigger names here is served through a CONNECT proxy on
// 127.0.0.1 (HTTPS_PROXY; KEDA's shared transport honours it) by a recorder
// that keeps each request's method, path and the kind of its Authorization
// header (master key, Entra ID token, none) and answers 401. Entra ID
// (login.microsoftonline.com, and AZURE_AUTHORITY_HOST for workload
// identity) is this repository's test issuer, which records the token
// requests it answers. Its CA is the only one this process trusts
// (SSL_CERT_FILE), set in TestMain before the first TLS connection.
//
// Not part of CI: importing KEDA's pkg/scalers compiles all of KEDA's
// scalers (tens of minutes cold). Run it with
//
//	cd bench/kedacompare && go test ./facts -run TestKEDAv2210Facts -v
//
// docs/upgrading.md quotes what it shows, each fact tagged with its subtest.
package facts

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
	ours "github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	keda "github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

const (
	// key is an account key no Cosmos DB account has (base64 of a marker).
	key        = "RkFDVFMtYWNjb3VudC1rZXktbm90LWEtcmVhbC1vbmU="
	secret     = "FACTS-client-secret"
	tenant     = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	recordedTo = ".facts.example.net" // every host under it is recorded
)

var (
	issuer   *entraidtest.Issuer
	recorded = &recorder{seen: map[string][]string{}}
)

// recorder is every host under recordedTo: it keeps "METHOD /path auth=KIND"
// per host and answers 401.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	host := req.Host
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	r.mu.Lock()
	r.seen[host] = append(r.seen[host], req.Method+" "+req.URL.Path+" auth="+authKind(req.Header.Get("Authorization")))
	r.mu.Unlock()
	http.Error(w, `{"code":"Unauthorized","message":"recording host"}`, http.StatusUnauthorized)
}

func (r *recorder) take(host string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.seen[host]
	delete(r.seen, host)
	return got
}

// authKind is the type= of a Cosmos DB Authorization header ("master" for
// a key signature, "aad" for an Entra ID token), "none" without one.
func authKind(header string) string {
	if header == "" {
		return "none"
	}
	decoded, err := url.QueryUnescape(header)
	if err != nil {
		return "unparsed"
	}
	values, err := url.ParseQuery(decoded)
	if err != nil || values.Get("type") == "" {
		return "other"
	}
	return values.Get("type")
}

// route sends recordedTo's hosts to the recorder and everything else (the
// public authority host MSAL asks) to the issuer.
type route struct{}

func (route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	if strings.HasSuffix(strings.ToLower(host), recordedTo) {
		recorded.ServeHTTP(w, r)
		return
	}
	issuer.ServeHTTP(w, r)
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	logf.SetLogger(logr.Discard())
	var err error
	if issuer, err = entraidtest.New(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer issuer.Close()
	stop, err := issuer.TrustInProcess(route{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	// As KEDA's operator does at start-up.
	if err := kedautil.ConfigureHTTPTransport(kedautil.HTTPTransportConfig{MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// outcome is what one trigger did: NewAzureCosmosDBScaler's error, or the
// requests the recorded hosts received during one poll, per host, and the
// token requests the issuer answered (credential kind and scope).
type outcome struct {
	BuildError string
	Requests   map[string][]string
	Tokens     []string
}

func (o outcome) String() string {
	var b strings.Builder
	if o.BuildError != "" {
		fmt.Fprintf(&b, "NewAzureCosmosDBScaler: %s", o.BuildError)
	} else {
		b.WriteString("scaler built")
	}
	hosts := make([]string, 0, len(o.Requests))
	for h := range o.Requests {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		fmt.Fprintf(&b, "; %s received %q", h, o.Requests[h])
	}
	if len(o.Tokens) > 0 {
		fmt.Fprintf(&b, "; token requests answered: %q", o.Tokens)
	}
	return b.String()
}

// signed reports whether host received a request with an Authorization of
// that kind.
func (o outcome) signed(host, kind string) bool {
	return slices.ContainsFunc(o.Requests[host], func(r string) bool { return strings.HasSuffix(r, " auth="+kind) })
}

// baseMetadata is a trigger of processor "orders-processor" on appdb's
// orders, leases in appdb's leases.
func baseMetadata() map[string]string {
	return map[string]string{
		"databaseId": "appdb", "containerId": "orders", "leaseDatabaseId": "appdb",
		"leaseContainerId": "leases", "processorName": "orders-processor",
	}
}

func scalerConfig(metadata, authParams map[string]string) *scalersconfig.ScalerConfig {
	return &scalersconfig.ScalerConfig{
		TriggerType:             "azure-cosmosdb",
		TriggerMetadata:         metadata,
		AuthParams:              authParams,
		ResolvedEnv:             map[string]string{},
		GlobalHTTPTimeout:       10 * time.Second,
		ScalableObjectName:      "facts",
		ScalableObjectNamespace: "default",
		ScalableObjectType:      "ScaledObject",
	}
}

// try builds v2.21.0's scaler with the trigger's metadata and
// authentication parameters, polls once, and returns what happened at the
// given hosts.
func try(t *testing.T, metadata, authParams map[string]string, workload bool, hosts ...string) outcome {
	t.Helper()
	base := baseMetadata()
	for k, v := range metadata {
		base[k] = v
	}
	config := scalerConfig(base, authParams)
	if workload {
		config.PodIdentity = kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAzureWorkload}
	}
	for _, h := range hosts {
		recorded.take(h)
	}
	grantsBefore := len(issuer.Grants())
	var o outcome
	s, err := keda.NewAzureCosmosDBScaler(config)
	if err != nil {
		o.BuildError = err.Error()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, _ = s.GetMetricsAndActivity(ctx, "s0-metric")
		cancel()
		_ = s.Close(context.Background())
	}
	o.Requests = map[string][]string{}
	for _, h := range hosts {
		if got := recorded.take(h); len(got) > 0 {
			o.Requests[h] = got
		}
	}
	for _, g := range issuer.Grants()[grantsBefore:] {
		o.Tokens = append(o.Tokens, g.Credential+" for "+g.Scope+" from "+g.Host)
	}
	t.Log(o)
	return o
}

// workloadIdentityEnv is what KEDA's workload identity webhook gives the
// operator pod, pointed at the test issuer.
func workloadIdentityEnv(t *testing.T) {
	t.Helper()
	issuer.SetWorkloadIdentityEnv(t, tenant, "workload-client")
}

// TestKEDAv2210Facts: each subtest is one fact about KEDA v2.21.0's
// azure-cosmosdb scaler, named after what it shows; the log line of each
// is the outcome it was established from.
func TestKEDAv2210Facts(t *testing.T) {
	const (
		data  = "data" + recordedTo
		lease = "lease" + recordedTo
	)
	foreign := "https://" + data + "/"
	foreignLease := "https://" + lease + "/"
	connection := func(host string) string { return "AccountEndpoint=https://" + host + "/;AccountKey=" + key }

	// The setup: a recorded host is reachable by v2.21.0's transport, so a
	// host that saw nothing below was sent nothing.
	t.Run("the recording host is reachable: a connection string to it gets a key-signed request", func(t *testing.T) {
		o := try(t, nil, map[string]string{"connection": connection(data)}, false, data)
		if !o.signed(data, "master") {
			t.Fatalf("no key-signed request reached %s: %v", data, o)
		}
	})

	// Which credentials v2.21.0 reads from plain trigger metadata. Each case
	// would build and sign (or obtain a token) with the parameter in
	// AuthParams.
	notRead := func(t *testing.T, o outcome, host string) {
		t.Helper()
		if o.BuildError == "" || len(o.Requests[host]) != 0 || len(o.Tokens) != 0 {
			t.Fatalf("want NewAzureCosmosDBScaler to fail and nothing sent: %v", o)
		}
	}
	t.Run("cosmosDBKey in trigger metadata is not read", func(t *testing.T) {
		notRead(t, try(t, map[string]string{"endpoint": foreign, "cosmosDBKey": key}, nil, false, data), data)
	})
	t.Run("leaseCosmosDBKey in trigger metadata is not read", func(t *testing.T) {
		notRead(t, try(t, map[string]string{"endpoint": foreign, "leaseEndpoint": foreignLease, "leaseCosmosDBKey": key},
			map[string]string{"cosmosDBKey": key}, false, data, lease), lease)
	})
	t.Run("clientSecret in trigger metadata is not read", func(t *testing.T) {
		notRead(t, try(t, map[string]string{"endpoint": foreign, "clientSecret": secret},
			map[string]string{"tenantId": tenant, "clientId": "facts-client"}, false, data), data)
	})
	t.Run("connection in trigger metadata is read", func(t *testing.T) {
		o := try(t, map[string]string{"connection": connection(data)}, nil, false, data)
		if !o.signed(data, "master") {
			t.Fatalf("want a key-signed request at %s: %v", data, o)
		}
	})
	t.Run("leaseConnection in trigger metadata is read", func(t *testing.T) {
		o := try(t, map[string]string{"leaseConnection": connection(lease)},
			map[string]string{"connection": connection(data)}, false, data, lease)
		if !o.signed(lease, "master") {
			t.Fatalf("want a key-signed request at %s: %v", lease, o)
		}
	})

	// What v2.21.0 does with a lease that was never checkpointed, on this
	// repository's embedded Cosmos DB server (plain HTTP on loopback, no
	// proxy): one physical range, 5 items written after the leases.
	t.Run("a lease without a continuation counts: v2.21.0's metric is the items written", func(t *testing.T) {
		for _, checkpointed := range []bool{false, true} {
			srv := cosmostest.NewServer()
			db := srv.Account.CreateDatabase("appdb")
			monitored := db.CreateContainer("orders", "/customerId", 1)
			writer := leasetest.NewWriter("orders-processor", monitored, db.CreateContainer("leases", "/id", 1), cosmostest.DotNetV0)
			if _, err := writer.CreateLeases(checkpointed); err != nil {
				t.Fatal(err)
			}
			if err := monitored.WriteItemsToRange(monitored.Ranges()[0].ID, 5); err != nil {
				t.Fatal(err)
			}
			metadata := baseMetadata()
			metadata["changeFeedLagThreshold"] = "100" // above the lag: no cap
			s, err := keda.NewAzureCosmosDBScaler(scalerConfig(metadata, map[string]string{"connection": srv.ConnectionString()}))
			if err != nil {
				t.Fatal(err)
			}
			m, active, err := s.GetMetricsAndActivity(context.Background(), "s0-metric")
			_ = s.Close(context.Background())
			srv.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := m[0].Value.Value()
			t.Logf("lease checkpointed before the writes: %v; v2.21.0's metric %d, active %v", checkpointed, got, active)
			if got != 5 || !active {
				t.Errorf("lease checkpointed: %v: metric %d, active %v; want 5, true", checkpointed, got, active)
			}
		}
	})

	// The metric name, for the same trigger, of v2.21.0's scaler and ours.
	t.Run("the metric name is v2.21.0's", func(t *testing.T) {
		metadata := baseMetadata()
		metadata["leaseContainerId"] = "Leases_Of-Orders.2"
		config := scalerConfig(metadata, map[string]string{"connection": connection(data)})
		config.TriggerIndex = 3
		theirs, err := keda.NewAzureCosmosDBScaler(config)
		if err != nil {
			t.Fatal(err)
		}
		defer theirs.Close(context.Background())
		mine, err := ours.NewAzureCosmosDBScaler(config)
		if err != nil {
			t.Fatal(err)
		}
		defer mine.Close(context.Background())
		a := theirs.GetMetricSpecForScaling(context.Background())[0].External.Metric.Name
		b := mine.GetMetricSpecForScaling(context.Background())[0].External.Metric.Name
		t.Logf("v2.21.0: %s; ours: %s", a, b)
		if a != b {
			t.Errorf("metric names differ: v2.21.0 %q, ours %q", a, b)
		}
	})
}

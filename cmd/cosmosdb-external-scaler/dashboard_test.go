package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// registeredSeries are the metric names the command serves once it has
// answered calls and made an estimate (a vector without series is not
// gathered), with the _bucket, _sum and _count series of each histogram.
func registeredSeries(t *testing.T) map[string]bool {
	t.Helper()
	f := newFixture(t)
	ctx := testContext(t)
	spec, err := f.client.GetMetricSpec(ctx, ref(metadata()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(metadata()), MetricName: spec.MetricSpecs[0].MetricName}); err != nil {
		t.Fatal(err)
	}
	families, err := f.srv.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, fam := range families {
		names[fam.GetName()] = true
		if fam.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[fam.GetName()+s] = true
			}
		}
	}
	return names
}

// metricNamesIn returns the identifiers of a PromQL expression that name
// series of this command (cosmosdb_external_scaler_*) or of
// kube-state-metrics (kube_*): what is left after quoted strings and
// label matchers are removed.
func metricNamesIn(expr string) []string {
	expr = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
	expr = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(expr, "")
	var out []string
	for _, id := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`).FindAllString(expr, -1) {
		if strings.HasPrefix(id, metricsNamespace+"_") || strings.HasPrefix(id, "kube_") {
			out = append(out, id)
		}
	}
	return out
}

// The Grafana dashboard in deploy/ queries only what the command
// registers: every target and template variable names at least one of its
// series, and none that it does not serve.
func TestGrafanaDashboardQueriesRegisteredMetrics(t *testing.T) {
	registered := registeredSeries(t)
	raw, err := os.ReadFile("../../deploy/grafana/cosmosdb-external-scaler.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string
		Panels     []dashPanel
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var exprs []string
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, target := range p.Targets {
				exprs = append(exprs, target.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			exprs = append(exprs, q)
		case map[string]any:
			s, _ := q["query"].(string)
			exprs = append(exprs, s)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("found %d queries in the dashboard", len(exprs))
	}
	used := map[string]bool{}
	for _, e := range exprs {
		names := metricNamesIn(e)
		if len(names) == 0 {
			t.Errorf("query %q names no series of the command", e)
		}
		for _, n := range names {
			used[n] = true
			if !registered[n] {
				t.Errorf("query %q: %s is not a series the command registers", e, n)
			}
		}
	}
	// Every per-trigger series is on the dashboard.
	for n := range registered {
		if strings.HasPrefix(n, metricsNamespace+"_trigger_") && !used[n] {
			t.Errorf("the dashboard shows no %s", n)
		}
	}
}

type dashPanel struct {
	Title   string
	Targets []struct{ Expr string }
	Panels  []dashPanel
}

// The PrometheusRule in deploy/ alerts on series the command registers
// and, for the replica count, on kube-state-metrics' HPA series; it has
// the two alerts a user needs first.
func TestPrometheusRuleUsesRegisteredMetrics(t *testing.T) {
	registered := registeredSeries(t)
	kubeStateMetrics := []string{"kube_horizontalpodautoscaler_status_current_replicas", "kube_horizontalpodautoscaler_spec_max_replicas"}
	raw, err := os.ReadFile("../../deploy/external-scaler-prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Expr, For string
				}
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("kind %q: %v", rule.Kind, err)
	}
	alerts := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r.Expr
			names := metricNamesIn(r.Expr)
			if len(names) == 0 {
				t.Errorf("alert %s names no series", r.Alert)
			}
			for _, n := range names {
				if !registered[n] && !slices.Contains(kubeStateMetrics, n) {
					t.Errorf("alert %s: %s is neither the command's nor kube-state-metrics'", r.Alert, n)
				}
			}
		}
	}
	if e := alerts["CosmosDBScalerEstimateFailing"]; !strings.Contains(e, metricsNamespace+"_trigger_last_estimate_success") {
		t.Errorf("no estimate-failing alert on the last estimate's success: %q", e)
	}
	if e := alerts["CosmosDBLagGrowingAtMaxReplicas"]; !strings.Contains(e, metricsNamespace+"_trigger_lag") || !strings.Contains(e, kubeStateMetrics[0]) || !strings.Contains(e, kubeStateMetrics[1]) {
		t.Errorf("no lag-growing-at-max-replicas alert: %q", e)
	}
}

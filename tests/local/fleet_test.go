//go:build e2elocal

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
)

const (
	fleetNamespace = "cosmosdb-fleet"
	fleetDatabase  = "fleet"
	fleetSize      = 200
	fleetSampled   = 10
	// KEDA's default polling interval; a cooldown short enough for the
	// sample that catches up to reach zero within the test.
	fleetPollingInterval = 30
	fleetCooldown        = 30
	// How long the operator is sampled once the fleet has settled.
	fleetWindow = 60 * time.Second
)

// procSample is one reading of a process's /proc: CPU time (user +
// system) and resident memory.
type procSample struct {
	at        time.Time
	cpu       time.Duration
	rss, peak int64 // bytes: VmRSS, VmHWM
}

// clockTick is the unit of /proc/PID/stat's times (getconf CLK_TCK).
func clockTick() time.Duration {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 10 * time.Millisecond
	}
	hz, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || hz <= 0 {
		return 10 * time.Millisecond
	}
	return time.Second / time.Duration(hz)
}

func readProc(pid int, tick time.Duration) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The fields after the command name, which is in parentheses: utime
	// and stime are fields 14 and 15 of the line, 12 and 13 after it.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(utime+stime) * tick
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			s.rss = kb * 1024
		} else {
			s.peak = kb * 1024
		}
	}
	return s, nil
}

// kedaProcess finds the process running binary (a path) in this test's
// network namespace, where hack/e2e-local.sh started it.
func kedaProcess(t *testing.T, binary string) int {
	t.Helper()
	ownNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		exe, err := os.Readlink(dir + "/exe")
		if err != nil || exe != binary {
			continue
		}
		if net, err := os.Readlink(dir + "/ns/net"); err != nil || net != ownNet {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		return pid
	}
	t.Fatalf("no process runs %s in this network namespace", binary)
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// cpuShare is the CPU time a process used between two samples, as a
// share of one core.
func cpuShare(a, b procSample) string {
	return fmt.Sprintf("%.1f %%", 100*float64(b.cpu-a.cpu)/float64(b.at.Sub(a.at)))
}

// The real KEDA operator of make e2e-local (this scaler in its tree) with
// 200 ScaledObjects of the azure-cosmosdb trigger, each on its own
// processor's leases (4 partitions each) in one lease container of the
// embedded account, at KEDA's default polling interval; Deployments
// without pods. It samples the operator's (and the metrics adapter's)
// RSS and CPU from /proc before the fleet, while it starts and once it has
// settled, reads the metric the HPA reads for a sample of 10 whose lag
// differs, checks that those and the other 190 scale to their expected
// replicas, and prints a table. Run it with
// E2E_LOCAL_RUN=TestFleet make e2e-local.
func TestFleetOf200ScaledObjects(t *testing.T) {
	account, k := setUp(t, "intree")
	kedaBin := os.Getenv("E2E_KEDA_BIN")
	if kedaBin == "" {
		t.Fatal("E2E_KEDA_BIN must name the directory of the KEDA binaries (run through hack/e2e-local.sh)")
	}
	ctx := context.Background()
	tick := clockTick()
	operator := kedaProcess(t, filepath.Join(kedaBin, "keda-operator"))
	adapter := kedaProcess(t, filepath.Join(kedaBin, "keda-adapter"))
	sample := func(what string) (op, ad procSample) {
		t.Helper()
		var err error
		if op, err = readProc(operator, tick); err != nil {
			t.Fatalf("%s: operator: %v", what, err)
		}
		if ad, err = readProc(adapter, tick); err != nil {
			t.Fatalf("%s: adapter: %v", what, err)
		}
		return op, ad
	}

	// The account: one monitored container (4 partitions) and one lease
	// container (firstStart), 200 processors started now.
	items, _ := firstStart(ctx, t, account, fleetDatabase)
	names := make([]string, fleetSize)
	procs := make([]*processor, fleetSize)
	targets := make([]scaleTarget, fleetSize)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%03d", i)
		procs[i] = startProcessor(ctx, t, account, fleetDatabase, names[i])
		targets[i] = scaleTarget{Name: names[i], Auth: "cosmosdb-connection", Processor: names[i]}
	}
	idleOp, idleAd := sample("before the fleet")
	time.Sleep(10 * time.Second)
	idleOp2, idleAd2 := sample("before the fleet")

	created := time.Now()
	k.apply(t, manifests, manifestData{
		Namespace: fleetNamespace, Connection: account.connectionString(), Endpoint: account.endpoint,
		Key: account.key, WrongKey: strings.Repeat("A", 86) + "==",
		Database: fleetDatabase, Monitored: monitored, Leases: leases, Processor: processorName,
		LagThreshold: lagThreshold, ActivationLagThreshold: activationLagThreshold,
		MaxReplicas: maxReplicas, FallbackReplicas: fallbackReplicas,
		PollingInterval: fleetPollingInterval, CooldownPeriod: fleetCooldown,
		Targets: targets,
	})
	t.Logf("%s applied %d Deployments and ScaledObjects in %.1fs", k.elapsed(), fleetSize, time.Since(created).Seconds())
	eventually(t, 3*time.Minute, "an HPA for every ScaledObject", func() error {
		hpas, err := k.kube.AutoscalingV2().HorizontalPodAutoscalers(fleetNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(hpas.Items) != fleetSize {
			return fmt.Errorf("%d HPAs", len(hpas.Items))
		}
		return nil
	})
	t.Logf("%s KEDA made %d HPAs in %.1fs", k.elapsed(), fleetSize, time.Since(created).Seconds())

	// 30 changes on each partition: every processor is 120 behind, 30 on
	// each of 4 partitions, metric min(120, 4 × 10) = 40, 4 replicas. The
	// sample (every 20th) then catches up on j % 5 of its partitions:
	// 4, 3, 2, 1 and 0 replicas.
	for _, r := range items.Ranges {
		if err := account.writeItems(ctx, fleetDatabase, monitored, r.ID, 3*lagThreshold); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]int32, fleetSize)
	var sampled []int
	for i := range want {
		want[i] = physicalPartitions
		if i%(fleetSize/fleetSampled) != 0 {
			continue
		}
		j := len(sampled)
		sampled = append(sampled, i)
		for _, r := range items.Ranges[:j%5] {
			if err := procs[i].catchUp(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		want[i] = int32(physicalPartitions - j%5)
	}
	wrote := time.Now()
	startOp, startAd := sample("after the writes")

	// Every Deployment reaches its replicas (the sample's at zero after the
	// cooldown).
	var settled time.Duration
	eventually(t, 5*time.Minute, "all 200 Deployments at their expected replicas", func() error {
		list, err := k.kube.AppsV1().Deployments(fleetNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		got := map[string]int32{}
		for _, d := range list.Items {
			if d.Spec.Replicas != nil {
				got[d.Name] = *d.Spec.Replicas
			}
		}
		var wrong []string
		for i, name := range names {
			if got[name] != want[i] {
				wrong = append(wrong, fmt.Sprintf("%s %d (want %d)", name, got[name], want[i]))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%d not there yet, e.g. %s", len(wrong), strings.Join(wrong[:min(3, len(wrong))], ", "))
		}
		return nil
	})
	settled = time.Since(wrote)
	settledOp, settledAd := sample("settled")
	t.Logf("%s all %d Deployments at their expected replicas %.0fs after the writes", k.elapsed(), fleetSize, settled.Seconds())

	// The steady state: the operator and the adapter over fleetWindow, the
	// replicas held.
	time.Sleep(fleetWindow)
	endOp, endAd := sample("steady")

	// The metric the HPA reads, for the sample: through the aggregated API
	// (as the HPA controller reads it) and in the HPA's status.
	metricName := func(i int) string { return "s0-azure-cosmosdb-" + leases + "-" + names[i] }
	var rows []string
	for _, i := range sampled {
		// The API server is slow to answer on a loaded machine (a TLS
		// handshake timed out once): a failed read is tried again.
		var served v1beta1.ExternalMetricValueList
		var hpa *autoscalingv2.HorizontalPodAutoscaler
		eventually(t, scaleTimeout, names[i]+"'s external metric and HPA", func() error {
			var err error
			if served, err = k.externalMetric(ctx, fleetNamespace, metricName(i), names[i]); err != nil {
				return err
			}
			hpa, err = k.kube.AutoscalingV2().HorizontalPodAutoscalers(fleetNamespace).Get(ctx, "keda-hpa-"+names[i], metav1.GetOptions{})
			return err
		})
		hpaMetric := "-"
		if len(hpa.Status.CurrentMetrics) > 0 && hpa.Status.CurrentMetrics[0].External != nil {
			if v := hpa.Status.CurrentMetrics[0].External.Current.AverageValue; v != nil {
				hpaMetric = v.String() + " (average)"
			}
		}
		replicas, err := k.replicas(ctx, fleetNamespace, names[i])
		if err != nil {
			t.Fatal(err)
		}
		wantMetric := resource.NewQuantity(int64(want[i])*lagThreshold, resource.DecimalSI)
		servedValue := "none"
		ok := len(served.Items) == 1 && served.Items[0].Value.Cmp(*wantMetric) == 0 && replicas == want[i]
		if len(served.Items) == 1 {
			servedValue = served.Items[0].Value.String()
		}
		rows = append(rows, fmt.Sprintf("%-10s %8d %10s %10s %18s %8d %8d  %v",
			names[i], int(want[i])*3*lagThreshold, wantMetric.String(), servedValue, hpaMetric, hpa.Status.DesiredReplicas, replicas, ok))
		if !ok {
			t.Errorf("%s: external metric %s (want %s), replicas %d (want %d)", names[i], servedValue, wantMetric.String(), replicas, want[i])
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%d ScaledObjects (azure-cosmosdb, %d leases each, pollingInterval %ds), KEDA operator pid %d, metrics adapter pid %d; CPU in %% of one core\n",
		fleetSize, physicalPartitions, fleetPollingInterval, operator, adapter)
	fmt.Fprintf(&b, "%-30s %6s %10s %10s %10s %10s %10s %10s\n", "phase (RSS at its end, CPU over it)", "secs", "op RSS", "op peak", "op CPU", "ad RSS", "ad peak", "ad CPU")
	for _, p := range []struct {
		name     string
		op0, op1 procSample
		ad0, ad1 procSample
	}{
		{"no ScaledObject", idleOp, idleOp2, idleAd, idleAd2},
		{"apply, 200 HPAs, the writes", idleOp2, startOp, idleAd2, startAd},
		{"writes to all 200 settled", startOp, settledOp, startAd, settledAd},
		{"steady", settledOp, endOp, settledAd, endAd},
	} {
		fmt.Fprintf(&b, "%-30s %6.0f %10s %10s %10s %10s %10s %10s\n", p.name, p.op1.at.Sub(p.op0.at).Seconds(),
			mib(p.op1.rss), mib(p.op1.peak), cpuShare(p.op0, p.op1), mib(p.ad1.rss), mib(p.ad1.peak), cpuShare(p.ad0, p.ad1))
	}
	fmt.Fprintf(&b, "\nsample: lag, the metric it asks for, the metric served through /apis/external.metrics.k8s.io, the HPA's current value, desired and spec.replicas\n")
	fmt.Fprintf(&b, "%-10s %8s %10s %10s %18s %8s %8s  %s\n", "name", "lag", "want", "served", "HPA", "desired", "replicas", "ok")
	b.WriteString(strings.Join(rows, "\n"))
	t.Logf("fleet: %s", b.String())
}

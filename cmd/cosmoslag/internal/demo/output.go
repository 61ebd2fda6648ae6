package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/hpamodel"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/sim"
)

// The demo's live table and summary.

const pollFormat = "%7s %7s %10s %7s %6s %8s %8s %7s  %s\n"

// printDemoHeader prints what the demo runs, then the table's header.
func printDemoHeader(out io.Writer, o demoOptions, url, metricName string) {
	window := fmt.Sprintf("scale-down stabilization %s", o.scaleDown)
	if o.scaleDown != hpamodel.DefaultScaleDownWindow {
		window += fmt.Sprintf(" (the HPA's default is %ds)", int(hpamodel.DefaultScaleDownWindow/time.Second))
	}
	merge := ""
	if o.sim.Merge {
		merge = ", partition merge enabled"
	}
	fmt.Fprintf(out, "cosmoslag demo: %d partitions, threshold %d, activation %d, writes %.0f/s, drain %.0f/s per replica, max %d replicas, %s, seed %d, %s processor%s\n",
		o.sim.Partitions, o.threshold, o.activation, o.sim.WriteRate, o.sim.DrainRate, o.maxReplicas, window, o.sim.Seed, o.sim.Mode(), merge)
	fmt.Fprintf(out, "embedded Cosmos DB at %s; processor %q, metric %s\n\n", url, o.sim.Processor(), metricName)
	if o.sim.Functions {
		fmt.Fprintln(out, `an Azure Functions app without LeaseContainerPrefix: its leases carry no prefix, and the trigger says processorName: ""`)
	}
	printPollHeader(out)
}

func printPollHeader(w io.Writer) {
	fmt.Fprintf(w, pollFormat, "TIME", "LAG", "PARTITIONS", "METRIC", "ACTIVE", "REPLICAS", "REQUESTS", "RU", "EVENTS")
}

func printPoll(w io.Writer, p demoPoll) {
	if p.Err != nil {
		fmt.Fprintf(w, pollFormat, seconds(p.At), "-", "-", "-", "-", fmt.Sprint(p.Replicas), fmt.Sprint(p.Requests), "-", strings.Join(p.Events, "; "))
		return
	}
	lag := fmt.Sprint(p.TotalLag)
	if p.StaleParents {
		lag += "*"
	}
	fmt.Fprintf(w, pollFormat, seconds(p.At), lag, fmt.Sprint(p.ActivePartitions), fmt.Sprint(p.Metric), cli.YesNo(p.Active),
		fmt.Sprint(p.Replicas), fmt.Sprint(p.Requests), fmt.Sprintf("%.1f", p.RequestCharge), strings.Join(p.Events, "; "))
}

func printDemoSummary(w io.Writer, o demoOptions, world *sim.World, polls []demoPoll) {
	if len(polls) == 0 {
		return
	}
	var (
		peak                demoPoll
		peakReplicas        demoPoll
		requests            int64
		failed, staleParent int
		mergeStale          int
		charge              float64
		activatedAt, zeroAt = time.Duration(-1), time.Duration(-1)
		prev                int32
	)
	for i, p := range polls {
		requests += p.Requests
		charge += p.RequestCharge
		if p.Err != nil {
			failed++
		}
		if p.StaleParents && (world.MergedAt == 0 || i < world.MergedAt) {
			staleParent++
		} else if p.StaleParents {
			mergeStale++
		}
		if p.TotalLag > peak.TotalLag {
			peak = p
		}
		if p.Replicas > peakReplicas.Replicas {
			peakReplicas = p
		}
		if i > 0 && prev == 0 && p.Replicas > 0 && activatedAt < 0 {
			activatedAt = p.At
		}
		if i > 0 && prev > 0 && p.Replicas == 0 {
			zeroAt = p.At
		}
		prev = p.Replicas
	}
	n := max(len(polls), 1)
	fmt.Fprintf(w, "\nSummary: %d polls over %s (seed %d)\n", len(polls), seconds(polls[len(polls)-1].At), o.sim.Seed)
	fmt.Fprintf(w, "  items written      %d; processed %d; backlog left %d\n", world.Written, world.Processed, world.Backlog())
	fmt.Fprintf(w, "  peak lag           %d at %s (metric %d, %d active partitions)\n", peak.TotalLag, seconds(peak.At), peak.Metric, peak.ActivePartitions)
	fmt.Fprintf(w, "  replicas           %s\n", replicaStory(activatedAt, peakReplicas, zeroAt))
	if world.SplitInfo != "" {
		fmt.Fprintf(w, "  split              %s; %d poll(s) saw a stale parent lease (LAG marked *)\n", world.SplitInfo, staleParent)
	}
	switch {
	case world.MergeInfo != "":
		fmt.Fprintf(w, "  merge              %s; %d poll(s) saw a stale parent lease (LAG marked *)\n", world.MergeInfo, mergeStale)
	case o.sim.Merge:
		fmt.Fprintf(w, "  merge              none: no two adjacent ranges had current leases before the end\n")
	}
	fmt.Fprintf(w, "  scaler requests    %d (%.1f per poll), %.1f RU (%.2f per poll)\n", requests, float64(requests)/float64(n), charge, charge/float64(n))
	fmt.Fprintf(w, "  failed polls       %d\n", failed)
}

func replicaStory(activatedAt time.Duration, peak demoPoll, zeroAt time.Duration) string {
	if activatedAt < 0 {
		return "never activated"
	}
	s := fmt.Sprintf("activated at %s, peak %d at %s", seconds(activatedAt), peak.Replicas, seconds(peak.At))
	if zeroAt > activatedAt {
		s += ", back to 0 at " + seconds(zeroAt)
	} else {
		s += ", still running at the end"
	}
	return s
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

package tune

import (
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// Hand-made samples, 10 s apart, of the situations issue Z names: what tune
// concludes from each, and what its text says.

type polled = azure.CosmosDBInspectedLease // one lease in one sample

// scenarioKeepingUp: no backlog, 10 writes/s per partition, replicas that
// could do more, a checkpoint every second: each sample shows the little
// lag that arrived since the last checkpoint.
func scenarioKeepingUp() []tuneSample {
	return handSamples(
		[]polled{lagAt("0", "a", 1000, 8), lagAt("1", "b", 2000, 6)},
		[]polled{lagAt("0", "a", 1100, 9), lagAt("1", "b", 2100, 8)},
		[]polled{lagAt("0", "a", 1200, 7), lagAt("1", "b", 2200, 9)},
		[]polled{lagAt("0", "a", 1300, 8), lagAt("1", "b", 2300, 5)},
	)
}

// scenarioReset: lease 0's checkpoint goes 136 → 1330 → 100 → 1321; its
// first and last sample alone look like a steady drain.
func scenarioReset() []tuneSample {
	return handSamples(
		[]polled{lagAt("0", "a", 136, 3000), lagAt("1", "b", 0, 3000)},
		[]polled{lagAt("0", "a", 1330, 1900), lagAt("1", "b", 200, 2900)},
		[]polled{lagAt("0", "a", 100, 3200), lagAt("1", "b", 400, 2800)},
		[]polled{lagAt("0", "a", 1321, 2100), lagAt("1", "b", 600, 2700)},
	)
}

// scenarioUnequalOwners: two owners with a backlog each, draining 10/s
// more than they are written: a's 1000 takes 100 s, b's 3360 takes 336 s.
func scenarioUnequalOwners(third ...[3]polled) []tuneSample {
	polls := [][]polled{
		{lagAt("0", "a", 0, 1200), lagAt("1", "b", 0, 3560)},
		{lagAt("0", "a", 200, 1100), lagAt("1", "b", 200, 3460)},
		{lagAt("0", "a", 400, 1000), lagAt("1", "b", 400, 3360)},
	}
	for _, rows := range third {
		for i := range polls {
			polls[i] = append(polls[i], rows[i])
		}
	}
	return handSamples(polls...)
}

// scenarioHotPartitions: four partitions written 30/s each, replicas that
// drain 25/s with a backlog: no replica count keeps up.
func scenarioHotPartitions() []tuneSample {
	var polls [][]polled
	for i := range int64(3) {
		var rows []polled
		for p, owner := range []string{"a", "b", "c", "d"} {
			rows = append(rows, lagAt(jsonNumber(int64(p)), owner, 250*i, 5000+50*i))
		}
		polls = append(polls, rows)
	}
	return handSamples(polls...)
}

// scenarioOneWrittenPartition: only lease 0's partition is written (30/s);
// every replica did all it was given.
func scenarioOneWrittenPartition() []tuneSample {
	return handSamples(
		[]polled{lagAt("0", "a", 0, 5), lagAt("1", "b", 0, 20), lagAt("2", "c", 0, 20)},
		[]polled{lagAt("0", "a", 300, 5), lagAt("1", "b", 10, 10), lagAt("2", "c", 10, 10)},
		[]polled{lagAt("0", "a", 600, 5), lagAt("1", "b", 20, 0), lagAt("2", "c", 20, 0)},
	)
}

// scenarioStaleParent: lease 0's partition splits before the last sample:
// the lease turns stale parent and no lag can be read for it.
func scenarioStaleParent() []tuneSample {
	stale := lagAt("0", "a", 300, 0)
	stale.StaleParent = true
	return handSamples(
		[]polled{lagAt("0", "a", 100, 500), lagAt("1", "b", 0, 1000)},
		[]polled{lagAt("0", "a", 200, 500), lagAt("1", "b", 300, 900)},
		[]polled{stale, lagAt("1", "b", 600, 800)},
	)
}

// tuneText is tune's text output for an analysis of samples.
func tuneText(t *testing.T, samples []tuneSample, a tuneAnalysis) string {
	t.Helper()
	r := &tuneReport{WindowSeconds: samples[len(samples)-1].at.Sub(samples[0].at).Seconds(), IntervalSeconds: 10}
	r.Threshold = samples[0].estimate.Threshold
	r.fill(samples, a)
	var b strings.Builder
	if err := writeTuneText(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

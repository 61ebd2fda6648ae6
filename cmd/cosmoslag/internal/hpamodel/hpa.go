// Package hpamodel is a small model of KEDA and the HPA for one trigger:
// the replica counts check, tune and demo show.
package hpamodel

import (
	"fmt"
	"math"
	"strings"
	"time"

	v2 "k8s.io/api/autoscaling/v2"
)

// KEDA's defaults for a ScaledObject and the HPA controller's default
// tolerance (--horizontal-pod-autoscaler-tolerance).
const (
	DefaultMinReplicas = 0
	DefaultMaxReplicas = 100
	DefaultCooldown    = 300 * time.Second
	// The HPA's default behavior.scaleDown.stabilizationWindowSeconds.
	DefaultScaleDownWindow = 300 * time.Second
	hpaTolerance           = 0.1
)

// Autoscaler is a small model of KEDA plus the HPA for one trigger:
//
//   - at 0 replicas, KEDA activates the workload to max(minReplicaCount, 1)
//     when the trigger is active, and otherwise leaves it at 0;
//   - with replicas running, KEDA scales back to 0 (minReplicaCount 0 only)
//     once the trigger has been inactive for the cooldown period;
//   - otherwise the HPA sets the count from the metric: for AverageValue
//     ceil(metric / target), for Value ceil(current × metric / target),
//     unless the ratio is within the 10 % tolerance, bounded by
//     [max(minReplicaCount, 1), maxReplicaCount];
//   - the HPA scales down no further than the highest count it recommended
//     within the scale-down stabilization window (ScaleDownWindow; 0 turns
//     it off). KEDA's scale to 0 is not the HPA's and is not held.
//
// Not modelled: the HPA's rate policies and scale-up stabilization, and
// KEDA's fallback. Each call to step is one polling interval.
type Autoscaler struct {
	Min, Max        int32
	Target          int64 // changeFeedLagThreshold: the metric target
	MetricType      v2.MetricTargetType
	Cooldown        time.Duration
	ScaleDownWindow time.Duration

	lastActive      time.Time
	everActive      bool
	recommendations []recommendation // the HPA's, within ScaleDownWindow
}

type recommendation struct {
	at       time.Time
	replicas int32
}

// Decision is the replica count after one step and why.
type Decision struct {
	Replicas int32  `json:"replicas"`
	Reason   string `json:"reason"`

	Kind        DecisionKind
	Held        bool  // the stabilization window holds Replicas above recommended
	Recommended int32 // the HPA's recommendation for this reading
}

// DecisionKind is which rule made a decision; the demo explains a decision
// in its EVENTS whenever the replica count or the rule changes.
type DecisionKind int

const (
	KindActivate  DecisionKind = iota + 1 // KEDA: 0 → max(min, 1)
	KindStayZero                          // KEDA: inactive at 0
	KindScaleZero                         // KEDA: inactive for the cooldown period
	KindCooldown                          // KEDA: inactive, the cooldown period running
	KindHPA                               // the HPA's formula
	KindTolerance                         // the HPA: ratio within its tolerance
	KindBounded                           // the HPA's formula, bounded by min or max
	KindHeld                              // the HPA: a scale down held by the stabilization window
)

func (a *Autoscaler) Step(now time.Time, current int32, metric int64, active bool) Decision {
	if active {
		a.lastActive, a.everActive = now, true
	}
	switch {
	case current == 0 && active:
		n := max(a.Min, 1)
		return Decision{Replicas: n, Reason: fmt.Sprintf("KEDA activates 0 → %d", n), Kind: KindActivate}
	case current == 0 && a.Min == 0:
		return Decision{Replicas: 0, Reason: "inactive, stays at 0", Kind: KindStayZero}
	case !active && a.Min == 0 && (!a.everActive || now.Sub(a.lastActive) >= a.Cooldown):
		return Decision{Replicas: 0, Reason: fmt.Sprintf("inactive for the cooldown period (%s): KEDA scales to 0", a.Cooldown), Kind: KindScaleZero}
	case !active && a.Min == 0:
		// KEDA leaves the workload to the HPA until the cooldown period has
		// passed; with no metric the HPA keeps its minimum.
		d := a.stabilize(now, current, a.hpa(max(current, 1), metric))
		until := "the HPA: " + strings.TrimPrefix(d.Reason, "HPA: ")
		switch {
		case d.Held:
			until = fmt.Sprintf("the HPA's scale-down stabilization window (%s) holds %d", a.ScaleDownWindow, d.Replicas)
		case d.Replicas == max(a.Min, 1):
			until = fmt.Sprintf("the HPA keeps its minimum, %d", d.Replicas)
		}
		d.Reason = fmt.Sprintf("inactive: KEDA scales to 0 once the trigger has been inactive for the cooldown period (%s; %s so far); until then %s",
			a.Cooldown, now.Sub(a.lastActive), until)
		d.Kind = KindCooldown
		return d
	}
	return a.stabilize(now, current, a.hpa(max(current, 1), metric))
}

// stabilize records the HPA's recommendation d and holds a scale down at the
// highest recommendation within the scale-down stabilization window, as the
// HPA controller does.
func (a *Autoscaler) stabilize(now time.Time, current int32, d Decision) Decision {
	if a.ScaleDownWindow <= 0 {
		return d
	}
	kept := a.recommendations[:0]
	for _, r := range a.recommendations {
		if now.Sub(r.at) < a.ScaleDownWindow {
			kept = append(kept, r)
		}
	}
	a.recommendations = append(kept, recommendation{now, d.Replicas})
	highest := d.Replicas
	for _, r := range a.recommendations {
		highest = max(highest, r.replicas)
	}
	if held := min(current, highest); held > d.Replicas {
		d.Reason += fmt.Sprintf("; scale-down stabilization window (%s) holds %d, the highest recommendation within it", a.ScaleDownWindow, held)
		d.Held, d.Recommended, d.Replicas, d.Kind = true, d.Replicas, held, KindHeld
	}
	return d
}

// hpa is the HPA's computation for a running workload.
func (a *Autoscaler) hpa(current int32, metric int64) Decision {
	target := float64(max(a.Target, 1))
	var ratio, want float64
	var formula, ratioText string
	if a.MetricType == v2.ValueMetricType {
		ratio = float64(metric) / target
		want = math.Ceil(ratio * float64(current))
		formula = fmt.Sprintf("ceil(%d × %d / %d) = %.0f", current, metric, a.Target, want)
		ratioText = fmt.Sprintf("%.2f = %d / %d", ratio, metric, a.Target)
	} else {
		ratio = float64(metric) / (target * float64(current))
		want = math.Ceil(float64(metric) / target)
		formula = fmt.Sprintf("ceil(%d / %d) = %.0f", metric, a.Target, want)
		ratioText = fmt.Sprintf("%.2f = %d / (%d × %d)", ratio, metric, current, a.Target)
	}
	if math.Abs(1-ratio) <= hpaTolerance && float64(current) != want {
		return Decision{Replicas: a.clamp(current), Kind: KindTolerance,
			Reason: fmt.Sprintf("HPA: usage ratio %s is within its %.0f %% tolerance: keeps %d, not %s", ratioText, hpaTolerance*100, current, formula)}
	}
	if math.Abs(1-ratio) <= hpaTolerance {
		return Decision{Replicas: a.clamp(current), Kind: KindTolerance,
			Reason: fmt.Sprintf("HPA: usage ratio %s is within its %.0f %% tolerance: keeps %d", ratioText, hpaTolerance*100, current)}
	}
	n := a.clamp(int32(min(want, math.MaxInt32)))
	d := Decision{Replicas: n, Reason: "HPA: " + formula, Kind: KindHPA}
	switch {
	case float64(n) < want:
		d.Reason += fmt.Sprintf(", bounded by maxReplicaCount %d", a.Max)
		d.Kind = KindBounded
	case float64(n) > want:
		d.Reason += fmt.Sprintf(", bounded below by %d (the HPA's minimum: minReplicaCount, and at least 1)", max(a.Min, 1))
		d.Kind = KindBounded
	}
	return d
}

func (a *Autoscaler) clamp(n int32) int32 {
	return min(max(n, a.Min, 1), max(a.Max, 1))
}

// Plan is where KEDA and the HPA would take a workload for one
// metric reading, with the steps that lead there.
type Plan struct {
	Current int32    `json:"current"`
	Desired int32    `json:"desired"`
	Min     int32    `json:"minReplicaCount"`
	Max     int32    `json:"maxReplicaCount"`
	Steps   []string `json:"steps"`
	// ScaleDownWindowSeconds is the HPA's scale-down stabilization window;
	// AfterWindow the count it scales down to once the window has passed
	// with this reading, when the window holds Desired above it.
	ScaleDownWindowSeconds int64  `json:"scaleDownStabilizationWindowSeconds"`
	AfterWindow            *int32 `json:"desiredAfterStabilizationWindow,omitempty"`
}

// Settle applies one reading from current replicas: activation from 0 is
// followed by the HPA's first decision; an inactive trigger is taken to have
// been inactive for the whole cooldown period, and running replicas to have
// been the HPA's recommendation until now (so a scale down is held by the
// stabilization window). Fewer current replicas than minReplicaCount are
// taken as minReplicaCount: KEDA never runs fewer, so that is the floor.
func (a *Autoscaler) Settle(current int32, metric int64, active bool) Plan {
	var floor []string
	if current < a.Min {
		floor = []string{fmt.Sprintf("current replicas taken as %d, not %d: KEDA never runs fewer than minReplicaCount", a.Min, current)}
		current = a.Min
	}
	now := time.Time{}.Add(a.ScaleDownWindow)
	if current > 0 {
		a.recommendations = []recommendation{{now.Add(-time.Nanosecond), current}}
	}
	d := a.Step(now, current, metric, active)
	plan := Plan{Current: current, Min: a.Min, Max: a.Max, Steps: append(floor, d.Reason), ScaleDownWindowSeconds: int64(a.ScaleDownWindow / time.Second)}
	if d.Held {
		after := d.Recommended
		plan.AfterWindow = &after
	}
	if current == 0 && d.Replicas > 0 {
		d = a.hpa(d.Replicas, metric)
		plan.Steps = append(plan.Steps, d.Reason)
	}
	plan.Desired = d.Replicas
	return plan
}

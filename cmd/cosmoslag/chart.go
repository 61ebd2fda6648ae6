package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"strings"
)

// writeChart draws the demo as an SVG: total lag and the metric on the
// left axis, replicas as a step line on the right axis, and a marker where
// the partition split. Hand-written SVG, no dependencies.
func writeChart(path string, polls []demoPoll, o demoOptions) error {
	if len(polls) == 0 {
		return fmt.Errorf("chart: no polls to draw")
	}
	if err := os.WriteFile(path, renderChart(polls, o), 0o644); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	return nil
}

const (
	chartW, chartH                       = 900, 420
	padLeft, padRight, padTop, padBottom = 70, 70, 56, 50
	gridLines                            = 4 // horizontal gridlines above the time axis
)

func renderChart(polls []demoPoll, o demoOptions) []byte {
	var maxLag int64
	var maxReplicas int32
	for _, p := range polls {
		maxLag = max(maxLag, p.TotalLag, p.Metric)
		maxReplicas = max(maxReplicas, p.Replicas)
	}
	lagTop := niceCeil(float64(max(maxLag, 10)))
	// The replica axis spans a multiple of the gridline count, so every
	// gridline carries an integer replica tick.
	repTop := float64(gridLines * ((max(maxReplicas, 2) + gridLines - 1) / gridLines))
	end := max(polls[len(polls)-1].At.Seconds(), 1)
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	x := func(sec float64) float64 { return padLeft + sec/end*plotW }
	yLag := func(v float64) float64 { return padTop + plotH - v/lagTop*plotH }
	yRep := func(v float64) float64 { return padTop + plotH - v/repTop*plotH }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<title>cosmoslag demo: change feed lag and replicas over time</title>`+"\n")
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padLeft,
		html.EscapeString(fmt.Sprintf("Change feed lag and replicas — %d partitions, threshold %d, seed %d", o.sim.Partitions, o.threshold, o.sim.Seed)))

	// Grid, left axis (lag) and right axis (replicas) share the gridlines.
	for i := 0; i <= gridLines; i++ {
		v := lagTop * float64(i) / gridLines
		y := yLag(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", padLeft, y, chartW-padRight, y)
		fmt.Fprintf(&b, `<text class="lag-tick" x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s</text>`+"\n", padLeft-6, y+4, trimFloat(v))
		r := repTop * float64(i) / gridLines
		ry := yRep(r)
		fmt.Fprintf(&b, `<line class="replica-tick" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2ca02c"/>`+"\n", chartW-padRight, ry, chartW-padRight+4, ry)
		fmt.Fprintf(&b, `<text class="replica-tick-label" x="%d" y="%.1f" fill="#2ca02c">%s</text>`+"\n", chartW-padRight+6, ry+4, trimFloat(r))
	}
	// Time axis.
	tstep := niceCeil(end / 8)
	for t := 0.0; t <= end+1e-9; t += tstep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%ss</text>`+"\n", x(t), chartH-padBottom+18, trimFloat(t))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555"/>`+"\n", padLeft, chartH-padBottom, chartW-padRight, chartH-padBottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time (simulated)</text>`+"\n", padLeft+int(plotW/2), chartH-12)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="#1f77b4">change feed lag (transactions)</text>`+"\n", padTop+int(plotH/2))
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="#2ca02c">replicas</text>`+"\n", chartW-20, padTop+int(plotH/2))

	// Split marker: the first poll whose events mention the split.
	for _, p := range polls {
		if hasEvent(p, "split: ") {
			sx := x(p.At.Seconds())
			fmt.Fprintf(&b, `<line id="split" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 4"/>`+"\n", sx, padTop, sx, chartH-padBottom)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#777">split</text>`+"\n", sx+4, padTop+12)
			break
		}
	}

	// Cooldown: from the poll where the scaler went inactive to the poll
	// where KEDA scaled to zero.
	for i := 1; i < len(polls); i++ {
		if polls[i].Active || !polls[i-1].Active || polls[i].Replicas == 0 {
			continue
		}
		for j := i + 1; j < len(polls) && !polls[j].Active; j++ {
			if polls[j].Replicas == 0 {
				x0, x1 := x(polls[i].At.Seconds()), x(polls[j].At.Seconds())
				fmt.Fprintf(&b, `<rect class="cooldown" x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#9467bd" fill-opacity="0.12"/>`+"\n", x0, padTop, x1-x0, plotH)
				fmt.Fprintf(&b, `<text class="cooldown-label" x="%.1f" y="%d" text-anchor="middle" fill="#9467bd">cooldown</text>`+"\n", (x0+x1)/2, padTop+26)
				break
			}
		}
	}

	// Activation threshold on the lag axis: above it, KEDA activates from 0.
	ay := yLag(float64(o.activation))
	fmt.Fprintf(&b, `<line id="activation" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="2 3"/>`+"\n", padLeft, ay, chartW-padRight, ay)
	fmt.Fprintf(&b, `<text id="activation-label" x="%d" y="%.1f" fill="#d62728">activation %d</text>`+"\n", padLeft+4, ay-4, o.activation)

	// Series.
	var lag, metric, replicas []string
	for i, p := range polls {
		t := p.At.Seconds()
		lag = append(lag, fmt.Sprintf("%.1f,%.1f", x(t), yLag(float64(p.TotalLag))))
		metric = append(metric, fmt.Sprintf("%.1f,%.1f", x(t), yLag(float64(p.Metric))))
		if i == 0 {
			replicas = append(replicas, fmt.Sprintf("M%.1f,%.1f", x(t), yRep(float64(p.Replicas))))
		} else {
			replicas = append(replicas, fmt.Sprintf("H%.1f V%.1f", x(t), yRep(float64(p.Replicas))))
		}
	}
	fmt.Fprintf(&b, `<polyline id="lag" fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", strings.Join(lag, " "))
	fmt.Fprintf(&b, `<polyline id="metric" fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 3" points="%s"/>`+"\n", strings.Join(metric, " "))
	fmt.Fprintf(&b, `<path id="replicas" fill="none" stroke="#2ca02c" stroke-width="2.5" d="%s"/>`+"\n", strings.Join(replicas, " "))

	// Peaks: the first poll reaching the highest lag and the most replicas.
	peakLag, peakRep := polls[0], polls[0]
	for _, p := range polls {
		if p.TotalLag > peakLag.TotalLag {
			peakLag = p
		}
		if p.Replicas > peakRep.Replicas {
			peakRep = p
		}
	}
	px, py := x(peakLag.At.Seconds()), yLag(float64(peakLag.TotalLag))
	fmt.Fprintf(&b, `<circle id="peak-lag" cx="%.1f" cy="%.1f" r="3.5" fill="#1f77b4"/>`+"\n", px, py)
	fmt.Fprintf(&b, `<text id="peak-lag-label" x="%.1f" y="%.1f" fill="#1f77b4">peak lag %d at %ss</text>`+"\n", px+6, py-6, peakLag.TotalLag, trimFloat(peakLag.At.Seconds()))
	rx, ry := x(peakRep.At.Seconds()), yRep(float64(peakRep.Replicas))
	fmt.Fprintf(&b, `<circle id="peak-replicas" cx="%.1f" cy="%.1f" r="3.5" fill="#2ca02c"/>`+"\n", rx, ry)
	fmt.Fprintf(&b, `<text id="peak-replicas-label" x="%.1f" y="%.1f" fill="#2ca02c">peak %d replicas</text>`+"\n", rx+6, ry+14, peakRep.Replicas)

	// Legend.
	legend := []struct{ color, dash, label string }{
		{"#1f77b4", "", "total lag"},
		{"#ff7f0e", "6 3", "metric = min(lag, active partitions × threshold)"},
		{"#2ca02c", "", "replicas (KEDA + HPA model)"},
	}
	lx := float64(padLeft)
	for _, l := range legend {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="40" x2="%.0f" y2="40" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", lx, lx+22, l.color, l.dash)
		fmt.Fprintf(&b, `<text x="%.0f" y="44">%s</text>`+"\n", lx+27, html.EscapeString(l.label))
		lx += 27 + float64(len(l.label))*6.2 + 20
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func hasEvent(p demoPoll, prefix string) bool {
	for _, e := range p.Events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// niceCeil rounds v up to a round multiple (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8) of a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

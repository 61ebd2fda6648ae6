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
)

func renderChart(polls []demoPoll, o demoOptions) []byte {
	var maxLag int64
	var maxReplicas int32
	for _, p := range polls {
		maxLag = max(maxLag, p.TotalLag, p.Metric)
		maxReplicas = max(maxReplicas, p.Replicas)
	}
	lagTop := niceCeil(float64(max(maxLag, 10)))
	repTop := float64(max(maxReplicas, 2))
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

	// Grid and left axis (lag).
	for i := 0; i <= 4; i++ {
		v := lagTop * float64(i) / 4
		y := yLag(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", padLeft, y, chartW-padRight, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s</text>`+"\n", padLeft-6, y+4, trimFloat(v))
	}
	// Right axis (replicas), integer ticks.
	step := math.Max(1, math.Ceil(repTop/5))
	for v := 0.0; v <= repTop; v += step {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#2ca02c">%s</text>`+"\n", chartW-padRight+6, yRep(v)+4, trimFloat(v))
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

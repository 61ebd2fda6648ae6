package main

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"
)

// writeChart draws the demo as an SVG: total lag and the metric on the
// left axis, replicas as a step line on the right axis, markers where the
// partitions split and merged, the activation threshold, the cooldown
// period and maxReplicaCount. Hand-written SVG, no dependencies.
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
	// gridline carries an integer replica tick. It reaches --max-replicas
	// when that is at most four times the peak, so that the bound is drawn;
	// a larger bound is named at the top of the axis instead.
	maxOnAxis := o.maxReplicas > 0 && o.maxReplicas <= 4*int(max(maxReplicas, 1))
	axisReplicas := max(maxReplicas, 2)
	if maxOnAxis {
		axisReplicas = max(axisReplicas, int32(o.maxReplicas))
	}
	repTop := float64(gridLines * ((axisReplicas + gridLines - 1) / gridLines))
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

	// Split and merge markers: the first poll whose events mention each.
	var markers [][]point // vertical marker lines, which labels avoid too
	var markerLabels []box
	for _, m := range []struct{ id, prefix string }{{"split", "split: "}, {"merge", "merge: "}} {
		for _, p := range polls {
			if hasEvent(p, m.prefix) {
				sx := x(p.At.Seconds())
				fmt.Fprintf(&b, `<line id="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 4"/>`+"\n", m.id, sx, padTop, sx, chartH-padBottom)
				fmt.Fprintf(&b, `<text id="%s-label" x="%.1f" y="%d" fill="#777">%s</text>`+"\n", m.id, sx+4, padTop+12, m.id)
				markers = append(markers, []point{{sx, padTop}, {sx, chartH - padBottom}})
				markerLabels = append(markerLabels, labelBox(m.id, point{sx + 4, padTop + 12}))
				break
			}
		}
	}

	// Cooldown: KEDA counts the cooldown period from the last poll at which
	// the trigger was active, so the band runs from that poll to the one
	// where KEDA scaled to zero.
	for i := 1; i < len(polls); i++ {
		if polls[i].Active || !polls[i-1].Active || polls[i].Replicas == 0 {
			continue
		}
		for j := i + 1; j < len(polls) && !polls[j].Active; j++ {
			if polls[j].Replicas == 0 {
				x0, x1 := x(polls[i-1].At.Seconds()), x(polls[j].At.Seconds())
				fmt.Fprintf(&b, `<rect class="cooldown" x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#9467bd" fill-opacity="0.12"/>`+"\n", x0, padTop, x1-x0, plotH)
				fmt.Fprintf(&b, `<text class="cooldown-label" x="%.1f" y="%d" text-anchor="middle" fill="#9467bd">cooldown</text>`+"\n", (x0+x1)/2, padTop+26)
				markerLabels = append(markerLabels, labelBox("cooldown", point{(x0+x1)/2 - textWidth("cooldown")/2, padTop + 26}))
				break
			}
		}
	}

	// Series.
	var lag, metric, replicas []string
	var lagPts, metricPts, repPts []point
	for i, p := range polls {
		t := p.At.Seconds()
		lagPts = append(lagPts, point{x(t), yLag(float64(p.TotalLag))})
		metricPts = append(metricPts, point{x(t), yLag(float64(p.Metric))})
		lag = append(lag, fmt.Sprintf("%.1f,%.1f", x(t), yLag(float64(p.TotalLag))))
		metric = append(metric, fmt.Sprintf("%.1f,%.1f", x(t), yLag(float64(p.Metric))))
		if i == 0 {
			replicas = append(replicas, fmt.Sprintf("M%.1f,%.1f", x(t), yRep(float64(p.Replicas))))
		} else {
			repPts = append(repPts, point{x(t), repPts[len(repPts)-1].y})
			replicas = append(replicas, fmt.Sprintf("H%.1f V%.1f", x(t), yRep(float64(p.Replicas))))
		}
		repPts = append(repPts, point{x(t), yRep(float64(p.Replicas))})
	}
	fmt.Fprintf(&b, `<polyline id="lag" fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", strings.Join(lag, " "))
	fmt.Fprintf(&b, `<polyline id="metric" fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 3" points="%s"/>`+"\n", strings.Join(metric, " "))
	fmt.Fprintf(&b, `<path id="replicas" fill="none" stroke="#2ca02c" stroke-width="2.5" d="%s"/>`+"\n", strings.Join(replicas, " "))

	// Labels go where no series and no other label crosses them.
	series := append([][]point{lagPts, metricPts, repPts}, markers...)
	plot := box{padLeft, padTop, chartW - padRight, chartH - padBottom - 2} // labels stay off the time axis
	placed := markerLabels
	label := func(id, class, color, text string, at []point) box {
		lb := placeLabel(text, at, series, placed, plot)
		placed = append(placed, lb)
		attrs := ""
		if id != "" {
			attrs += fmt.Sprintf(` id="%s"`, id)
		}
		if class != "" {
			attrs += fmt.Sprintf(` class="%s"`, class)
		}
		fmt.Fprintf(&b, `<text%s x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", attrs, lb.x0, lb.y1-labelDescent, color, html.EscapeString(text))
		return lb
	}

	// maxReplicaCount on the replica axis, or named at its top.
	if o.maxReplicas > 0 {
		text := fmt.Sprintf("maxReplicaCount %d", o.maxReplicas)
		if maxOnAxis {
			my := yRep(float64(o.maxReplicas))
			fmt.Fprintf(&b, `<line id="max-replicas" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2ca02c" stroke-dasharray="8 4"/>`+"\n", padLeft, my, chartW-padRight, my)
			right := float64(chartW-padRight) - 4 - textWidth(text)
			label("max-replicas-label", "", "#2ca02c", text, []point{{right, my - 4}, {right, my + 15}, {padLeft + 4, my - 4}, {padLeft + 4, my + 15}})
		} else {
			fmt.Fprintf(&b, `<text id="max-replicas-label" x="%d" y="%d" text-anchor="end" fill="#2ca02c">%s (above the axis)</text>`+"\n", chartW-padRight, padTop-4, text)
		}
	}

	// The activation threshold: above it, KEDA activates from 0. A line on
	// the lag axis where that is clear of the time axis; at or near 0 it
	// would lie on the time axis, so there each poll at which KEDA
	// activated is labelled with the lag that crossed the threshold.
	ay := yLag(float64(o.activation))
	lineVisible := ay <= float64(chartH-padBottom)-8
	if lineVisible {
		fmt.Fprintf(&b, `<line id="activation" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="2 3"/>`+"\n", padLeft, ay, chartW-padRight, ay)
		text := fmt.Sprintf("activation %d", o.activation)
		var at []point
		for lx := float64(padLeft + 4); lx+textWidth(text) < float64(chartW-padRight); lx += 8 {
			at = append(at, point{lx, ay - 4}, point{lx, ay + 15})
		}
		label("activation-label", "", "#d62728", text, at)
	}
	for i := 1; i < len(polls); i++ {
		if polls[i-1].Replicas != 0 || polls[i].Replicas == 0 {
			continue
		}
		px, py := x(polls[i].At.Seconds()), yLag(float64(polls[i].TotalLag))
		fmt.Fprintf(&b, `<circle class="activation-marker" cx="%.1f" cy="%.1f" r="4.5" fill="none" stroke="#d62728" stroke-width="1.5"/>`+"\n", px, py)
		if !lineVisible {
			text := fmt.Sprintf("KEDA activates: lag %d > activation %d", polls[i].TotalLag, o.activation)
			lb := label("", "activation-label", "#d62728", text, around(px, py, textWidth(text)))
			leader(&b, px, py, lb, "#d62728")
		}
	}

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
	text := fmt.Sprintf("peak lag %d at %ss", peakLag.TotalLag, trimFloat(peakLag.At.Seconds()))
	leader(&b, px, py, label("peak-lag-label", "", "#1f77b4", text, around(px, py, textWidth(text))), "#1f77b4")
	rx, ry := x(peakRep.At.Seconds()), yRep(float64(peakRep.Replicas))
	fmt.Fprintf(&b, `<circle id="peak-replicas" cx="%.1f" cy="%.1f" r="3.5" fill="#2ca02c"/>`+"\n", rx, ry)
	text = fmt.Sprintf("peak %d replicas", peakRep.Replicas)
	leader(&b, rx, ry, label("peak-replicas-label", "", "#2ca02c", text, around(rx, ry, textWidth(text))), "#2ca02c")

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

// leader draws a thin line from a marker at (x, y) to its label when the
// label had to move away from it.
func leader(b *bytes.Buffer, x, y float64, lb box, color string) {
	tx, ty := min(max(x, lb.x0), lb.x1), min(max(y, lb.y0), lb.y1)
	if math.Hypot(tx-x, ty-y) < 20 {
		return
	}
	fmt.Fprintf(b, `<line class="leader" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="0.8"/>`+"\n", x, y, tx, ty, color)
}

// point is a position on the chart, in pixels.
type point struct{ x, y float64 }

// box is a label's extent: x0 ≤ x ≤ x1, y0 ≤ y ≤ y1 (y grows downwards).
type box struct{ x0, y0, x1, y1 float64 }

// A 12px label: its height above the baseline, and below it.
const labelAscent, labelDescent = 11, 3

// textWidth estimates the width of a 12px sans-serif label.
func textWidth(s string) float64 { return 6.2 * float64(len([]rune(s))) }

// labelBox is the extent of a label whose baseline starts at p.
func labelBox(text string, p point) box {
	return box{p.x, p.y - labelAscent, p.x + textWidth(text), p.y + labelDescent}
}

// around lists label positions (baseline starts) around a marker at (x, y):
// right, left, above and below it, then further up and down, then at the
// plot's sides.
func around(x, y, w float64) []point {
	var at []point
	for _, dy := range []float64{-8, 18, -24, 34, -40, 50} {
		at = append(at, point{x + 8, y + dy}, point{x - 8 - w, y + dy}, point{x - w/2, y + dy})
	}
	// Then anywhere above or below, nearest first (placeLabel's caller
	// draws a leader line to a distant label).
	var far []point
	for dy := 16.0; dy < chartH; dy += 16 {
		for _, ly := range []float64{y - 8 - dy, y + 18 + dy} {
			for lx := float64(padLeft + 4); lx+w <= chartW-padRight; lx += 16 {
				far = append(far, point{lx, ly})
			}
		}
	}
	dist := func(p point) float64 {
		b := box{p.x, p.y - labelAscent, p.x + w, p.y + labelDescent}
		return math.Hypot(x-min(max(x, b.x0), b.x1), y-min(max(y, b.y0), b.y1))
	}
	slices.SortStableFunc(far, func(a, b point) int { return cmp.Compare(dist(a), dist(b)) })
	return append(at, far...)
}

// placeLabel returns the box of the first position at which the label lies
// inside the plot and crosses no series and no label placed before;
// failing that, the first position inside the plot, else the first.
func placeLabel(text string, at []point, series [][]point, placed []box, plot box) box {
	var fallback *box
	for _, p := range at {
		b := labelBox(text, p)
		if b.x0 < plot.x0 || b.x1 > plot.x1 || b.y0 < plot.y0 || b.y1 > plot.y1 {
			continue
		}
		if fallback == nil {
			fallback = &b
		}
		if !crossesAny(b, series, placed) {
			return b
		}
	}
	if fallback != nil {
		return *fallback
	}
	return labelBox(text, at[0])
}

// crossesAny reports whether b, with a margin of 2px, touches a series or
// a placed label.
func crossesAny(b box, series [][]point, placed []box) bool {
	g := box{b.x0 - 2, b.y0 - 2, b.x1 + 2, b.y1 + 2}
	for _, o := range placed {
		if g.x0 < o.x1 && o.x0 < g.x1 && g.y0 < o.y1 && o.y0 < g.y1 {
			return true
		}
	}
	for _, line := range series {
		for i := 1; i < len(line); i++ {
			if segmentCrosses(g, line[i-1], line[i]) {
				return true
			}
		}
	}
	return false
}

// segmentCrosses reports whether the segment from p to q touches b
// (Liang–Barsky clipping).
func segmentCrosses(b box, p, q point) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := q.x-p.x, q.y-p.y
	for _, e := range [][2]float64{{-dx, p.x - b.x0}, {dx, b.x1 - p.x}, {-dy, p.y - b.y0}, {dy, b.y1 - p.y}} {
		pe, qe := e[0], e[1]
		if pe == 0 {
			if qe < 0 {
				return false
			}
			continue
		}
		t := qe / pe
		if pe < 0 {
			t0 = max(t0, t)
		} else {
			t1 = min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
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

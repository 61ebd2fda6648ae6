package demo

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
	c := newChart(polls, o)
	c.header()
	c.axes()
	markers := c.eventMarkers()
	c.cooldownBands()
	c.series = append(c.drawSeries(), markers...)
	c.maxReplicaCount()
	c.activation()
	c.peaks()
	c.legend()
	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

// chart is an SVG being drawn: its scales, the lines labels avoid and the
// labels placed so far.
type chart struct {
	b     bytes.Buffer
	polls []demoPoll
	o     demoOptions
	// lagTop and repTop are the tops of the left and right axes, end the
	// last poll's time in seconds.
	lagTop, repTop, end float64
	plotW, plotH        float64
	// maxOnAxis is whether --max-replicas is drawn on the replica axis.
	maxOnAxis bool
	series    [][]point // the series and the vertical markers
	placed    []box     // the labels drawn so far
}

func newChart(polls []demoPoll, o demoOptions) *chart {
	var maxLag int64
	var maxReplicas int32
	for _, p := range polls {
		maxLag = max(maxLag, p.TotalLag, p.Metric)
		maxReplicas = max(maxReplicas, p.Replicas)
	}
	c := &chart{polls: polls, o: o, lagTop: niceCeil(float64(max(maxLag, 10)))}
	// The replica axis spans a multiple of the gridline count, so every
	// gridline carries an integer replica tick. It reaches --max-replicas
	// when that is at most four times the peak, so that the bound is drawn;
	// a larger bound is named at the top of the axis instead.
	c.maxOnAxis = o.maxReplicas > 0 && o.maxReplicas <= 4*int(max(maxReplicas, 1))
	axisReplicas := max(maxReplicas, 2)
	if c.maxOnAxis {
		axisReplicas = max(axisReplicas, int32(o.maxReplicas))
	}
	c.repTop = float64(gridLines * ((axisReplicas + gridLines - 1) / gridLines))
	c.end = max(polls[len(polls)-1].At.Seconds(), 1)
	c.plotW, c.plotH = float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	return c
}

func (c *chart) x(sec float64) float64  { return padLeft + sec/c.end*c.plotW }
func (c *chart) yLag(v float64) float64 { return padTop + c.plotH - v/c.lagTop*c.plotH }
func (c *chart) yRep(v float64) float64 { return padTop + c.plotH - v/c.repTop*c.plotH }

func (c *chart) header() {
	b := &c.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<title>cosmoslag demo: change feed lag and replicas over time</title>`+"\n")
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padLeft,
		html.EscapeString(fmt.Sprintf("Change feed lag and replicas — %d partitions, threshold %d, seed %d", c.o.sim.Partitions, c.o.threshold, c.o.sim.Seed)))
}

// axes draws the grid, the left axis (lag) and the right axis (replicas),
// which share the gridlines, and the time axis.
func (c *chart) axes() {
	b := &c.b
	for i := 0; i <= gridLines; i++ {
		v := c.lagTop * float64(i) / gridLines
		y := c.yLag(v)
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", padLeft, y, chartW-padRight, y)
		fmt.Fprintf(b, `<text class="lag-tick" x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s</text>`+"\n", padLeft-6, y+4, trimFloat(v))
		r := c.repTop * float64(i) / gridLines
		ry := c.yRep(r)
		fmt.Fprintf(b, `<line class="replica-tick" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2ca02c"/>`+"\n", chartW-padRight, ry, chartW-padRight+4, ry)
		fmt.Fprintf(b, `<text class="replica-tick-label" x="%d" y="%.1f" fill="#2ca02c">%s</text>`+"\n", chartW-padRight+6, ry+4, trimFloat(r))
	}
	tstep := niceCeil(c.end / 8)
	for t := 0.0; t <= c.end+1e-9; t += tstep {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%ss</text>`+"\n", c.x(t), chartH-padBottom+18, trimFloat(t))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555"/>`+"\n", padLeft, chartH-padBottom, chartW-padRight, chartH-padBottom)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">time (simulated)</text>`+"\n", padLeft+int(c.plotW/2), chartH-12)
	fmt.Fprintf(b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="#1f77b4">change feed lag (transactions)</text>`+"\n", padTop+int(c.plotH/2))
	fmt.Fprintf(b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="#2ca02c">replicas</text>`+"\n", chartW-20, padTop+int(c.plotH/2))
}

// eventMarkers draws the split and merge markers, at the first poll whose
// events mention each, and returns their vertical lines (which labels
// avoid too).
func (c *chart) eventMarkers() (markers [][]point) {
	for _, m := range []struct{ id, prefix string }{{"split", "split: "}, {"merge", "merge: "}} {
		for _, p := range c.polls {
			if hasEvent(p, m.prefix) {
				sx := c.x(p.At.Seconds())
				fmt.Fprintf(&c.b, `<line id="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 4"/>`+"\n", m.id, sx, padTop, sx, chartH-padBottom)
				fmt.Fprintf(&c.b, `<text id="%s-label" x="%.1f" y="%d" fill="#777">%s</text>`+"\n", m.id, sx+4, padTop+12, m.id)
				markers = append(markers, []point{{sx, padTop}, {sx, chartH - padBottom}})
				c.placed = append(c.placed, labelBox(m.id, point{sx + 4, padTop + 12}))
				break
			}
		}
	}
	return markers
}

// cooldownBands draws the cooldown: KEDA counts the cooldown period from
// the last poll at which the trigger was active, so the band runs from
// that poll to the one where KEDA scaled to zero.
func (c *chart) cooldownBands() {
	polls := c.polls
	for i := 1; i < len(polls); i++ {
		if polls[i].Active || !polls[i-1].Active || polls[i].Replicas == 0 {
			continue
		}
		for j := i + 1; j < len(polls) && !polls[j].Active; j++ {
			if polls[j].Replicas == 0 {
				x0, x1 := c.x(polls[i-1].At.Seconds()), c.x(polls[j].At.Seconds())
				fmt.Fprintf(&c.b, `<rect class="cooldown" x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#9467bd" fill-opacity="0.12"/>`+"\n", x0, padTop, x1-x0, c.plotH)
				fmt.Fprintf(&c.b, `<text class="cooldown-label" x="%.1f" y="%d" text-anchor="middle" fill="#9467bd">cooldown</text>`+"\n", (x0+x1)/2, padTop+26)
				c.placed = append(c.placed, labelBox("cooldown", point{(x0+x1)/2 - textWidth("cooldown")/2, padTop + 26}))
				break
			}
		}
	}
}

// drawSeries draws the lag, the metric and the replicas and returns their
// points.
func (c *chart) drawSeries() [][]point {
	var lag, metric, replicas []string
	var lagPts, metricPts, repPts []point
	for i, p := range c.polls {
		t := p.At.Seconds()
		lagPts = append(lagPts, point{c.x(t), c.yLag(float64(p.TotalLag))})
		metricPts = append(metricPts, point{c.x(t), c.yLag(float64(p.Metric))})
		lag = append(lag, fmt.Sprintf("%.1f,%.1f", c.x(t), c.yLag(float64(p.TotalLag))))
		metric = append(metric, fmt.Sprintf("%.1f,%.1f", c.x(t), c.yLag(float64(p.Metric))))
		if i == 0 {
			replicas = append(replicas, fmt.Sprintf("M%.1f,%.1f", c.x(t), c.yRep(float64(p.Replicas))))
		} else {
			repPts = append(repPts, point{c.x(t), repPts[len(repPts)-1].y})
			replicas = append(replicas, fmt.Sprintf("H%.1f V%.1f", c.x(t), c.yRep(float64(p.Replicas))))
		}
		repPts = append(repPts, point{c.x(t), c.yRep(float64(p.Replicas))})
	}
	fmt.Fprintf(&c.b, `<polyline id="lag" fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", strings.Join(lag, " "))
	fmt.Fprintf(&c.b, `<polyline id="metric" fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 3" points="%s"/>`+"\n", strings.Join(metric, " "))
	fmt.Fprintf(&c.b, `<path id="replicas" fill="none" stroke="#2ca02c" stroke-width="2.5" d="%s"/>`+"\n", strings.Join(replicas, " "))
	return [][]point{lagPts, metricPts, repPts}
}

// label draws text at the first of the places at where no series and no
// other label crosses it (labels stay off the time axis).
func (c *chart) label(id, class, color, text string, at []point) box {
	plot := box{padLeft, padTop, chartW - padRight, chartH - padBottom - 2}
	lb := placeLabel(text, at, c.series, c.placed, plot)
	c.placed = append(c.placed, lb)
	attrs := ""
	if id != "" {
		attrs += fmt.Sprintf(` id="%s"`, id)
	}
	if class != "" {
		attrs += fmt.Sprintf(` class="%s"`, class)
	}
	fmt.Fprintf(&c.b, `<text%s x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", attrs, lb.x0, lb.y1-labelDescent, color, html.EscapeString(text))
	return lb
}

// maxReplicaCount draws maxReplicaCount on the replica axis, or names it
// at its top.
func (c *chart) maxReplicaCount() {
	if c.o.maxReplicas <= 0 {
		return
	}
	text := fmt.Sprintf("maxReplicaCount %d", c.o.maxReplicas)
	if !c.maxOnAxis {
		fmt.Fprintf(&c.b, `<text id="max-replicas-label" x="%d" y="%d" text-anchor="end" fill="#2ca02c">%s (above the axis)</text>`+"\n", chartW-padRight, padTop-4, text)
		return
	}
	my := c.yRep(float64(c.o.maxReplicas))
	fmt.Fprintf(&c.b, `<line id="max-replicas" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2ca02c" stroke-dasharray="8 4"/>`+"\n", padLeft, my, chartW-padRight, my)
	right := float64(chartW-padRight) - 4 - textWidth(text)
	c.label("max-replicas-label", "", "#2ca02c", text, []point{{right, my - 4}, {right, my + 15}, {padLeft + 4, my - 4}, {padLeft + 4, my + 15}})
}

// activation draws the activation threshold: above it, KEDA activates
// from 0. A line on the lag axis where that is clear of the time axis; at
// or near 0 it would lie on the time axis, so there each poll at which
// KEDA activated is labelled with the lag that crossed the threshold.
func (c *chart) activation() {
	ay := c.yLag(float64(c.o.activation))
	lineVisible := ay <= float64(chartH-padBottom)-8
	if lineVisible {
		fmt.Fprintf(&c.b, `<line id="activation" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="2 3"/>`+"\n", padLeft, ay, chartW-padRight, ay)
		text := fmt.Sprintf("activation %d", c.o.activation)
		var at []point
		for lx := float64(padLeft + 4); lx+textWidth(text) < float64(chartW-padRight); lx += 8 {
			at = append(at, point{lx, ay - 4}, point{lx, ay + 15})
		}
		c.label("activation-label", "", "#d62728", text, at)
	}
	polls := c.polls
	for i := 1; i < len(polls); i++ {
		if polls[i-1].Replicas != 0 || polls[i].Replicas == 0 {
			continue
		}
		px, py := c.x(polls[i].At.Seconds()), c.yLag(float64(polls[i].TotalLag))
		fmt.Fprintf(&c.b, `<circle class="activation-marker" cx="%.1f" cy="%.1f" r="4.5" fill="none" stroke="#d62728" stroke-width="1.5"/>`+"\n", px, py)
		if !lineVisible {
			text := fmt.Sprintf("KEDA activates: lag %d > activation %d", polls[i].TotalLag, c.o.activation)
			lb := c.label("", "activation-label", "#d62728", text, around(px, py, textWidth(text)))
			leader(&c.b, px, py, lb, "#d62728")
		}
	}
}

// peaks marks the first poll reaching the highest lag and the first
// reaching the most replicas.
func (c *chart) peaks() {
	peakLag, peakRep := c.polls[0], c.polls[0]
	for _, p := range c.polls {
		if p.TotalLag > peakLag.TotalLag {
			peakLag = p
		}
		if p.Replicas > peakRep.Replicas {
			peakRep = p
		}
	}
	px, py := c.x(peakLag.At.Seconds()), c.yLag(float64(peakLag.TotalLag))
	fmt.Fprintf(&c.b, `<circle id="peak-lag" cx="%.1f" cy="%.1f" r="3.5" fill="#1f77b4"/>`+"\n", px, py)
	text := fmt.Sprintf("peak lag %d at %ss", peakLag.TotalLag, trimFloat(peakLag.At.Seconds()))
	leader(&c.b, px, py, c.label("peak-lag-label", "", "#1f77b4", text, around(px, py, textWidth(text))), "#1f77b4")
	rx, ry := c.x(peakRep.At.Seconds()), c.yRep(float64(peakRep.Replicas))
	fmt.Fprintf(&c.b, `<circle id="peak-replicas" cx="%.1f" cy="%.1f" r="3.5" fill="#2ca02c"/>`+"\n", rx, ry)
	text = fmt.Sprintf("peak %d replicas", peakRep.Replicas)
	leader(&c.b, rx, ry, c.label("peak-replicas-label", "", "#2ca02c", text, around(rx, ry, textWidth(text))), "#2ca02c")
}

func (c *chart) legend() {
	legend := []struct{ color, dash, label string }{
		{"#1f77b4", "", "total lag"},
		{"#ff7f0e", "6 3", "metric = min(lag, active partitions × threshold)"},
		{"#2ca02c", "", "replicas (KEDA + HPA model)"},
	}
	lx := float64(padLeft)
	for _, l := range legend {
		fmt.Fprintf(&c.b, `<line x1="%.0f" y1="40" x2="%.0f" y2="40" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", lx, lx+22, l.color, l.dash)
		fmt.Fprintf(&c.b, `<text x="%.0f" y="44">%s</text>`+"\n", lx+27, html.EscapeString(l.label))
		lx += 27 + float64(len(l.label))*6.2 + 20
	}
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

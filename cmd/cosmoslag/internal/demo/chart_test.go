package demo

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgElement is one element of a rendered chart: its name, attributes and text.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

func parseSVG(t *testing.T, svg []byte) []*svgElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var all, open []*svgElement
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			all, open = append(all, e), append(open, e)
		case xml.CharData:
			if len(open) > 0 {
				open[len(open)-1].text += string(tok)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
}

func (e *svgElement) num(t *testing.T, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[attr], 64)
	if err != nil {
		t.Fatalf("<%s %v>: attribute %s: %v", e.name, e.attrs, attr, err)
	}
	return v
}

func byAttr(elems []*svgElement, attr, value string) []*svgElement {
	var out []*svgElement
	for _, e := range elems {
		if e.attrs[attr] == value {
			out = append(out, e)
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.15 }

// lagToY maps a lag value to its y from the chart's own lag axis labels.
func lagToY(t *testing.T, elems []*svgElement) func(float64) float64 {
	t.Helper()
	ticks := byAttr(elems, "class", "lag-tick")
	if len(ticks) < 2 {
		t.Fatalf("lag axis has %d tick labels", len(ticks))
	}
	lo, hi := ticks[0], ticks[len(ticks)-1]
	v0, _ := strconv.ParseFloat(lo.text, 64)
	v1, _ := strconv.ParseFloat(hi.text, 64)
	y0, y1 := lo.num(t, "y")-4, hi.num(t, "y")-4 // labels sit 4px below their gridline
	return func(v float64) float64 { return y0 + (v-v0)/(v1-v0)*(y1-y0) }
}

func TestChartAxesPeaksActivation(t *testing.T) {
	var o demoOptions
	fs, _ := demoFlags(&o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse([]string{"--duration", "3s", "--interval", "200ms", "--threshold", "20", "--activation", "7"}); err != nil && !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	polls, err := demo(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, renderChart(polls, o))

	grid := byAttr(elems, "class", "grid")
	ticks := byAttr(elems, "class", "replica-tick")
	labels := byAttr(elems, "class", "replica-tick-label")
	if len(grid) < 2 || len(ticks) != len(grid) || len(labels) != len(grid) {
		t.Fatalf("%d gridlines, %d replica ticks, %d replica labels: want one tick per gridline", len(grid), len(ticks), len(labels))
	}
	for i := range grid {
		if gy, ty := grid[i].num(t, "y1"), ticks[i].num(t, "y1"); !near(gy, ty) {
			t.Errorf("replica tick %d at y=%.1f, gridline at y=%.1f", i, ty, gy)
		}
		if _, err := strconv.Atoi(labels[i].text); err != nil {
			t.Errorf("replica tick label %q is not a whole number of replicas", labels[i].text)
		}
	}

	var peakLag int64
	var peakReplicas int32
	for _, p := range polls {
		peakLag, peakReplicas = max(peakLag, p.TotalLag), max(peakReplicas, p.Replicas)
	}
	if peakLag == 0 || peakReplicas == 0 {
		t.Fatalf("the simulation never lagged (peak lag %d, replicas %d)", peakLag, peakReplicas)
	}
	y := lagToY(t, elems)
	if l := byAttr(elems, "id", "peak-lag-label"); len(l) != 1 || !strings.Contains(l[0].text, fmt.Sprintf("peak lag %d ", peakLag)) {
		t.Errorf("peak lag label: want one carrying %d, got %v", peakLag, l)
	}
	if c := byAttr(elems, "id", "peak-lag"); len(c) != 1 || !near(c[0].num(t, "cy"), y(float64(peakLag))) {
		t.Errorf("peak lag marker not at the lag %d on the lag axis: %v", peakLag, c)
	}
	if l := byAttr(elems, "id", "peak-replicas-label"); len(l) != 1 || !strings.Contains(l[0].text, fmt.Sprintf("peak %d replicas", peakReplicas)) {
		t.Errorf("peak replicas label: want one carrying %d, got %v", peakReplicas, l)
	}

	line := byAttr(elems, "id", "activation")
	if len(line) != 1 || line[0].attrs["stroke-dasharray"] == "" {
		t.Fatalf("want one dashed activation line, got %v", line)
	}
	if ay := line[0].num(t, "y1"); !near(ay, y(7)) || !near(ay, line[0].num(t, "y2")) {
		t.Errorf("activation line at y=%.1f, want the lag axis' 7 at y=%.1f", ay, y(7))
	}
	if l := byAttr(elems, "id", "activation-label"); len(l) != 1 || !strings.Contains(l[0].text, "activation 7") {
		t.Errorf("activation line not labelled with its value: %v", l)
	}
}

// KEDA counts the cooldown period from the last poll at which the trigger
// was active: the band runs from that poll to the one where KEDA scaled to
// zero.
func TestChartCooldown(t *testing.T) {
	poll := func(sec int, lag int64, replicas int32) demoPoll {
		return demoPoll{At: time.Duration(sec) * time.Second, TotalLag: lag, Metric: lag, Active: lag > 0, Replicas: replicas}
	}
	polls := []demoPoll{poll(0, 0, 0), poll(2, 50, 1), poll(4, 120, 2), poll(6, 30, 1), poll(8, 0, 1), poll(10, 0, 1), poll(11, 0, 0), poll(16, 0, 0)}
	elems := parseSVG(t, renderChart(polls, demoOptions{threshold: 100, Cooldown: 3 * time.Second}))

	// Map seconds to x from the chart's own time axis: the polyline's first
	// and last points are the first and last polls.
	lag := byAttr(elems, "id", "lag")
	if len(lag) != 1 {
		t.Fatal("no lag series")
	}
	pts := strings.Fields(lag[0].attrs["points"])
	xOf := func(pt string) float64 { v, _ := strconv.ParseFloat(strings.Split(pt, ",")[0], 64); return v }
	x0, x1 := xOf(pts[0]), xOf(pts[len(pts)-1])
	x := func(sec float64) float64 { return x0 + sec/16*(x1-x0) }

	band := byAttr(elems, "class", "cooldown")
	if len(band) != 1 {
		t.Fatalf("want one cooldown band, got %d", len(band))
	}
	if bx, bw := band[0].num(t, "x"), band[0].num(t, "width"); !near(bx, x(6)) || !near(bx+bw, x(11)) {
		t.Errorf("cooldown band spans x %.1f–%.1f, want %.1f (last active at 6s) – %.1f (0 replicas at 11s)", bx, bx+bw, x(6), x(11))
	}
	if l := byAttr(elems, "class", "cooldown-label"); len(l) != 1 || l[0].text != "cooldown" {
		t.Errorf("cooldown band not labelled: %v", l)
	}
}

// labelBoxOf is the extent of a rendered label, estimated as generously as
// the chart estimates it.
func labelBoxOf(t *testing.T, e *svgElement) box {
	t.Helper()
	return labelBox(e.text, point{e.num(t, "x"), e.num(t, "y")})
}

// seriesPoints reads a polyline's points.
func seriesPoints(t *testing.T, elems []*svgElement, id string) []point {
	t.Helper()
	lines := byAttr(elems, "id", id)
	if len(lines) != 1 {
		t.Fatalf("want one %s series, got %d", id, len(lines))
	}
	var pts []point
	for _, f := range strings.Fields(lines[0].attrs["points"]) {
		xs, ys, _ := strings.Cut(f, ",")
		x, _ := strconv.ParseFloat(xs, 64)
		y, _ := strconv.ParseFloat(ys, 64)
		pts = append(pts, point{x, y})
	}
	return pts
}

// The activation threshold is drawn where it can be seen and its label is
// not crossed by the lag or the metric: at 0 it would lie on the time axis,
// so the poll where KEDA activated is labelled instead, above the axis;
// above 0 the line is drawn, its label clear of both series.
func TestChartActivationIsVisibleAndClear(t *testing.T) {
	poll := func(sec int, lag int64, replicas int32) demoPoll {
		return demoPoll{At: time.Duration(sec) * time.Second, TotalLag: lag, Metric: lag, Active: lag > 0, Replicas: replicas}
	}
	// The lag rises right through where a label at the left end of the
	// line would sit.
	polls := []demoPoll{poll(0, 0, 0), poll(1, 80, 1), poll(2, 150, 2), poll(3, 300, 3), poll(4, 600, 6), poll(5, 400, 6),
		poll(6, 300, 5), poll(7, 200, 4), poll(8, 100, 2), poll(9, 30, 1), poll(10, 0, 1), poll(12, 0, 0)}
	for _, activation := range []int64{0, 40} {
		elems := parseSVG(t, renderChart(polls, demoOptions{threshold: 100, activation: activation, maxReplicas: 10, Cooldown: 2 * time.Second}))
		y := lagToY(t, elems)
		axis := y(0)
		var labels []*svgElement
		if activation == 0 {
			if line := byAttr(elems, "id", "activation"); len(line) != 0 {
				t.Errorf("activation 0: a line drawn on the time axis: %v", line[0].attrs)
			}
			labels = byAttr(elems, "class", "activation-label")
			if len(labels) != 1 || !strings.Contains(labels[0].text, "lag 80 > activation 0") {
				t.Fatalf("activation 0: want the activating poll labelled with its lag, got %v", labels)
			}
			if m := byAttr(elems, "class", "activation-marker"); len(m) != 1 || !near(m[0].num(t, "cy"), y(80)) {
				t.Errorf("activation 0: no marker at the activating poll's lag: %v", m)
			}
		} else {
			line := byAttr(elems, "id", "activation")
			if len(line) != 1 || !near(line[0].num(t, "y1"), y(float64(activation))) {
				t.Fatalf("activation %d: want a line at its value, got %v", activation, line)
			}
			labels = byAttr(elems, "id", "activation-label")
			if len(labels) != 1 || labels[0].text != fmt.Sprintf("activation %d", activation) {
				t.Fatalf("activation %d: label %v", activation, labels)
			}
		}
		lb := labelBoxOf(t, labels[0])
		if lb.y1 >= axis-1 {
			t.Errorf("activation %d: label %q at y %.1f–%.1f is on the time axis (y %.1f)", activation, labels[0].text, lb.y0, lb.y1, axis)
		}
		for _, id := range []string{"lag", "metric"} {
			pts := seriesPoints(t, elems, id)
			for i := 1; i < len(pts); i++ {
				if segmentCrosses(lb, pts[i-1], pts[i]) {
					t.Errorf("activation %d: the %s line crosses the label %q", activation, id, labels[0].text)
				}
			}
		}
	}
}

// --max-replicas is drawn on the replica axis when it is near the peak,
// and named above the axis when it is far above it.
func TestChartDrawsMaxReplicas(t *testing.T) {
	poll := func(sec int, lag int64, replicas int32) demoPoll {
		return demoPoll{At: time.Duration(sec) * time.Second, TotalLag: lag, Metric: lag, Active: lag > 0, Replicas: replicas}
	}
	polls := []demoPoll{poll(0, 0, 0), poll(1, 100, 1), poll(2, 500, 5), poll(3, 300, 5), poll(4, 0, 0)}
	elems := parseSVG(t, renderChart(polls, demoOptions{threshold: 100, maxReplicas: 10}))
	ticks := byAttr(elems, "class", "replica-tick-label")
	lo, hi := ticks[0], ticks[len(ticks)-1]
	v0, _ := strconv.ParseFloat(lo.text, 64)
	v1, _ := strconv.ParseFloat(hi.text, 64)
	y0, y1 := lo.num(t, "y")-4, hi.num(t, "y")-4
	yRep := func(v float64) float64 { return y0 + (v-v0)/(v1-v0)*(y1-y0) }
	line := byAttr(elems, "id", "max-replicas")
	if v1 < 10 || len(line) != 1 || !near(line[0].num(t, "y1"), yRep(10)) || line[0].attrs["stroke-dasharray"] == "" {
		t.Errorf("want a dashed maxReplicaCount line at 10 on a replica axis reaching %g, got %v", v1, line)
	}
	if l := byAttr(elems, "id", "max-replicas-label"); len(l) != 1 || l[0].text != "maxReplicaCount 10" {
		t.Errorf("max replicas label: %v", l)
	}

	elems = parseSVG(t, renderChart(polls, demoOptions{threshold: 100, maxReplicas: 1000}))
	if line := byAttr(elems, "id", "max-replicas"); len(line) != 0 {
		t.Errorf("maxReplicaCount 1000 drawn on an axis for 5 replicas: %v", line[0].attrs)
	}
	if l := byAttr(elems, "id", "max-replicas-label"); len(l) != 1 || !strings.Contains(l[0].text, "maxReplicaCount 1000 (above the axis)") {
		t.Errorf("max replicas 1000 not named: %v", l)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// replot is `fleet plot -in results.jsonl [-plot out.svg]`: the tables and
// the plot again from saved results.
func replot(args []string) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	in := fs.String("in", "", "JSON lines written by run -out")
	plot := fs.String("plot", "", "SVG to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	var results []clientResult
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r clientResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		results = append(results, r)
	}
	fmt.Print(markdown(results))
	if *plot != "" {
		return os.WriteFile(*plot, []byte(svgPlot(results)), 0o644)
	}
	return nil
}

type groupKey struct {
	N, L        int
	Shape, Impl string
	Auth        string
}

type group struct {
	key  groupKey
	runs []clientResult
}

// groups returns the results by size, shape and implementation, in order
// of N, L, shape, then ours before v2.21.0.
func groups(results []clientResult) []group {
	m := map[groupKey]*group{}
	for _, r := range results {
		k := groupKey{r.N, r.Leases, r.Shape, r.Impl, r.Auth}
		if m[k] == nil {
			m[k] = &group{key: k}
		}
		m[k].runs = append(m[k].runs, r)
	}
	var out []group
	for _, g := range m {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].key, out[j].key
		if a.Auth != b.Auth {
			return a.Auth < b.Auth
		}
		if a.L != b.L {
			return a.L < b.L
		}
		if a.N != b.N {
			return a.N < b.N
		}
		if a.Shape != b.Shape {
			return a.Shape > b.Shape // steady first
		}
		return a.Impl > b.Impl // ours first
	})
	return out
}

// med is the median over the group's runs of f.
func (g group) med(f func(clientResult) float64) float64 {
	xs := make([]float64, len(g.runs))
	for i, r := range g.runs {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// sum is the sum over the group's runs of f.
func (g group) sum(f func(clientResult) int) int {
	n := 0
	for _, r := range g.runs {
		n += f(r)
	}
	return n
}

func (g group) loads() string {
	var ls []string
	for _, r := range g.runs {
		ls = append(ls, strings.Fields(r.LoadAvg + " ?")[0])
	}
	return strings.Join(ls, ", ")
}

func markdown(results []clientResult) string {
	var b strings.Builder
	gs := groups(results)
	if len(gs) == 0 {
		return "no results\n"
	}
	r0 := gs[0].runs[0]
	fmt.Fprintf(&b, "pollingInterval %v, HPA period %v, window %v; medians of the runs (count in the runs column); failed polls summed over the runs.\n\n",
		r0.PollingInterval, r0.HPAPeriod, r0.Window)
	fmt.Fprintf(&b, "| N × L | auth | shape | implementation | runs | polls (of due) | failed | p50 ms | p99 ms | peak connections | peak in flight | requests/poll | client CPU ms/poll | account CPU ms/poll | 429s | load (1 min) |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, g := range gs {
		k := g.key
		fmt.Fprintf(&b, "| %d × %d | %s | %s | %s | %d | %.0f (%.0f) | %d | %.1f | %.1f | %.0f | %.0f | %.1f | %.2f | %.2f | %.0f | %s |\n",
			k.N, k.L, k.Auth, k.Shape, k.Impl, len(g.runs),
			g.med(func(r clientResult) float64 { return float64(r.Polls) }),
			g.med(func(r clientResult) float64 { return float64(r.OfferedPolls) }),
			g.sum(func(r clientResult) int { return r.Failed }),
			g.med(func(r clientResult) float64 { return r.P50 }),
			g.med(func(r clientResult) float64 { return r.P99 }),
			g.med(func(r clientResult) float64 { return float64(r.ConnsPeak) }),
			g.med(func(r clientResult) float64 { return float64(r.InFlightPeak) }),
			g.med(func(r clientResult) float64 { return float64(r.Requests) / math.Max(1, float64(r.Polls)) }),
			g.med(func(r clientResult) float64 { return r.CPUPerPollMs }),
			g.med(func(r clientResult) float64 { return r.ServerCPUPerPoll }),
			g.med(func(r clientResult) float64 { return float64(r.Throttled) }),
			g.loads())
	}
	shapeTable(&b, gs, "restart", "\nThe restart burst: every operator loop's first poll at once (cold scalers).",
		[]string{"burst polls", "failed", "p50 ms", "p99 ms", "last poll returned after s"}, func(g group) []string {
			return []string{
				fmt.Sprintf("%.0f", g.med(func(r clientResult) float64 { return float64(r.BurstPolls) })),
				fmt.Sprint(g.sum(func(r clientResult) int { return r.BurstFailed })),
				fmt.Sprintf("%.1f", g.med(func(r clientResult) float64 { return r.BurstP50 })),
				fmt.Sprintf("%.1f", g.med(func(r clientResult) float64 { return r.BurstP99 })),
				fmt.Sprintf("%.2f", g.med(func(r clientResult) float64 { return r.BurstSecs })),
			}
		})
	kib := func(f func(clientResult) float64) func(group) string {
		return func(g group) string {
			return fmt.Sprintf("%.1f", g.med(func(r clientResult) float64 { return f(r) / 1024 }))
		}
	}
	per := func(f func(clientResult) float64) func(group) string {
		return func(g group) string { return fmt.Sprintf("%.2f", g.med(f)) }
	}
	memory := []func(group) string{
		kib(func(r clientResult) float64 { return r.HeapPerSOBuilt }),
		kib(func(r clientResult) float64 { return r.HeapPerSOIdle }),
		kib(func(r clientResult) float64 { return r.HeapPerSONoConns }),
		kib(func(r clientResult) float64 { return r.HeapPerSOPolling }),
		per(func(r clientResult) float64 { return r.GoroutinesPerSOIdle }),
		per(func(r clientResult) float64 { return r.GoroutinesPerSONoConns }),
		per(func(r clientResult) float64 { return r.GoroutinesPerSOPoll }),
	}
	shapeTable(&b, gs, "steady", "\nMemory per ScaledObject (the fleet process, above its baseline before any scaler was built; steady shape).",
		[]string{"heap built KiB", "heap idle KiB", "heap idle, connections closed, KiB", "heap polling KiB", "goroutines idle", "goroutines idle, connections closed", "goroutines polling"},
		func(g group) []string {
			var cells []string
			for _, cell := range memory {
				cells = append(cells, cell(g))
			}
			return cells
		})
	var tokens, checks strings.Builder
	for _, g := range gs {
		for _, r := range g.runs {
			if len(r.TokenRequests) > 0 {
				var ids []string
				for id, n := range r.TokenRequests {
					ids = append(ids, fmt.Sprintf("%s: %d", id, n))
				}
				slices.Sort(ids)
				fmt.Fprintf(&tokens, "| %d × %d | %s | %s | %s | %d |\n", r.N, r.Leases, r.Shape, r.Impl, strings.Join(ids, ", "), r.Polls)
			}
			if r.WrongMetric > 0 || r.UnroutedConns != 0 || len(r.Errors) > 0 {
				fmt.Fprintf(&checks, "- %d × %d %s %s: %d polls with a metric other than %d (last %d), %d connections to the account's own listener; errors: %s\n",
					r.N, r.Leases, r.Shape, r.Impl, r.WrongMetric, r.Leases*3, r.Metric, r.UnroutedConns, strings.Join(r.Errors, " | "))
			}
		}
	}
	if tokens.Len() > 0 {
		fmt.Fprintf(&b, "\nToken requests per identity in the run (the account process's issuer counts every grant), from the scalers' construction to the window's end.\n\n| N × L | shape | implementation | grants by client id | polls in window |\n| --- | --- | --- | --- | --- |\n%s", tokens.String())
	}
	if checks.Len() > 0 {
		fmt.Fprintf(&b, "\nChecks that did not hold:\n\n%s", checks.String())
	}
	return b.String()
}

// shapeTable writes, under title, a table of the groups of one shape: N × L,
// auth and implementation, then columns, each group's cells.
func shapeTable(b *strings.Builder, gs []group, shape, title string, columns []string, cells func(group) []string) {
	fmt.Fprintf(b, "%s\n\n| N × L | auth | implementation | %s |\n|%s\n", title, strings.Join(columns, " | "), strings.Repeat(" --- |", len(columns)+3))
	for _, g := range gs {
		if g.key.Shape == shape {
			fmt.Fprintf(b, "| %d × %d | %s | %s | %s |\n", g.key.N, g.key.L, g.key.Auth, g.key.Impl, strings.Join(cells(g), " | "))
		}
	}
}

// svgPlot draws, for L = 100, p99 poll latency (left) and peak
// connections (right) against N, log-log, one line per implementation
// and shape (for restart, the burst's p99).
func svgPlot(results []clientResult) string {
	type series struct {
		name, color, dash string
		impl, shape       string
		y                 func(g group) float64
	}
	p99 := func(g group) float64 {
		if g.key.Shape == "restart" {
			return g.med(func(r clientResult) float64 { return r.BurstP99 })
		}
		return g.med(func(r clientResult) float64 { return r.P99 })
	}
	conns := func(g group) float64 { return g.med(func(r clientResult) float64 { return float64(r.ConnsPeak) }) }
	gs := groups(results)
	// One colour per implementation, in the tables' order (ours and
	// v2.21.0 keep theirs); steady solid, restart dashed.
	var impls []string
	for _, g := range gs {
		if !slices.Contains(impls, g.key.Impl) {
			impls = append(impls, g.key.Impl)
		}
	}
	palette := []string{"#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	lines := func(y func(group) float64) []series {
		var ss []series
		for i, impl := range impls {
			name, color := impl, palette[i%len(palette)]
			switch impl {
			case "ours":
				color = "#1f77b4"
			case "keda-v2.21.0":
				name, color = "v2.21.0", "#d62728"
			}
			ss = append(ss, series{name + ", steady", color, "", impl, "steady", y}, series{name + ", restart", color, "6,4", impl, "restart", y})
		}
		return ss
	}
	var b strings.Builder
	// Room below the plots for the legend: a row of two entries per
	// implementation (steady and restart).
	const w = 980
	h := 404 + 16*len(impls)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	panel := func(x0 int, title, unit string, ss []series) {
		const pw, ph, left, top = 380, 300, 60, 40
		type pt struct{ x, y float64 }
		pts := map[string][]pt{}
		minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, s := range ss {
			for _, g := range gs {
				if g.key.L != 100 || g.key.Impl != s.impl || g.key.Shape != s.shape || g.key.Auth != "key" {
					continue
				}
				y := s.y(g)
				if y <= 0 {
					continue
				}
				pts[s.name] = append(pts[s.name], pt{float64(g.key.N), y})
				minX, maxX = math.Min(minX, float64(g.key.N)), math.Max(maxX, float64(g.key.N))
				minY, maxY = math.Min(minY, y), math.Max(maxY, y)
			}
		}
		if math.IsInf(minX, 0) {
			return
		}
		lx0, lx1 := math.Floor(math.Log10(minX)), math.Ceil(math.Log10(maxX))
		ly0, ly1 := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
		if lx1 == lx0 {
			lx1++
		}
		if ly1 == ly0 {
			ly1++
		}
		px := func(x float64) float64 { return float64(x0+left) + (math.Log10(x)-lx0)/(lx1-lx0)*pw }
		py := func(y float64) float64 { return float64(top+ph) - (math.Log10(y)-ly0)/(ly1-ly0)*ph }
		fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", x0+left, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0+left, top, pw, ph)
		for e := lx0; e <= lx1; e++ {
			x := px(math.Pow(10, e))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x, top, x, top+ph, x, top+ph+16, math.Pow(10, e))
		}
		for e := ly0; e <= ly1; e++ {
			y := py(math.Pow(10, e))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", x0+left, y, x0+left+pw, y, x0+left-6, y+4, math.Pow(10, e))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">ScaledObjects (N), 100 leases each</text>`+"\n", x0+left+pw/2, top+ph+34)
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+16, top+ph/2, unit)
		for i, s := range ss {
			p := pts[s.name]
			sort.Slice(p, func(i, j int) bool { return p[i].x < p[j].x })
			var d []string
			for _, q := range p {
				d = append(d, fmt.Sprintf("%.1f,%.1f", px(q.x), py(q.y)))
			}
			if len(d) > 0 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", strings.Join(d, " "), s.color, s.dash)
				for _, q := range p {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(q.x), py(q.y), s.color)
				}
			}
			ly := top + ph + 52 + (i/2)*16
			lx := x0 + left + (i%2)*190
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly-4, lx+28, ly-4, s.color, s.dash, lx+34, ly, s.name)
		}
	}
	panel(0, "p99 poll latency (restart: the burst)", "ms", lines(p99))
	panel(490, "peak connections to the account", "connections", lines(conns))
	b.WriteString("</svg>\n")
	return b.String()
}

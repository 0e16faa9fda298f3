package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// parityPoint is one run the calibrated simulator predicted and the
// engine measured.
type parityPoint struct {
	Measured, Predicted float64
	Kind                int // index into parityKinds
	Title               string
}

// parityKinds are the kinds of points of a fidelity parity chart.
var parityKinds = []string{"probe (fitted)", "held-back probe", "verified point"}

// parityChart draws predicted against measured values of one metric: the
// diagonal is a perfect prediction, the dashed lines ±25 %. Every point
// has its run in its hover text. It returns "" when no point has both
// values.
func parityChart(title, unit string, pts []parityPoint) template.HTML {
	lo, hi := math.Inf(1), math.Inf(-1)
	n := 0
	for _, p := range pts {
		if p.Measured > 0 && p.Predicted > 0 && finite(p.Measured) && finite(p.Predicted) {
			lo = math.Min(lo, math.Min(p.Measured, p.Predicted))
			hi = math.Max(hi, math.Max(p.Measured, p.Predicted))
			n++
		}
	}
	if n == 0 {
		return ""
	}
	lo, hi = math.Max(0, lo*0.8), hi*1.1
	plotBottom := float64(chartHeight - marginBottom)
	// a square plot: the same scale on both axes
	side := plotBottom - marginTop
	xa := newAxis(lo, hi, 5, marginLeft, marginLeft+side)
	ya := newAxis(lo, hi, 5, plotBottom, marginTop)
	var b strings.Builder
	used := map[int]bool{}
	for _, p := range pts {
		used[p.Kind] = true
	}
	var names, colors []string
	for k, name := range parityKinds {
		if used[k] {
			names, colors = append(names, name), append(colors, color(k))
		}
	}
	svgOpen(&b, title, chartHeight+int(legendHeight(names)))
	for _, t := range ya.ticks {
		y := ya.pos(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%s" y2="%s"/>`, marginLeft, f(y), f(marginLeft+side), f(y))
		fmt.Fprintf(&b, `<text class="yt" x="%d" y="%s">%s</text>`, marginLeft-6, f(y+4), esc(formatTick(t, ya.decimals)))
	}
	for _, t := range xa.ticks {
		x := xa.pos(t)
		fmt.Fprintf(&b, `<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f(x), f(plotBottom), f(x), f(plotBottom+4))
		fmt.Fprintf(&b, `<text class="xt" x="%s" y="%s">%s</text>`, f(x), f(plotBottom+16), esc(formatTick(t, xa.decimals)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%s" x2="%s" y2="%s"/>`, marginLeft, f(plotBottom), f(marginLeft+side), f(plotBottom))
	fmt.Fprintf(&b, `<text class="xl" x="%s" y="%s">%s</text>`, f(marginLeft+side/2), f(plotBottom+34), esc("measured live ("+unit+")"))
	fmt.Fprintf(&b, `<text class="yl" transform="translate(14 %s) rotate(-90)">%s</text>`, f((plotBottom+marginTop)/2), esc("predicted ("+unit+")"))
	// y = k·x from the axis' low end to its high end, clipped to the plot
	diag := func(k float64, dash, label string) {
		x0, x1 := xa.lo, xa.hi
		if k > 1 {
			x1 = ya.hi / k
		} else {
			x0 = math.Max(xa.lo, ya.lo/k)
		}
		fmt.Fprintf(&b, `<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#777"%s><title>%s</title></line>`,
			f(xa.pos(x0)), f(ya.pos(k*x0)), f(xa.pos(x1)), f(ya.pos(k*x1)), dash, esc(label))
	}
	diag(1, "", "predicted = measured")
	diag(1.25, ` stroke-dasharray="5 3"`, "predicted 25 % above measured")
	diag(0.75, ` stroke-dasharray="5 3"`, "predicted 25 % below measured")
	for _, p := range pts {
		if !(p.Measured > 0 && p.Predicted > 0) {
			continue
		}
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="4" fill="%s"><title>%s</title></circle>`, f(xa.pos(p.Measured)), f(ya.pos(p.Predicted)), color(p.Kind), esc(p.Title))
	}
	// the legend to the right of the square plot
	y := float64(marginTop) + 12
	for i, name := range names {
		x := marginLeft + side + 24
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`, f(x+8), f(y-4), colors[i])
		fmt.Fprintf(&b, `<text class="lg" x="%s" y="%s">%s</text>`, f(x+20), f(y), esc(name))
		y += legendRow
	}
	fmt.Fprintf(&b, `<text class="lg" x="%s" y="%s">%s</text>`, f(marginLeft+side+24), f(y+8), esc("dashed: ±25 %"))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// fidelityParity is the points of a fidelity section: every probe with
// the calibrated prediction (the held-back probe with the prediction of
// the fit that did not see it) and every verified point.
func fidelityParity(f *plan.FidelityReport, metric func(plan.Latencies) float64, unit string) []parityPoint {
	var pts []parityPoint
	for i, p := range f.Probes {
		k := 0
		if p.HeldBack {
			k = 1
		}
		pts = append(pts, parityPoint{Measured: metric(p.Live), Predicted: metric(p.Calibrated), Kind: k,
			Title: fmt.Sprintf("probe %d, %d users, %s: measured %.1f %s, predicted %.1f %s", i+1, p.Users, flagsText(p.Params), metric(p.Live), unit, metric(p.Calibrated), unit)})
	}
	for _, v := range f.Verified {
		pts = append(pts, parityPoint{Measured: metric(v.Measured), Predicted: metric(v.Predicted), Kind: 2,
			Title: fmt.Sprintf("verified, round %d, %d users, %s: measured %.1f %s (%s), predicted %.1f %s (%s)", v.Round, v.Users, flagsText(v.Params),
				metric(v.Measured), unit, verdictWordOf(v.Measured), metric(v.Predicted), unit, verdictWordOf(v.Predicted))})
	}
	return pts
}

func verdictWordOf(l plan.Latencies) string {
	if l.Pass {
		return "pass"
	}
	return "fail"
}

// flagsText is a run's flags in a stable order.
func flagsText(params map[string]any) string {
	if len(params) == 0 {
		return "configured flags"
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, params[k])
	}
	return strings.Join(parts, " ")
}

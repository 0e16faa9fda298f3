package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units. Charts scale to their container through
// the viewBox; these only fix the aspect ratio and the text size relative to
// the plot.
const (
	chartWidth   = 640
	chartHeight  = 300
	marginLeft   = 64
	marginRight  = 16
	marginTop    = 28
	marginBottom = 44
	legendRow    = 16
)

// palette is the Okabe–Ito colour-blind safe palette (without black and
// yellow, too light on white), then darker companions.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#7F3C8D", "#3B6E3B", "#8C564B", "#555555"}

// color returns the i-th palette colour, cycling.
func color(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// Series is one line (or group of scatter points) of a chart. Titles, when
// set, are the hover text of each point (an SVG title: no script needed).
type Series struct {
	Name   string
	X, Y   []float64
	Titles []string
	// Dashed draws the line dashed (the overall line among per-profile ones).
	Dashed bool
	// Markers draws a dot at every point; points with a title always get one.
	Markers bool
	// Color overrides the palette colour.
	Color string
}

// RefLine is a reference line across the plot: an SLA threshold (on Y) or
// the capacity ceiling (on X).
type RefLine struct {
	Value float64
	Label string
	Color string
	// Left puts a vertical line's label on its left (two close lines).
	Left bool
}

// Band shades an X range (a straggler stretch).
type Band struct {
	From, To float64
	Label    string
}

// LineChart is a multi-series line chart with nice-tick axes, reference
// lines and a legend.
type LineChart struct {
	Title          string
	XLabel, YLabel string
	Series         []Series
	HLines, VLines []RefLine
	Bands          []Band
	// ZeroY starts the Y axis at zero (counts, throughput, ratios).
	ZeroY bool
	// YMax, when positive, is the least top of the Y axis (1 for ratios).
	YMax float64
	// YFormat formats Y tick labels; nil uses a compact number format.
	YFormat func(float64) string
	// Scatter draws points only, no connecting lines.
	Scatter bool
	// YClip, when positive, caps the Y axis: larger values are drawn as
	// triangles on the top edge (their hover text keeps the true value), so
	// that a blow-up past the ceiling does not flatten the region before it.
	YClip float64
	// XClip, when positive, caps the X axis the same way: larger values are
	// drawn as triangles on the right edge.
	XClip float64
}

// axis maps a data range onto pixels with nice ticks.
type axis struct {
	lo, hi   float64
	p0, p1   float64 // pixel positions of lo and hi
	ticks    []float64
	decimals int
}

func (a axis) pos(v float64) float64 {
	if a.hi == a.lo {
		return (a.p0 + a.p1) / 2
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// newAxis spans [lo, hi] with about n nice ticks; the axis range is widened
// to the outer ticks.
func newAxis(lo, hi float64, n int, p0, p1 float64) axis {
	ticks, dec := niceTicks(lo, hi, n)
	return axis{lo: ticks[0], hi: ticks[len(ticks)-1], p0: p0, p1: p1, ticks: ticks, decimals: dec}
}

// niceTicks returns about n evenly spaced round tick values covering
// [lo, hi] (steps of 1, 2, 2.5 or 5 times a power of ten) and the decimals
// needed to print them. A degenerate or non-finite range is widened.
func niceTicks(lo, hi float64, n int) ([]float64, int) {
	if n < 2 {
		n = 2
	}
	if !finite(lo) || !finite(hi) || !finite(hi-lo) || !finite(lo-hi) {
		lo, hi = 0, 1
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if hi == lo {
		d := math.Abs(lo) * 0.1
		if d == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
	}
	raw := (hi - lo) / float64(n-1)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	first := math.Floor(lo/step+1e-9) * step
	last := math.Ceil(hi/step-1e-9) * step
	var ticks []float64
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > last+step*1e-6 || i > 100 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, v)
	}
	if len(ticks) < 2 {
		ticks = append(ticks, first+step)
	}
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
		if s := strconv.FormatFloat(step, 'f', -1, 64); strings.Contains(s, ".") {
			dec = max(dec, len(s)-strings.Index(s, ".")-1)
		}
		dec = min(dec, 6)
	}
	return ticks, dec
}

// formatTick prints a tick with the axis' decimals, thousands as k and
// millions as M.
func formatTick(v float64, dec int) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6 && dec == 0:
		return trimZeros(strconv.FormatFloat(v/1e6, 'f', 2, 64)) + "M"
	case a >= 1e4 && dec == 0:
		return trimZeros(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// esc escapes text for SVG character data and attribute values. Invalid
// UTF-8 and control characters (which XML forbids) become U+FFFD.
func esc(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0xFFFE && r <= 0xFFFF) {
			return '\uFFFD'
		}
		return r
	}, s)
	return html.EscapeString(s)
}

// f prints a coordinate compactly.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// finite reports whether v can be drawn.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// svgOpen starts an SVG document of the given height with an accessible
// title.
func svgOpen(b *strings.Builder, title string, height int) {
	fmt.Fprintf(b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartWidth, height, esc(title))
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
	if title != "" {
		fmt.Fprintf(b, `<text class="ct" x="%d" y="16">%s</text>`, marginLeft, esc(title))
	}
}

// legend draws one entry per name below the plot, wrapping rows; it returns
// the height used.
func legend(b *strings.Builder, names, colors []string, dashed []bool, glyph string, y float64) float64 {
	if len(names) < 2 {
		return 0
	}
	x := float64(marginLeft)
	rows := 1.0
	for i, n := range names {
		w := legendWidth(n)
		if x+w > chartWidth-marginRight && x > marginLeft {
			x = marginLeft
			y += legendRow
			rows++
		}
		dash := ""
		if dashed != nil && dashed[i] {
			dash = ` stroke-dasharray="5 3"`
		}
		switch glyph {
		case "rect":
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="14" height="10" fill="%s"/>`, f(x+1), f(y-9), colors[i])
		case "dot":
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`, f(x+8), f(y-4), colors[i])
		default:
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/>`, f(x), f(y-4), f(x+16), f(y-4), colors[i], dash)
		}
		fmt.Fprintf(b, `<text class="lg" x="%s" y="%s">%s</text>`, f(x+20), f(y), esc(n))
		x += w
	}
	return rows * legendRow
}

// SVG renders the chart as an inline SVG element.
func (c LineChart) SVG() template.HTML {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			if i < len(s.Y) && finite(s.X[i]) && finite(s.Y[i]) {
				xlo, xhi = math.Min(xlo, s.X[i]), math.Max(xhi, s.X[i])
				ylo, yhi = math.Min(ylo, s.Y[i]), math.Max(yhi, s.Y[i])
			}
		}
	}
	for _, h := range c.HLines {
		if finite(h.Value) {
			ylo, yhi = math.Min(ylo, h.Value), math.Max(yhi, h.Value)
		}
	}
	for _, v := range c.VLines {
		if finite(v.Value) {
			xlo, xhi = math.Min(xlo, v.Value), math.Max(xhi, v.Value)
		}
	}
	if math.IsInf(xlo, 1) {
		xlo, xhi, ylo, yhi = 0, 1, 0, 1
	}
	if c.ZeroY && ylo > 0 {
		ylo = 0
	}
	if c.ZeroY && ylo == 0 && yhi == 0 {
		yhi = 1
	}
	if c.YMax > yhi {
		yhi = c.YMax
	}
	clipped := c.YClip > 0 && yhi > c.YClip
	if clipped {
		yhi = c.YClip
	}
	xclipped := c.XClip > 0 && xhi > c.XClip && c.XClip > xlo
	if xclipped {
		xhi = c.XClip
	}
	var names, colors []string
	var dashed []bool
	for i, s := range c.Series {
		col := s.Color
		if col == "" {
			col = color(i)
		}
		names, colors, dashed = append(names, s.Name), append(colors, col), append(dashed, s.Dashed)
	}
	height := chartHeight + int(legendHeight(names))
	plotBottom := float64(chartHeight - marginBottom)
	xa := newAxis(xlo, xhi, 6, marginLeft, chartWidth-marginRight)
	ya := newAxis(ylo, yhi, 5, plotBottom, marginTop)
	yfmt := c.YFormat
	if yfmt == nil {
		yfmt = func(v float64) string { return formatTick(v, ya.decimals) }
	}

	var b strings.Builder
	svgOpen(&b, c.Title, height)
	for _, bd := range c.Bands {
		if !finite(bd.From) || !finite(bd.To) || bd.To < xa.lo || bd.From > xa.hi {
			continue
		}
		x0, x1 := xa.pos(math.Max(bd.From, xa.lo)), xa.pos(math.Min(bd.To, xa.hi))
		fmt.Fprintf(&b, `<rect class="band" x="%s" y="%d" width="%s" height="%s"><title>%s</title></rect>`, f(x0), marginTop, f(math.Max(x1-x0, 2)), f(plotBottom-marginTop), esc(bd.Label))
	}
	for _, t := range ya.ticks {
		y := ya.pos(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginLeft, f(y), chartWidth-marginRight, f(y))
		fmt.Fprintf(&b, `<text class="yt" x="%d" y="%s">%s</text>`, marginLeft-6, f(y+4), esc(yfmt(t)))
	}
	for _, t := range xa.ticks {
		x := xa.pos(t)
		fmt.Fprintf(&b, `<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f(x), f(plotBottom), f(x), f(plotBottom+4))
		fmt.Fprintf(&b, `<text class="xt" x="%s" y="%s">%s</text>`, f(x), f(plotBottom+16), esc(formatTick(t, xa.decimals)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginLeft, f(plotBottom), chartWidth-marginRight, f(plotBottom))
	fmt.Fprintf(&b, `<text class="xl" x="%s" y="%s">%s</text>`, f((marginLeft+chartWidth-marginRight)/2.0), f(plotBottom+34), esc(c.XLabel))
	fmt.Fprintf(&b, `<text class="yl" transform="translate(14 %s) rotate(-90)">%s</text>`, f((plotBottom+marginTop)/2), esc(c.YLabel))
	for _, h := range c.HLines {
		if !finite(h.Value) || h.Value > ya.hi {
			continue
		}
		y := ya.pos(h.Value)
		col := h.Color
		if col == "" {
			col = "#b00020"
		}
		fmt.Fprintf(&b, `<line class="ref" x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s"><title>%s</title></line>`, marginLeft, f(y), chartWidth-marginRight, f(y), col, esc(h.Label))
		fmt.Fprintf(&b, `<text class="rl" x="%d" y="%s" fill="%s">%s</text>`, chartWidth-marginRight-4, f(y-4), col, esc(h.Label))
	}
	for _, v := range c.VLines {
		if !finite(v.Value) {
			continue
		}
		x := xa.pos(v.Value)
		col := v.Color
		if col == "" {
			col = "#1b7f3b"
		}
		fmt.Fprintf(&b, `<line class="ref" x1="%s" y1="%d" x2="%s" y2="%s" stroke="%s"><title>%s</title></line>`, f(x), marginTop, f(x), f(plotBottom), col, esc(v.Label))
		if v.Left {
			fmt.Fprintf(&b, `<text class="vl" x="%s" y="%d" fill="%s" text-anchor="end">%s</text>`, f(x-4), marginTop+10, col, esc(v.Label))
		} else {
			fmt.Fprintf(&b, `<text class="vl" x="%s" y="%d" fill="%s">%s</text>`, f(x+4), marginTop+10, col, esc(v.Label))
		}
	}
	for i, s := range c.Series {
		col := colors[i]
		yv := func(v float64) float64 {
			if clipped && v > yhi {
				return yhi
			}
			return v
		}
		xv := func(v float64) float64 {
			if xclipped && v > xhi {
				return xhi
			}
			return v
		}
		var pts []string
		for j := range s.X {
			if j < len(s.Y) && finite(s.X[j]) && finite(s.Y[j]) {
				pts = append(pts, f(xa.pos(xv(s.X[j])))+","+f(ya.pos(yv(s.Y[j]))))
			}
		}
		fmt.Fprintf(&b, `<g class="series"><title>%s</title>`, esc(s.Name))
		if !c.Scatter && len(pts) > 1 {
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5 3"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, col, dash, strings.Join(pts, " "))
		}
		for j := range s.X {
			if j >= len(s.Y) || !finite(s.X[j]) || !finite(s.Y[j]) {
				continue
			}
			title := ""
			if j < len(s.Titles) {
				title = s.Titles[j]
			}
			if !s.Markers && !c.Scatter && title == "" {
				continue
			}
			x, y := xa.pos(xv(s.X[j])), ya.pos(yv(s.Y[j]))
			if xclipped && s.X[j] > xhi {
				fmt.Fprintf(&b, `<path d="M%s %sl-8 -5v10z" fill="%s">`, f(x+2), f(y), col)
				if title != "" {
					fmt.Fprintf(&b, `<title>%s (off the chart)</title>`, esc(title))
				}
				b.WriteString(`</path>`)
				continue
			}
			if clipped && s.Y[j] > yhi {
				fmt.Fprintf(&b, `<path d="M%s %sl-5 8h10z" fill="%s">`, f(x), f(y-2), col)
				if title != "" {
					fmt.Fprintf(&b, `<title>%s (off the chart)</title>`, esc(title))
				}
				b.WriteString(`</path>`)
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s">`, f(x), f(y), col)
			if title != "" {
				fmt.Fprintf(&b, `<title>%s</title>`, esc(title))
			}
			b.WriteString(`</circle>`)
		}
		b.WriteString(`</g>`)
	}
	glyph := "line"
	if c.Scatter {
		glyph = "dot"
	}
	legend(&b, names, colors, dashed, glyph, float64(chartHeight)+8)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// legendWidth is the room one legend entry takes: glyph, gap and text at
// about 7.5 units a character of 12.5-unit text.
func legendWidth(name string) float64 { return 30 + 7.5*float64(len([]rune(name))) }

// legendHeight is the height the legend's rows need below the chart.
func legendHeight(names []string) float64 {
	if len(names) < 2 {
		return 0
	}
	x, rows := float64(marginLeft), 1.0
	for _, n := range names {
		w := legendWidth(n)
		if x+w > chartWidth-marginRight && x > marginLeft {
			x = marginLeft
			rows++
		}
		x += w
	}
	return rows * legendRow
}

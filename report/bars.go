package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// BarChart is a horizontal stacked bar chart: one bar per row, one segment
// per part (kernel categories of each GPU, a prediction beside the
// measurement). A single part draws plain bars.
type BarChart struct {
	Title string
	// Parts names the segments, in stacking order.
	Parts []string
	Rows  []BarRow
	// Max is the axis length; 0 uses the longest bar (1 for shares).
	Max float64
	// Unit labels the axis ("share of kernel time", "users").
	Unit string
	// Percent prints values and ticks as percentages of 1.
	Percent bool
}

// BarRow is one bar: its label and one value per part.
type BarRow struct {
	Label  string
	Values []float64
	// Note is appended to the hover text of every segment.
	Note string
}

const (
	barHeight   = 22
	barGap      = 8
	barLabelPad = 168
)

// value formats v for labels and hover text.
func (c BarChart) value(v float64) string {
	if c.Percent {
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	return trimZeros(fmt.Sprintf("%.1f", v))
}

// SVG renders the chart as an inline SVG element.
func (c BarChart) SVG() template.HTML {
	hi := c.Max
	if hi <= 0 {
		for _, r := range c.Rows {
			sum := 0.0
			for _, v := range r.Values {
				if finite(v) && v > 0 {
					sum += v
				}
			}
			hi = math.Max(hi, sum)
		}
	}
	if hi <= 0 {
		hi = 1
	}
	left, right := float64(barLabelPad), float64(chartWidth-marginRight)
	ax := newAxis(0, hi, 5, left, right)
	if c.Max > 0 {
		ax = axis{lo: 0, hi: c.Max, p0: left, p1: right}
		ax.ticks, ax.decimals = niceTicks(0, c.Max, 5)
		for ax.ticks[len(ax.ticks)-1] > c.Max*(1+1e-9) {
			ax.ticks = ax.ticks[:len(ax.ticks)-1]
		}
	}
	top := float64(marginTop)
	plotH := float64(len(c.Rows))*(barHeight+barGap) + barGap
	axisY := top + plotH
	var colors []string
	for i := range c.Parts {
		colors = append(colors, color(i))
	}
	height := int(axisY + 40 + legendHeight(c.Parts))

	var b strings.Builder
	svgOpen(&b, c.Title, height)
	for _, t := range ax.ticks {
		x := ax.pos(t)
		label := formatTick(t, ax.decimals)
		if c.Percent {
			label = trimZeros(fmt.Sprintf("%.1f", 100*t)) + "%"
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f(x), f(top), f(x), f(axisY))
		fmt.Fprintf(&b, `<text class="xt" x="%s" y="%s">%s</text>`, f(x), f(axisY+14), esc(label))
	}
	fmt.Fprintf(&b, `<text class="xl" x="%s" y="%s">%s</text>`, f((left+right)/2), f(axisY+30), esc(c.Unit))
	for i, r := range c.Rows {
		y := top + barGap + float64(i)*(barHeight+barGap)
		fmt.Fprintf(&b, `<text class="bl" x="%s" y="%s">%s</text>`, f(left-6), f(y+barHeight/2+4), esc(truncate(r.Label, 24)))
		x := left
		total := 0.0
		for j, v := range r.Values {
			if !finite(v) || v <= 0 {
				continue
			}
			total += v
			w := ax.pos(v) - ax.pos(0)
			if !finite(w) || x+w > right {
				w = math.Max(right-x, 0) // beyond the axis: clamp at its end
			}
			part := ""
			if j < len(c.Parts) {
				part = c.Parts[j]
			}
			title := fmt.Sprintf("%s — %s: %s", r.Label, part, c.value(v))
			if r.Note != "" {
				title += " (" + r.Note + ")"
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s</title></rect>`, f(x), f(y), f(math.Max(w, 0.5)), barHeight, color(j), esc(title))
			if w > 34 && len(c.Parts) > 1 {
				fmt.Fprintf(&b, `<text class="bv" x="%s" y="%s">%s</text>`, f(x+w/2), f(y+barHeight/2+4), esc(shortValue(c, v)))
			}
			x += w
		}
		if len(c.Parts) <= 1 {
			fmt.Fprintf(&b, `<text class="bt" x="%s" y="%s">%s</text>`, f(x+4), f(y+barHeight/2+4), esc(c.value(total)))
		}
	}
	legend(&b, c.Parts, colors, nil, "rect", axisY+40+legendRow-6)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// shortValue is the in-bar label: whole percent or a compact number.
func shortValue(c BarChart, v float64) string {
	if c.Percent {
		return fmt.Sprintf("%.0f%%", 100*v)
	}
	return formatTick(v, 0)
}

// truncate shortens s to n runes with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

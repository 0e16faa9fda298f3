package report

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/trace"
)

// kernelsView is the Kernels section.
type kernelsView struct {
	File, Source string
	PerGPU       template.HTML
	GPUs         []kernelGPURow
	Top          []kernelRow
	Unknown      []kernelRow
	Imbalance    string
	Warnings     []string
	Roofline     template.HTML
	RoofRows     []roofRow
	RoofHeads    []string
	RoofSteps    []string
	Mix          string
}

type kernelGPURow struct {
	Name, Kernel, Busy, Idle, Top string
	GraphKernels                  int64
}

type kernelRow struct {
	Category, Name, Short, Time, Share string
	Count                              int64
}

type roofRow struct {
	Key      string
	Measured string
	Cells    []string
}

// kernelName shortens a demangled kernel name for display: C++ template
// arguments are elided (the full name is the hover text).
func kernelName(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '<':
			if depth == 0 {
				b.WriteString("<…>")
			}
			depth++
		case r == '>' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return truncate(b.String(), 110)
}

func fmtNS(ns int64) string { return fmtMs(float64(ns) / 1e6) }

func newKernelsView(d *plan.Summary) *kernelsView {
	k := d.Kernels
	if k == nil || k.Breakdown == nil {
		return nil
	}
	b := k.Breakdown
	v := &kernelsView{File: k.File, Source: b.Source, Warnings: b.Warnings}
	var cats []trace.Category
	present := map[trace.Category]bool{}
	for _, c := range b.Categories {
		present[c.Name] = c.TimeNS > 0 || present[c.Name]
	}
	for _, g := range b.GPUs {
		for _, c := range g.Categories {
			present[c.Name] = c.TimeNS > 0 || present[c.Name]
		}
	}
	for _, c := range trace.Categories {
		if present[c] {
			cats = append(cats, c)
		}
	}
	for _, c := range b.Categories {
		if present[c.Name] && !containsCat(cats, c.Name) {
			cats = append(cats, c.Name)
		}
	}
	parts := make([]string, len(cats))
	for i, c := range cats {
		parts[i] = string(c)
	}
	shares := func(cs []trace.CategoryTime) []float64 {
		out := make([]float64, len(cats))
		for _, c := range cs {
			for i, n := range cats {
				if n == c.Name {
					out[i] = c.Share
				}
			}
		}
		return out
	}
	chart := BarChart{Title: "Kernel time by category, per GPU", Parts: parts, Max: 1, Percent: true, Unit: "share of kernel time"}
	chart.Rows = append(chart.Rows, BarRow{Label: "all GPUs", Values: shares(b.Categories), Note: "kernel time " + fmtNS(b.KernelTimeNS)})
	for _, g := range b.GPUs {
		name := fmt.Sprintf("GPU %d", g.Device)
		note := fmt.Sprintf("idle %s of the window", fmtPct(g.IdleFraction))
		if g.Name != "" {
			note = g.Name + ", " + note
		}
		chart.Rows = append(chart.Rows, BarRow{Label: name, Values: shares(g.Categories), Note: note})
		if g.Name != "" {
			name += " " + g.Name
		}
		top := trace.CategoryTime{}
		for _, c := range g.Categories {
			if c.TimeNS > top.TimeNS {
				top = c
			}
		}
		v.GPUs = append(v.GPUs, kernelGPURow{Name: name, Kernel: fmtNS(g.KernelTimeNS), Busy: fmtNS(g.BusyNS), Idle: fmtPct(g.IdleFraction),
			Top: fmt.Sprintf("%s (%s)", top.Name, fmtPct(top.Share)), GraphKernels: g.GraphKernels})
	}
	v.PerGPU = chart.SVG()
	for _, c := range b.Categories {
		for _, kt := range c.TopKernels {
			v.Top = append(v.Top, kernelRow{Category: string(c.Name), Name: kt.Name, Short: kernelName(kt.Name), Time: fmtNS(kt.TimeNS), Share: fmtPct(kt.Share), Count: kt.Count})
		}
	}
	for _, kt := range b.UnknownKernels {
		v.Unknown = append(v.Unknown, kernelRow{Category: string(kt.Category), Name: kt.Name, Short: kernelName(kt.Name), Time: fmtNS(kt.TimeNS), Share: fmtPct(kt.Share), Count: kt.Count})
	}
	if b.Imbalance != nil {
		v.Imbalance = b.Imbalance.Note
	}
	assumed := func(field string) string {
		if slices.Contains(k.Mix.Assumed, field) {
			return " (assumed: not measured)"
		}
		return ""
	}
	v.Mix = fmt.Sprintf("%d decoding sequences%s over %s cached tokens%s, plus a prefill chunk of %s tokens%s over %s cached%s",
		k.Mix.DecodeSeqs, assumed("decode_seqs"), fmtNum(float64(k.Mix.DecodeContext)), assumed("decode_context"),
		fmtNum(float64(k.Mix.PrefillTokens)), assumed("prefill_tokens"), fmtNum(float64(k.Mix.PrefillContext)), assumed("prefill_context"))
	if len(k.Roofline) == 0 {
		return v
	}
	var keys []string
	measured := map[string]float64{}
	for _, rc := range k.Roofline {
		if rc.Comparison == nil {
			continue
		}
		for _, r := range rc.Comparison.Rows {
			if !containsString(keys, r.Key) {
				keys = append(keys, r.Key)
			}
			measured[r.Key] = r.MeasuredShare
		}
	}
	rc := BarChart{Title: "Measured kernel split vs roofline predictions", Parts: keys, Max: 1, Percent: true, Unit: "share of the kernel time the model covers"}
	row := func(label string, get func(string) float64, note string) {
		vals := make([]float64, len(keys))
		for i, key := range keys {
			vals[i] = get(key)
		}
		rc.Rows = append(rc.Rows, BarRow{Label: label, Values: vals, Note: note})
	}
	row("measured", func(key string) float64 { return measured[key] }, "from the trace")
	for _, r := range k.Roofline {
		if r.Comparison == nil {
			continue
		}
		label := r.Prediction.Assumption + " roofline"
		note := fmt.Sprintf("predicted step %s", fmtMs(1000*r.Prediction.StepSeconds))
		if r.Prediction.HypotheticalFP4 {
			label += " *"
			note += "; hypothetical FP4 tensor cores"
		}
		pred := map[string]float64{}
		for _, x := range r.Comparison.Rows {
			pred[x.Key] = x.PredictedShare
		}
		row(label, func(key string) float64 { return pred[key] }, note)
		v.RoofHeads = append(v.RoofHeads, r.Prediction.Assumption)
		step := fmt.Sprintf("%s: predicted step %s, overhead %s of the step", r.Prediction.Assumption, fmtMs(1000*r.Prediction.StepSeconds), fmtPct(r.Prediction.OverheadShare))
		if r.Prediction.HypotheticalFP4 {
			step += " (the GPU has no FP4 tensor cores: a hypothetical FP4 peak of twice FP8 was assumed)"
		}
		if r.Comparison.UncoveredShare > 0 {
			step += fmt.Sprintf("; %s of measured time has no predicted term", fmtPct(r.Comparison.UncoveredShare))
		}
		v.RoofSteps = append(v.RoofSteps, step)
	}
	v.Roofline = rc.SVG()
	for _, key := range keys {
		rr := roofRow{Key: key, Measured: fmtPct(measured[key])}
		for _, r := range k.Roofline {
			if r.Comparison == nil {
				continue
			}
			cell := "–"
			for _, x := range r.Comparison.Rows {
				if x.Key == key {
					cell = fmt.Sprintf("%s (%+.1f pt)", fmtPct(x.PredictedShare), 100*x.Delta)
				}
			}
			rr.Cells = append(rr.Cells, cell)
		}
		v.RoofRows = append(v.RoofRows, rr)
	}
	return v
}

func containsCat(cs []trace.Category, c trace.Category) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

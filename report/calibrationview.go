package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// The "How far to trust the simulator" section has its own template block
// and renderer: it reads plan.Summary.Envelope and nothing else, shows the
// calibration's out-of-sample error (never the in-sample one) and names no
// file.

//go:embed calibration.html.tmpl
var calibrationHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"calibrationView": newCalibrationView}).Parse(calibrationHTML))

// calibrationView is the section with every figure formatted.
type calibrationView struct {
	Calibration string
	Rows        []calibrationRow
	Fitted      string
	Outside     []string
	// Levels lists the sweep levels whose concurrency leaves the envelope.
	Levels string
}

type calibrationRow struct {
	GPU                  string
	Points               int
	TputMAPE, TputSigned string
	TPOTMAPE, TPOTSigned string
	TTFTMAPE, TTFTSigned string
}

// newCalibrationView returns nil for a plan with no envelope (live engines,
// or no calibration to check against).
func newCalibrationView(e *plan.Envelope) *calibrationView {
	if e == nil {
		return nil
	}
	v := &calibrationView{Calibration: e.Calibration}
	for _, h := range e.OutOfSample {
		m := func(k string) string { return fmt.Sprintf("%.1f %%", h.MAPE[k]) }
		s := func(k string) string { return fmt.Sprintf("%+.1f %%", h.MeanSigned[k]) }
		v.Rows = append(v.Rows, calibrationRow{GPU: strings.ToUpper(h.GPU), Points: h.Points,
			TputMAPE: m("output_throughput_per_gpu"), TputSigned: s("output_throughput_per_gpu"),
			TPOTMAPE: m("median_tpot"), TPOTSigned: s("median_tpot"), TTFTMAPE: m("median_ttft"), TTFTSigned: s("median_ttft")})
	}
	f := e.Fitted
	caching := "off"
	for _, c := range f.PrefixCaching {
		if c {
			caching = "on"
		}
	}
	turns := "single-turn requests"
	if f.MultiTurn {
		turns = "multi-turn sessions"
	}
	v.Fitted = fmt.Sprintf("%s on %s; TP %d–%d; prompts %d–%d tokens; outputs %d–%d tokens; %d–%d requests in flight; prefix caching %s; %s",
		strings.Join(f.Engines, ", "), strings.ToUpper(strings.Join(f.GPUs, ", ")), f.TensorParallel.Min, f.TensorParallel.Max,
		f.PromptTokens.Min, f.PromptTokens.Max, f.OutputTokens.Min, f.OutputTokens.Max, f.Concurrency.Min, f.Concurrency.Max, caching, turns)
	for _, x := range e.Outside {
		v.Outside = append(v.Outside, x.String())
	}
	var levels []string
	for _, p := range e.Points {
		for _, x := range p.Outside {
			if x.Dimension == "concurrency" {
				levels = append(levels, fmt.Sprintf("%d users (≤ %d in flight per replica)", p.Users, p.Concurrency))
			}
		}
	}
	v.Levels = strings.Join(levels, ", ")
	return v
}

// writeCalibrationMarkdown writes the section to summary.md; nothing for a
// plan with no envelope.
func writeCalibrationMarkdown(w io.Writer, e *plan.Envelope) {
	v := newCalibrationView(e)
	if v == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## How far to trust the simulator\n\nSimulated numbers come from the %s. Out-of-sample error (each GPU predicted by a fit on the others):\n\n", mdEscape(v.Calibration))
	b.WriteString("| GPU predicted unseen | points | throughput/GPU MAPE | mean signed | median TPOT MAPE | mean signed | median TTFT MAPE | mean signed |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range v.Rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", r.GPU, r.Points, r.TputMAPE, r.TputSigned, r.TPOTMAPE, r.TPOTSigned, r.TTFTMAPE, r.TTFTSigned)
	}
	fmt.Fprintf(&b, "\nCalibration envelope — measured: %s.\n\n", mdEscape(v.Fitted))
	for _, o := range v.Outside {
		fmt.Fprintf(&b, "- ⚠ %s\n", mdEscape(o))
	}
	if v.Levels != "" {
		fmt.Fprintf(&b, "\nSweep levels outside the measured concurrency: %s.\n", v.Levels)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

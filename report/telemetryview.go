package report

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/telemetry"
)

// telemetryView is the Telemetry section.
type telemetryView struct {
	Seconds    float64
	Charts     []template.HTML
	GPUs       []gpuRow
	Stragglers []stragglerRow
	Gaps       []telemetry.Gap
	// Flat lists signals whose chart was left out because nothing happened.
	Flat []string
}

type gpuRow struct {
	Name, Model                  string
	SM, DRAM, Tensor             string
	ClockMean, ClockMin, TempMax string
	Power, Throttle, Slowdown    string
	Straggler                    bool
}

type stragglerRow struct {
	GPU, From, To, Reasons, Clock, Peers, MinRatio string
	Samples                                        int
}

// chartSpec describes how one telemetry signal is drawn.
type chartSpec struct {
	signals []string // drawn together on one chart (engine signals)
	title   string
	ylabel  string
	percent bool
	// bands shades straggler stretches.
	bands bool
	// hideZero leaves the chart out when every point is zero (a flat line
	// at 0 says less than the sentence that replaces it).
	hideZero bool
}

// telemetryCharts is the order and presentation of known signals; any other
// signal found is drawn after them with its own name and unit.
var telemetryCharts = []chartSpec{
	{signals: []string{"running", "waiting"}, title: "Requests running and waiting", ylabel: "requests"},
	{signals: []string{"kv_cache_usage"}, title: "KV-cache usage", ylabel: "KV-cache usage (%)", percent: true},
	{signals: []string{"prefix_cache_hit_rate"}, title: "Prefix-cache hit rate", ylabel: "hit rate (%)", percent: true},
	{signals: []string{"sm_active"}, title: "SM active per GPU", ylabel: "SM active (%)", percent: true, bands: true},
	{signals: []string{"dram_active"}, title: "DRAM active per GPU", ylabel: "DRAM active (%)", percent: true, bands: true},
	{signals: []string{"sm_clock"}, title: "SM clock per GPU (stragglers shaded)", ylabel: "SM clock (MHz)", bands: true},
	{signals: []string{"temperature"}, title: "GPU temperature", ylabel: "temperature (°C)", bands: true},
	{signals: []string{"tensor_active"}, title: "Tensor-core active per GPU", ylabel: "tensor active (%)", percent: true},
	{signals: []string{"power"}, title: "GPU power", ylabel: "power (W)"},
	// Prompt and generation throughput get a chart each: prompt tokens run
	// an order of magnitude above generated ones and flattened them on a
	// shared axis.
	{signals: []string{"generation_tokens_per_second"}, title: "Generation throughput (engine)", ylabel: "generated tokens/s"},
	{signals: []string{"prompt_tokens_per_second"}, title: "Prompt throughput (engine)", ylabel: "prompt tokens/s"},
	{signals: []string{"preemptions"}, title: "Preemptions", ylabel: "preemptions per interval", hideZero: true},
}

func newTelemetryView(d *plan.Summary) *telemetryView {
	t := d.Telemetry
	if t == nil {
		return nil
	}
	v := &telemetryView{Seconds: t.End.Sub(t.Start).Seconds(), Gaps: t.Gaps}
	flagged := map[string]bool{}
	var bands []Band
	for _, s := range t.Stragglers {
		flagged[s.Name()] = true
		from, to := s.Start.Sub(t.Start).Seconds(), s.End.Sub(t.Start).Seconds()
		bands = append(bands, Band{From: from, To: to, Label: fmt.Sprintf("straggler %s: %s", s.Name(), strings.Join(s.Reasons, ", "))})
		v.Stragglers = append(v.Stragglers, stragglerRow{GPU: s.Name(), From: fmt.Sprintf("%.0f s", from), To: fmt.Sprintf("%.0f s", to),
			Reasons: strings.Join(s.Reasons, ", "), Clock: fmtNum(s.ClockMHz) + " MHz", Peers: fmtNum(s.PeerMedianMHz) + " MHz",
			MinRatio: fmtPct(s.MinClockRatio), Samples: s.Samples})
	}
	used := map[string]bool{}
	specs := slices.Clone(telemetryCharts)
	for _, c := range t.Charts {
		known := false
		for _, s := range specs {
			if slices.Contains(s.signals, c.Signal) {
				known = true
			}
		}
		if !known {
			specs = append(specs, chartSpec{signals: []string{c.Signal}, title: c.Signal, ylabel: c.Signal + " (" + c.Unit + ")"})
		}
	}
	for _, spec := range specs {
		lc := LineChart{Title: spec.title, XLabel: "seconds into the measured window at the ceiling", YLabel: spec.ylabel, ZeroY: true}
		if spec.percent {
			lc.YMax = 1
			lc.YFormat = func(v float64) string { return trimZeros(fmt.Sprintf("%.1f", 100*v)) }
		}
		for _, c := range t.Charts {
			if !slices.Contains(spec.signals, c.Signal) || len(c.Points) == 0 {
				continue
			}
			used[c.Signal] = true
			name := c.Signal
			if c.GPU != "" {
				name = c.GPU
				if flagged[c.GPU] {
					name += " ⚠ straggler"
				}
			}
			s := Series{Name: name}
			for _, p := range c.Points {
				s.X = append(s.X, p.T.Sub(t.Start).Seconds())
				s.Y = append(s.Y, p.V)
			}
			lc.Series = append(lc.Series, s)
		}
		if len(lc.Series) == 0 {
			continue
		}
		if spec.hideZero && allZero(lc.Series) {
			v.Flat = append(v.Flat, spec.title+": none in the window (chart left out).")
			continue
		}
		if note := mergeIdentical(&lc); note != "" {
			if t, ok := strings.CutSuffix(lc.Title, ")"); ok {
				lc.Title = t + "; " + note + ")"
			} else {
				lc.Title += " (" + note + ")"
			}
		}
		if spec.bands {
			lc.Bands = bands
		}
		v.Charts = append(v.Charts, lc.SVG())
	}
	for _, g := range t.GPUs {
		r := gpuRow{Name: g.Name(), Model: g.Model, SM: statPct(g.SMActive), DRAM: statPct(g.DRAMActive), Tensor: statPct(g.TensorActive),
			ClockMean: statNum(g.SMClockMHz.Mean, g.SMClockMHz), ClockMin: statNum(g.SMClockMHz.Min, g.SMClockMHz),
			TempMax: statNum(g.TemperatureC.Max, g.TemperatureC), Power: statNum(g.PowerW.Mean, g.PowerW),
			Throttle: strings.Join(g.ThrottleReasons, ", "), Slowdown: fmtPct(g.SlowdownFraction), Straggler: flagged[g.Name()]}
		v.GPUs = append(v.GPUs, r)
	}
	return v
}

func statPct(s telemetry.Stat) string {
	if s.Samples == 0 {
		return "–"
	}
	return fmtPct(s.Mean)
}

func statNum(v float64, s telemetry.Stat) string {
	if s.Samples == 0 {
		return "–"
	}
	return fmtNum(v)
}

func allZero(series []Series) bool {
	for _, s := range series {
		for _, y := range s.Y {
			if y != 0 {
				return false
			}
		}
	}
	return true
}

// mergeIdentical draws per-GPU series with identical points as one line
// named after all of them (lines drawn on top of each other would hide all
// but the last), and returns a note for the title, or "" when nothing was
// merged.
func mergeIdentical(c *LineChart) string {
	var out []Series
	merged := 0
	for _, s := range c.Series {
		dup := -1
		for i, o := range out {
			if slices.Equal(o.X, s.X) && slices.Equal(o.Y, s.Y) {
				dup = i
				break
			}
		}
		if dup < 0 {
			out = append(out, s)
			continue
		}
		out[dup].Name += ", " + s.Name
		merged++
	}
	if merged == 0 {
		return ""
	}
	c.Series = out
	if len(out) == 1 {
		return fmt.Sprintf("all %d GPUs identical, one line", merged+1)
	}
	return "identical GPUs drawn as one line"
}

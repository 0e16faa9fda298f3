package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/perfmodel"
)

// Group is the error of a subset of a validation's points.
type Group struct {
	// Key names the subset ("tp=1", "conc 33-128", "vllm 0.13.0").
	Key    string `json:"key"`
	Points int    `json:"points"`
	// MAPE is the mean absolute percentage error per metric; MeanSigned the
	// mean of (predicted − measured) / measured × 100, negative when the
	// predictions are low (pessimistic for throughput, optimistic for
	// latencies).
	MAPE       map[string]float64 `json:"mape_percent"`
	MeanSigned map[string]float64 `json:"mean_signed_percent"`
}

// Breakdown groups a validation's rows by the key by returns, in order of
// first appearance unless the keys sort naturally (SortKeys).
func Breakdown(v Validation, by func(Point) string) []Group {
	idx := map[string]int{}
	var out []Group
	for _, r := range v.Rows {
		k := by(r.Point)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Group{Key: k, MAPE: map[string]float64{}, MeanSigned: map[string]float64{}})
		}
		g := &out[i]
		g.Points++
		for _, name := range MetricNames {
			e := r.ErrorPercent[name]
			g.MAPE[name] += math.Abs(e)
			g.MeanSigned[name] += e
		}
	}
	for i := range out {
		for _, name := range MetricNames {
			out[i].MAPE[name] /= float64(out[i].Points)
			out[i].MeanSigned[name] /= float64(out[i].Points)
		}
	}
	slices.SortStableFunc(out, func(a, b Group) int { return compareKeys(a.Key, b.Key) })
	return out
}

// compareKeys orders keys with a number after the same prefix numerically
// ("tp=2" before "tp=8", "conc 1-8" before "conc 9-32").
func compareKeys(a, b string) int {
	na, pa := leadingNumber(a)
	nb, pb := leadingNumber(b)
	if pa == pb && na >= 0 && nb >= 0 && na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// leadingNumber returns the first integer in s and the text before it.
func leadingNumber(s string) (int, string) {
	i := strings.IndexAny(s, "0123456789")
	if i < 0 {
		return -1, s
	}
	n := 0
	for _, c := range s[i:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n, s[:i]
}

// ByGPU groups points by GPU name, lower case.
func ByGPU(p Point) string { return strings.ToLower(p.GPU) }

// ByEngine groups points by engine version ("vllm 0.13.0"; "unstated" when
// the measurements do not say).
func ByEngine(p Point) string {
	if p.Server.Engine == "" {
		return "unstated"
	}
	return p.Server.Engine
}

// ConcurrencyBands are the upper bounds of the concurrency bands ByConcurrency
// reports: low (batch of a few sequences, weight streaming and fixed
// overheads dominate), middle, high (compute and attention grow).
var ConcurrencyBands = []int{8, 32}

// ByConcurrency groups points into the ConcurrencyBands ("conc 1-8",
// "conc 9-32", "conc 33+").
func ByConcurrency(p Point) string {
	lo := 1
	for _, hi := range ConcurrencyBands {
		if p.Concurrency <= hi {
			return fmt.Sprintf("conc %d-%d", lo, hi)
		}
		lo = hi + 1
	}
	return fmt.Sprintf("conc %d+", lo)
}

// HeldOut is the outcome of a leave-one-GPU-out validation: a fit on the
// points of every other GPU, checked on the points of the one left out.
type HeldOut struct {
	GPU string `json:"gpu"`
	// Fit is the fit on the other GPUs; its Validation is in-sample.
	Fit Result `json:"fit"`
	// Validation is the out-of-sample error on the held-out GPU.
	Validation Validation `json:"validation"`
	// Unidentified lists fitted factors that no training point exercises
	// (a kernel class only the held-out GPU runs): the held-out prediction
	// rests on their tie to another class (Fit.Tied) or their start values.
	Unidentified []string `json:"unidentified,omitempty"`
}

// LeaveGPUOut fits opts.Params on the points whose GPU is not gpu and
// validates the fit on the points whose GPU is. Both sets must be non-empty.
func LeaveGPUOut(ctx context.Context, points []Point, gpu string, opts Options) (HeldOut, error) {
	var train, test []Point
	for _, p := range points {
		if strings.EqualFold(p.GPU, gpu) {
			test = append(test, p)
		} else {
			train = append(train, p)
		}
	}
	if len(test) == 0 {
		return HeldOut{}, fmt.Errorf("leave out %s: no point was measured on it (GPUs: %s)", gpu, strings.Join(gpusOf(points), ", "))
	}
	if len(train) == 0 {
		return HeldOut{}, fmt.Errorf("leave out %s: no point of another GPU is left to fit", gpu)
	}
	res, err := Fit(ctx, train, opts)
	if err != nil {
		return HeldOut{}, fmt.Errorf("leave out %s: %w", gpu, err)
	}
	v, err := Validate(ctx, test, res.Factors, opts)
	if err != nil {
		return HeldOut{}, fmt.Errorf("leave out %s: %w", gpu, err)
	}
	return HeldOut{GPU: strings.ToLower(gpu), Fit: res, Validation: v, Unidentified: res.Unidentified}, nil
}

// GPUsOf lists the GPUs of a validation's points, lower case, in order of
// first appearance.
func GPUsOf(v Validation) []string {
	pts := make([]Point, len(v.Rows))
	for i, r := range v.Rows {
		pts[i] = r.Point
	}
	return gpusOf(pts)
}

func gpusOf(points []Point) []string {
	var out []string
	for _, p := range points {
		if g := strings.ToLower(p.GPU); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Unexercised returns the names among params that no point exercises: the
// expert-GEMM fractions of a kernel class no point runs (System.MoEClass),
// and the collective's factors when every point has TP = 1. A fit cannot
// identify them.
func Unexercised(points []Point, params []string, model string) ([]string, error) {
	classes := map[string]bool{}
	tp := false
	for _, p := range points {
		if p.Model == "" {
			p.Model = model
		}
		s, err := SystemFor(p, perfmodel.UncalibratedFactors)
		if err != nil {
			return nil, err
		}
		classes[s.MoEClass()] = true
		tp = tp || p.TensorParallel > 1
	}
	fp8 := classes["fp8"] || classes["fp4"]
	var out []string
	for _, n := range params {
		switch {
		case (n == "moe_compute" || n == "moe_memory") && !classes["bf16"],
			(n == "moe_fp8_compute" || n == "moe_fp8_memory") && !fp8,
			(n == "network" || n == "all_reduce_latency_seconds") && !tp:
			out = append(out, n)
		}
	}
	return out, nil
}

// EnvelopeOf is the envelope of operating conditions the points cover: their
// models, GPUs, engines, TP sizes, per-request prompt and output lengths (the
// uniform draw's range [RangeRatio·L, L] or the exact lengths), concurrency.
// Points of these benchmarks are single-turn and run without prefix caching
// (random token ids share no prefix), which is what the envelope records.
func EnvelopeOf(points []Point) perfmodel.Envelope {
	var e perfmodel.Envelope
	widen := func(r *perfmodel.IntRange, lo, hi int) {
		if r.Max == 0 || lo < r.Min {
			r.Min = lo
		}
		if hi > r.Max {
			r.Max = hi
		}
		if r.Min == 0 {
			r.Min = lo
		}
	}
	for _, p := range points {
		if m := strings.ToLower(p.Model); m != "" && !slices.Contains(e.Models, m) {
			e.Models = append(e.Models, m)
		}
		if g := strings.ToLower(p.GPU); !slices.Contains(e.GPUs, g) {
			e.GPUs = append(e.GPUs, g)
		}
		if en := ByEngine(p); !slices.Contains(e.Engines, en) {
			e.Engines = append(e.Engines, en)
		}
		widen(&e.TensorParallel, p.TensorParallel, p.TensorParallel)
		widen(&e.Concurrency, p.Concurrency, p.Concurrency)
		if len(p.InputLens) > 0 {
			widen(&e.PromptTokens, slices.Min(p.InputLens), slices.Max(p.InputLens))
			widen(&e.OutputTokens, slices.Min(p.OutputLens), slices.Max(p.OutputLens))
		} else {
			widen(&e.PromptTokens, max(1, int(p.RangeRatio*float64(p.InputLen))), p.InputLen)
			widen(&e.OutputTokens, max(1, int(p.RangeRatio*float64(p.OutputLen))), p.OutputLen)
		}
	}
	slices.Sort(e.Models)
	slices.Sort(e.GPUs)
	slices.Sort(e.Engines)
	e.PrefixCaching = []bool{false}
	return e
}

package trace

import (
	"cmp"
	"errors"
	"slices"
	"strings"
)

// DefaultTopKernels is how many kernels Analyze lists per category.
const DefaultTopKernels = 5

// Options tune Analyze. The zero value uses the defaults.
type Options struct {
	// TopKernels is how many kernels to list per category (0: DefaultTopKernels).
	TopKernels int
	// StragglerSpread is the relative spread of communication time across GPUs
	// above which Analyze names a suspected straggler (0: DefaultStragglerSpread).
	StragglerSpread float64
}

// KernelTime is one kernel name's contribution.
type KernelTime struct {
	Name     string   `json:"name"`
	Category Category `json:"category"`
	// Rule is the rule that categorised the kernel; empty for other.
	Rule   string `json:"rule,omitempty"`
	Count  int64  `json:"count"`
	TimeNS int64  `json:"time_ns"`
	// Share is TimeNS over the summed time of the enclosing scope: the
	// category for top kernels, all kernels for unknown kernels.
	Share float64 `json:"share"`
}

// CategoryTime is one category's time in a scope (one GPU or all of them).
type CategoryTime struct {
	Name   Category `json:"name"`
	TimeNS int64    `json:"time_ns"`
	// Share is TimeNS over the scope's summed kernel time (the GPU-active time
	// split). Shares of a scope add up to 1.
	Share float64 `json:"share"`
	Count int64   `json:"count"`
	// TopKernels are the category's largest kernels by time.
	TopKernels []KernelTime `json:"top_kernels,omitempty"`
}

// GPUBreakdown is the breakdown of one device.
type GPUBreakdown struct {
	Device     int            `json:"device"`
	Name       string         `json:"name,omitempty"`
	Categories []CategoryTime `json:"categories"`
	// KernelTimeNS sums all activity durations; it exceeds BusyNS by the time
	// activities overlapped on concurrent streams.
	KernelTimeNS int64 `json:"kernel_time_ns"`
	BusyNS       int64 `json:"busy_ns"`
	WindowNS     int64 `json:"window_ns"`
	// IdleFraction is the share of the window with nothing running on the GPU.
	IdleFraction float64 `json:"idle_fraction"`
	// GraphKernels counts the kernel launches that were CUDA graph nodes.
	GraphKernels int64 `json:"graph_kernels"`
}

// Breakdown is where the GPU time went.
type Breakdown struct {
	Source string `json:"source"`
	Window Window `json:"window"`
	// Categories is the split over all GPUs, in the canonical order.
	Categories   []CategoryTime `json:"categories"`
	KernelTimeNS int64          `json:"kernel_time_ns"`
	// GPUs is the per-device split; empty when the source has no devices
	// (an nsys stats summary).
	GPUs []GPUBreakdown `json:"gpus"`
	// UnknownKernels are the kernels no rule matched (category other),
	// largest first.
	UnknownKernels []KernelTime `json:"unknown_kernels"`
	// Imbalance compares communication wait across GPUs; nil with fewer than
	// two GPUs.
	Imbalance *Imbalance `json:"rank_imbalance,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
}

// Category returns the overall entry for c.
func (b *Breakdown) Category(c Category) CategoryTime {
	for _, ct := range b.Categories {
		if ct.Name == c {
			return ct
		}
	}
	return CategoryTime{Name: c}
}

// Analyze categorises every kernel of p with rules and computes the breakdown.
func Analyze(p *Profile, rules *RuleSet, opt Options) (*Breakdown, error) {
	if p == nil || rules == nil {
		return nil, errors.New("analyze trace: nil profile or rules")
	}
	if opt.TopKernels <= 0 {
		opt.TopKernels = DefaultTopKernels
	}
	if opt.StragglerSpread <= 0 {
		opt.StragglerSpread = DefaultStragglerSpread
	}
	b := &Breakdown{
		Source:         p.Source,
		Window:         p.Window,
		GPUs:           []GPUBreakdown{},
		UnknownKernels: []KernelTime{},
		Warnings:       slices.Clone(p.Warnings),
	}
	overall := newAccumulator()
	for _, d := range p.Devices {
		acc := newAccumulator()
		for _, k := range d.Kernels {
			if k.TimeNS < 0 || k.Count < 0 {
				return nil, errors.New("analyze trace: negative kernel time or count for " + k.Name)
			}
			cat, rule := rules.Classify(k.Name)
			acc.add(k, cat, rule)
			overall.add(k, cat, rule)
		}
		if d.Device == AllDevices {
			continue
		}
		var graph int64
		for _, k := range d.Kernels {
			graph += k.GraphCount
		}
		g := GPUBreakdown{
			GraphKernels: graph,
			Device:       d.Device,
			Name:         d.Name,
			Categories:   acc.categories(0),
			KernelTimeNS: acc.total,
			BusyNS:       d.BusyNS,
			WindowNS:     p.Window.DurationNS(),
		}
		if g.WindowNS > 0 {
			g.IdleFraction = clamp01(float64(g.WindowNS-d.BusyNS) / float64(g.WindowNS))
		}
		b.GPUs = append(b.GPUs, g)
	}
	slices.SortFunc(b.GPUs, func(x, y GPUBreakdown) int { return cmp.Compare(x.Device, y.Device) })
	b.Categories = overall.categories(opt.TopKernels)
	b.KernelTimeNS = overall.total
	for _, k := range overall.sortedKernels(Other) {
		k.Share = share(k.TimeNS, overall.total)
		b.UnknownKernels = append(b.UnknownKernels, k)
	}
	b.Imbalance = imbalance(b.GPUs, opt.StragglerSpread)
	return b, nil
}

// accumulator sums kernel stats by category and by (category, name).
type accumulator struct {
	total   int64
	byCat   map[Category]*CategoryTime
	kernels map[string]*KernelTime
}

func newAccumulator() *accumulator {
	return &accumulator{byCat: map[Category]*CategoryTime{}, kernels: map[string]*KernelTime{}}
}

func (a *accumulator) add(k KernelStat, cat Category, rule string) {
	a.total += k.TimeNS
	ct := a.byCat[cat]
	if ct == nil {
		ct = &CategoryTime{Name: cat}
		a.byCat[cat] = ct
	}
	ct.TimeNS += k.TimeNS
	ct.Count += k.Count
	kt := a.kernels[k.Name]
	if kt == nil {
		kt = &KernelTime{Name: k.Name, Category: cat, Rule: rule}
		a.kernels[k.Name] = kt
	}
	kt.TimeNS += k.TimeNS
	kt.Count += k.Count
}

// categories returns every canonical category (zero ones included, so that
// breakdowns line up) with shares and up to top kernels each.
func (a *accumulator) categories(top int) []CategoryTime {
	out := make([]CategoryTime, 0, len(Categories))
	for _, c := range Categories {
		ct := CategoryTime{Name: c}
		if p := a.byCat[c]; p != nil {
			ct = *p
		}
		ct.Share = share(ct.TimeNS, a.total)
		if top > 0 {
			for _, k := range a.sortedKernels(c) {
				if len(ct.TopKernels) == top {
					break
				}
				k.Share = share(k.TimeNS, ct.TimeNS)
				ct.TopKernels = append(ct.TopKernels, k)
			}
		}
		out = append(out, ct)
	}
	return out
}

// sortedKernels returns the kernels of category c, largest time first, ties
// by name so that output is deterministic.
func (a *accumulator) sortedKernels(c Category) []KernelTime {
	var ks []KernelTime
	for _, k := range a.kernels {
		if k.Category == c {
			ks = append(ks, *k)
		}
	}
	slices.SortFunc(ks, func(x, y KernelTime) int {
		if c := cmp.Compare(y.TimeNS, x.TimeNS); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	return ks
}

func share(part, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(part) / float64(total)
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

package telemetry

import (
	"sort"
	"time"
)

// Straggler detection defaults.
const (
	// DefaultClockFraction flags a GPU whose SM clock is more than 10 %
	// below the median of its tensor-parallel peers'.
	DefaultClockFraction = 0.10
	// DefaultSlowdownMask holds the reasons that slow a GPU against its
	// peers' will: hardware slowdown, software and hardware thermal
	// slowdown, and the external power brake. The software power cap is left
	// out: every GPU of a busy group reaches it together.
	DefaultSlowdownMask = ReasonHWSlowdown | ReasonSWThermalSlowdown | ReasonHWThermalSlowdown | ReasonHWPowerBrakeSlowdown
	// DefaultMinSamples is how many consecutive flagged samples make a
	// straggler window.
	DefaultMinSamples = 1
	// DefaultMaxChartPoints keeps a chart of an hour at 1 s resolution to
	// 5 s buckets: enough for a report, small enough to embed.
	DefaultMaxChartPoints = 720
)

// DeriveOptions configure Window's derivations. Zero fields take the
// defaults.
type DeriveOptions struct {
	// ClockFraction is how far below its peers' median SM clock a GPU may
	// run before it is flagged (0.10 = 10 %).
	ClockFraction float64 `json:"clock_fraction"`
	// SlowdownMask selects the clock event reason bits that flag a GPU.
	SlowdownMask uint64 `json:"slowdown_mask"`
	// TPSize splits each node's GPUs, in index order, into tensor-parallel
	// groups of this size; zero makes every GPU of a node one group.
	TPSize int `json:"tp_size"`
	// MinSamples is the least number of consecutive flagged samples
	// reported as a straggler window.
	MinSamples int `json:"min_samples"`
	// MaxChartPoints bounds each chart series; longer ones are averaged
	// into this many buckets of equal count. Zero means DefaultMaxChartPoints.
	MaxChartPoints int `json:"max_chart_points"`
}

func (o DeriveOptions) withDefaults() DeriveOptions {
	if o.ClockFraction <= 0 || o.ClockFraction >= 1 {
		o.ClockFraction = DefaultClockFraction
	}
	if o.SlowdownMask == 0 {
		o.SlowdownMask = DefaultSlowdownMask
	}
	if o.MinSamples <= 0 {
		o.MinSamples = DefaultMinSamples
	}
	if o.MaxChartPoints <= 0 {
		o.MaxChartPoints = DefaultMaxChartPoints
	}
	return o
}

// Straggler is a GPU that ran slower than its tensor-parallel group for a
// stretch of the window. The whole group waits for it at every collective, so
// one straggler slows every request the group serves.
type Straggler struct {
	Target string    `json:"target"`
	Host   string    `json:"host,omitempty"`
	GPU    string    `json:"gpu"`
	UUID   string    `json:"uuid,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	// Samples is the number of flagged samples in the stretch.
	Samples int `json:"samples"`
	// Reasons lists "sm_clock_below_peers" when the clock rule fired and the
	// names of the slowdown reason bits seen.
	Reasons []string `json:"reasons"`
	// ClockMHz and PeerMedianMHz are means over the stretch's samples where
	// peers were compared; MinClockRatio is the lowest clock/median ratio.
	ClockMHz      float64 `json:"sm_clock_mhz"`
	PeerMedianMHz float64 `json:"peer_median_mhz"`
	MinClockRatio float64 `json:"min_clock_ratio"`
}

// Name is the GPU's short display name.
func (s Straggler) Name() string { return gpuKeyOf(s.Target, s.Host, s.GPU, s.UUID).String() }

// gpuState is one GPU's clock and reasons at one instant.
type gpuState struct {
	clock, reasons       float64
	hasClock, hasReasons bool
}

// stragglers flags GPUs, instant by instant, and merges consecutive flagged
// instants of a GPU into windows.
func (s *Store) stragglers(lo, hi int64, opts DeriveOptions) []Straggler {
	states := make(map[gpuKey]map[int64]*gpuState)
	at := func(k gpuKey, t int64) *gpuState {
		m := states[k]
		if m == nil {
			m = make(map[int64]*gpuState)
			states[k] = m
		}
		st := m[t]
		if st == nil {
			st = &gpuState{}
			m[t] = st
		}
		return st
	}
	for k, pts := range s.gpuSeries(DCGMSMClock, lo, hi) {
		for _, p := range pts {
			st := at(k, p.T.UnixNano())
			st.clock, st.hasClock = p.V, true
		}
	}
	for k, pts := range s.gpuSeries(DCGMClockReasons, lo, hi) {
		for _, p := range pts {
			st := at(k, p.T.UnixNano())
			st.reasons, st.hasReasons = p.V, true
		}
	}
	var out []Straggler
	for _, group := range tpGroups(states, opts.TPSize) {
		for _, k := range group {
			out = append(out, flagGPU(k, group, states, opts)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// tpGroups splits GPUs into tensor-parallel groups: per target and host, in
// index order, tpSize at a time (all of a node's GPUs when tpSize is zero).
func tpGroups(states map[gpuKey]map[int64]*gpuState, tpSize int) [][]gpuKey {
	nodes := make(map[[2]string][]gpuKey)
	for k := range states {
		n := [2]string{k.target, k.host}
		nodes[n] = append(nodes[n], k)
	}
	var groups [][]gpuKey
	for _, ks := range nodes {
		sort.Slice(ks, func(i, j int) bool { return lessGPU(ks[i], ks[j]) })
		size := tpSize
		if size <= 0 {
			size = len(ks)
		}
		for i := 0; i < len(ks); i += size {
			groups = append(groups, ks[i:min(i+size, len(ks))])
		}
	}
	sort.Slice(groups, func(i, j int) bool { return lessGPU(groups[i][0], groups[j][0]) })
	return groups
}

// flagGPU walks one GPU's instants and returns its straggler windows.
func flagGPU(k gpuKey, group []gpuKey, states map[gpuKey]map[int64]*gpuState, opts DeriveOptions) []Straggler {
	mine := states[k]
	times := make([]int64, 0, len(mine))
	for t := range mine {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })

	var out []Straggler
	var cur *Straggler
	var reasons uint64
	var slowClock bool
	var clockSum, medianSum float64
	compared := 0
	closeCur := func() {
		if cur != nil && cur.Samples >= opts.MinSamples {
			if slowClock {
				cur.Reasons = append(cur.Reasons, "sm_clock_below_peers")
			}
			cur.Reasons = append(cur.Reasons, ReasonNames(reasons&opts.SlowdownMask)...)
			if compared > 0 {
				cur.ClockMHz, cur.PeerMedianMHz = clockSum/float64(compared), medianSum/float64(compared)
			} else {
				cur.MinClockRatio = 0
			}
			out = append(out, *cur)
		}
		cur, reasons, slowClock, clockSum, medianSum, compared = nil, 0, false, 0, 0, 0
	}
	for _, t := range times {
		st := mine[t]
		var bits uint64
		if st.hasReasons {
			bits = uint64(st.reasons)
		}
		throttled := bits&opts.SlowdownMask != 0
		slow, median, ok := false, 0.0, false
		// An idle GPU drops its clock on purpose; that is no straggler.
		if st.hasClock && bits&ReasonGPUIdle == 0 {
			median, ok = peerMedian(k, group, states, t)
			slow = ok && median > 0 && st.clock < (1-opts.ClockFraction)*median
		}
		if !throttled && !slow {
			closeCur()
			continue
		}
		if cur == nil {
			cur = &Straggler{Target: k.target, Host: k.host, GPU: k.gpu, UUID: k.uuid, Start: time.Unix(0, t).UTC(), MinClockRatio: 1}
		}
		cur.End = time.Unix(0, t).UTC()
		cur.Samples++
		reasons |= bits
		slowClock = slowClock || slow
		if ok && median > 0 {
			clockSum += st.clock
			medianSum += median
			compared++
			cur.MinClockRatio = min(cur.MinClockRatio, st.clock/median)
		}
	}
	closeCur()
	return out
}

// peerMedian is the median SM clock at instant t of the other GPUs of the
// group that report one and are not idle.
func peerMedian(self gpuKey, group []gpuKey, states map[gpuKey]map[int64]*gpuState, t int64) (float64, bool) {
	var v []float64
	for _, k := range group {
		if k == self {
			continue
		}
		st := states[k][t]
		if st == nil || !st.hasClock || st.hasReasons && uint64(st.reasons)&ReasonGPUIdle != 0 {
			continue
		}
		v = append(v, st.clock)
	}
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	return quantileSorted(v, 0.5), true
}

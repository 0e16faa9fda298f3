package sim

import (
	"math"

	"github.com/spoc-project/spoc/perfmodel"
)

// Throttle reason bits as NVML and DCGM_FI_DEV_CLOCK_THROTTLE_REASONS report
// them.
const (
	ThrottleGPUIdle           uint64 = 0x1
	ThrottleHWSlowdown        uint64 = 0x8
	ThrottleHWThermalSlowdown uint64 = 0x40
)

// Thermal model constants: a first-order response of die temperature to
// power, reaching ambient + power×resistance with time constant tau. They
// give ~80 °C at TDP, typical of air-cooled HGX H100 under load; they shape
// telemetry only and never feed back into step times.
const (
	ambientC       = 30.0
	thermalTauS    = 20.0
	idlePowerShare = 0.10
)

// GPUSample is one GPU over one sampling interval, in the units
// dcgm-exporter reports.
type GPUSample struct {
	GPU             int     `json:"gpu"`
	SMActive        float64 `json:"sm_active"`     // DCGM_FI_PROF_SM_ACTIVE, 0–1: time an SM holds ≥ 1 warp, mean over SMs
	DRAMActive      float64 `json:"dram_active"`   // DCGM_FI_PROF_DRAM_ACTIVE, 0–1
	TensorActive    float64 `json:"tensor_active"` // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0–1
	Util            float64 `json:"util_percent"`  // DCGM_FI_DEV_GPU_UTIL: % of time ≥ 1 kernel executes
	SMClockMHz      float64 `json:"sm_clock_mhz"`  // DCGM_FI_DEV_SM_CLOCK
	TemperatureC    float64 `json:"temperature_c"` // DCGM_FI_DEV_GPU_TEMP
	PowerWatts      float64 `json:"power_watts"`   // DCGM_FI_DEV_POWER_USAGE
	FBUsedMiB       float64 `json:"fb_used_mib"`   // DCGM_FI_DEV_FB_USED
	ThrottleReasons uint64  `json:"throttle_reasons"`
}

// EngineSample is the engine state at the end of one sampling interval,
// summed over replicas. Counters are cumulative since the start, like the
// Prometheus counters they mirror.
type EngineSample struct {
	T                float64     `json:"t_s"` // seconds since the start of the run
	Running          int         `json:"running"`
	Waiting          int         `json:"waiting"`
	KVUsage          float64     `json:"kv_cache_usage"` // mean over replicas, 0–1
	PrefixQueries    int64       `json:"prefix_cache_queries"`
	PrefixHits       int64       `json:"prefix_cache_hits"`
	Preemptions      int64       `json:"preemptions"`
	PromptTokens     int64       `json:"prompt_tokens"`
	GenerationTokens int64       `json:"generation_tokens"`
	GPUs             []GPUSample `json:"gpus"`
}

// Series is the engine and GPU time series of a run, one sample per
// interval of engine time.
type Series struct {
	IntervalSeconds float64        `json:"interval_s"`
	Samples         []EngineSample `json:"samples"`
}

// gpuWindow accumulates one GPU's activity over one interval.
type gpuWindow struct {
	busy, kernel, sm, dram, tensor, power float64
}

// Monitor turns the steps each replica of a Cluster runs into
// per-interval GPU counters (what dcgm-exporter would report) and samples
// engine state. Steps are added when they are planned (their duration is
// known then), split across interval boundaries; an interval is closed
// once the clock passes its end. The clock is the caller's: virtual time
// in RunVirtual, scaled wall-clock time in the HTTP server.
type Monitor struct {
	c        *Cluster
	interval float64
	tp       int
	ring     [][]gpuWindow // [slot][gpu], slot = interval index mod len
	next     int           // index of the next interval to close
	temps    []float64
	fbMiB    float64
	series   Series
	keep     bool // append samples to series
	last     EngineSample
	// aggregates over samples after from (the measured window)
	from                    float64
	n, kvSum, kvPeak, smSum float64
	gpuN                    float64
}

const monitorSlots = 16

// NewMonitor returns a monitor of c that samples every interval seconds
// of engine time and keeps only the latest sample (see Latest).
func NewMonitor(c *Cluster, interval float64) *Monitor { return newMonitor(c, interval, false, 0) }

// newMonitor also keeps every sample in series when keep is set, and
// aggregates the samples after from (the measured window).
func newMonitor(c *Cluster, interval float64, keep bool, from float64) *Monitor {
	gpus := len(c.engines) * max(c.dep.TensorParallelSize, 1)
	m := &Monitor{c: c, interval: interval, tp: max(c.dep.TensorParallelSize, 1), keep: keep, from: from}
	m.ring = make([][]gpuWindow, monitorSlots)
	for i := range m.ring {
		m.ring[i] = make([]gpuWindow, gpus)
	}
	m.temps = make([]float64, gpus)
	for i := range m.temps {
		m.temps[i] = ambientC + idlePowerShare*c.dep.GPU.TDPWatts*thermalResistance(c.dep.GPU)
	}
	m.fbMiB = c.dep.Params.GPUMemoryUtilization * c.dep.GPU.HBMBytes / (1 << 20)
	m.series.IntervalSeconds = interval
	return m
}

func thermalResistance(g perfmodel.GPU) float64 {
	if g.TDPWatts <= 0 {
		return 0
	}
	return 50 / g.TDPWatts // °C per W: +50 °C over ambient at TDP
}

// AddStep records a step of replica r over [s.Start, s.Start+s.Seconds).
func (m *Monitor) AddStep(r int, s *StepInfo) {
	start, end := s.Start, s.Start+s.Seconds
	// The cost's fractions are of the step as priced (Cost.Seconds); async
	// scheduling hid the CPU part of it, so rescale them to the step as it
	// ran: busy seconds are the same, the step is shorter.
	scale := 1.0
	if s.Seconds > 0 && s.Cost.Seconds > 0 {
		scale = s.Cost.Seconds / s.Seconds
	}
	frac := func(f float64) float64 { return min(1, f*scale) }
	kernel, sm, dram, tensor := frac(s.Cost.KernelActive), frac(s.Cost.SMActive), frac(s.Cost.DRAMActive), frac(s.Cost.TensorActive)
	idx := int(start / m.interval)
	if idx < m.next {
		idx = m.next
	}
	for t := start; t < end && idx < m.next+monitorSlots; idx++ {
		wEnd := float64(idx+1) * m.interval
		d := min(end, wEnd) - t
		if d > 0 {
			slot := m.ring[idx%monitorSlots]
			for g := r * m.tp; g < (r+1)*m.tp; g++ {
				w := &slot[g]
				w.busy += d
				w.kernel += d * kernel
				w.sm += d * sm
				w.dram += d * dram
				w.tensor += d * tensor
				w.power += d * s.Cost.PowerWatts
			}
		}
		t = wEnd
	}
}

// Advance closes every interval that ends at or before now.
func (m *Monitor) Advance(now float64) {
	for float64(m.next+1)*m.interval <= now {
		m.close()
	}
}

func (m *Monitor) close() {
	slot := m.ring[m.next%monitorSlots]
	t := float64(m.next+1) * m.interval
	s := EngineSample{T: t, GPUs: make([]GPUSample, len(slot))}
	for _, e := range m.c.engines {
		st := e.Stats()
		s.Running += e.NumRunning()
		s.Waiting += e.NumWaiting()
		s.KVUsage += e.KVUsage() / float64(len(m.c.engines))
		s.PrefixQueries += st.PrefixQueries
		s.PrefixHits += st.PrefixHits
		s.Preemptions += st.Preemptions
		s.PromptTokens += st.PromptTokens
		s.GenerationTokens += st.GenerationTokens
	}
	gpu := m.c.dep.GPU
	for g := range slot {
		w := &slot[g]
		clock := m.clockAt(g, t-m.interval/2)
		idleW := idlePowerShare * gpu.TDPWatts
		power := (w.power + (m.interval-math.Min(w.busy, m.interval))*idleW) / m.interval
		// First-order thermal response over the interval.
		target := ambientC + power*thermalResistance(gpu)
		m.temps[g] = target + (m.temps[g]-target)*math.Exp(-m.interval/thermalTauS)
		var reasons uint64
		if w.busy < 0.01*m.interval {
			reasons |= ThrottleGPUIdle
		}
		if clock < 1 {
			reasons |= ThrottleHWSlowdown | ThrottleHWThermalSlowdown
		}
		s.GPUs[g] = GPUSample{
			GPU:             g,
			SMActive:        math.Min(1, w.sm/m.interval),
			DRAMActive:      math.Min(1, w.dram/m.interval),
			TensorActive:    math.Min(1, w.tensor/m.interval),
			Util:            math.Round(100 * math.Min(1, w.kernel/m.interval)),
			SMClockMHz:      math.Round(gpu.BoostClockMHz * clock),
			TemperatureC:    math.Round(m.temps[g]),
			PowerWatts:      power,
			FBUsedMiB:       math.Round(m.fbMiB),
			ThrottleReasons: reasons,
		}
		*w = gpuWindow{}
	}
	m.last = s
	if t > m.from {
		m.n++
		m.kvSum += s.KVUsage
		m.kvPeak = math.Max(m.kvPeak, s.KVUsage)
		for _, g := range s.GPUs {
			m.smSum += g.SMActive
			m.gpuN++
		}
	}
	if m.keep {
		m.series.Samples = append(m.series.Samples, s)
	}
	m.next++
}

// clockAt is GPU g's clock fraction at engine time t.
func (m *Monitor) clockAt(g int, t float64) float64 {
	c := 1.0
	for _, th := range m.c.dep.Throttles {
		if th.GPU == g && th.activeAt(t) {
			c = math.Min(c, th.ClockFactor)
		}
	}
	return c
}

// Latest is the sample of the last closed interval, or one of idle GPUs
// before the first interval closes.
func (m *Monitor) Latest() EngineSample {
	if len(m.last.GPUs) == 0 {
		return m.idle()
	}
	return m.last
}

// idle is a sample of idle GPUs, reported before the first interval closes.
func (m *Monitor) idle() EngineSample {
	gpu := m.c.dep.GPU
	s := EngineSample{GPUs: make([]GPUSample, len(m.temps))}
	for g := range s.GPUs {
		s.GPUs[g] = GPUSample{GPU: g, SMClockMHz: gpu.BoostClockMHz, TemperatureC: math.Round(m.temps[g]),
			PowerWatts: idlePowerShare * gpu.TDPWatts, FBUsedMiB: math.Round(m.fbMiB), ThrottleReasons: ThrottleGPUIdle}
	}
	return s
}

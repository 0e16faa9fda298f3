package loadgen

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/spoc-project/spoc/result"
)

const (
	schedLatencyMetric = "/sched/latencies:seconds"
	gcCyclesMetric     = "/gc/cycles/total:gc-cycles"
	gcCPUMetric        = "/cpu/classes/gc/total:cpu-seconds"
)

// healthProbe measures the client process over the measured window: CPU
// time used against the cores it may use, and the Go runtime's goroutine
// scheduling latency (time runnable goroutines waited for a thread), which
// rises before dispatch lag does when the client runs out of CPU.
type healthProbe struct {
	mu      sync.Mutex
	started bool
	wall    time.Time
	cpu     time.Duration
	sched   *metrics.Float64Histogram
	gc      gcSample
}

// gcSample is the runtime's cumulative GC count and GC CPU estimate.
type gcSample struct {
	cycles uint64
	gcCPU  float64
}

func readGC() gcSample {
	s := []metrics.Sample{{Name: gcCyclesMetric}, {Name: gcCPUMetric}}
	metrics.Read(s)
	var g gcSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		g.gcCPU = s[1].Value.Float64()
	}
	return g
}

func newHealthProbe() *healthProbe { return &healthProbe{} }

func readSched() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedLatencyMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := s[0].Value.Float64Histogram()
	return &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
}

func (p *healthProbe) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = true
	p.wall = time.Now()
	p.cpu = processCPUTime()
	p.sched = readSched()
	p.gc = readGC()
}

// end returns the measurement since begin (or an empty one when the run never
// reached the measured window).
func (p *healthProbe) end() result.ClientHealth {
	p.mu.Lock()
	defer p.mu.Unlock()
	cores := float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
	if limit := cpuLimit(); limit > 0 {
		cores = min(cores, limit) // a cgroup quota below the threads
	}
	h := result.ClientHealth{CPUCores: cores}
	if !p.started {
		return h
	}
	wall := time.Since(p.wall)
	if cpu := processCPUTime(); cpu > 0 && wall > 0 {
		h.CPUUtilization = (cpu - p.cpu).Seconds() / wall.Seconds() / cores
	}
	if now := readSched(); now != nil && p.sched != nil && len(now.Counts) == len(p.sched.Counts) {
		h.SchedLatencyP99Ms = histQuantile(p.sched, now, 0.99) * 1000
	}
	// The runtime updates its CPU estimates when a cycle ends, so the GC CPU
	// difference is that of the cycles completed in the window; it is
	// divided by the window's own capacity (the runtime's total moves in
	// steps at cycle ends, not with the window).
	g := readGC()
	h.GCCycles = int64(g.cycles - p.gc.cycles)
	if capacity := wall.Seconds() * cores; capacity > 0 {
		h.GCCPUShare = (g.gcCPU - p.gc.gcCPU) / capacity
	}
	return h
}

// histQuantile is the q-quantile of the difference of two cumulative
// runtime histograms, reported as the upper edge of its bucket.
func histQuantile(before, after *metrics.Float64Histogram, q float64) float64 {
	var total uint64
	diff := make([]uint64, len(after.Counts))
	for i := range diff {
		diff[i] = after.Counts[i] - before.Counts[i]
		total += diff[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q * float64(total))
	var cum uint64
	for i, c := range diff {
		cum += c
		if cum > rank {
			hi := after.Buckets[i+1]
			if hi > 1e9 { // +Inf edge
				hi = after.Buckets[i]
			}
			return hi
		}
	}
	return after.Buckets[len(after.Buckets)-1]
}

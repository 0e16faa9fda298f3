package telemetry

import (
	"math"
	"sort"
	"time"
)

// Signals are the telemetry of one run window, ready to render: per-window
// aggregates of the engine and of each GPU, the stragglers found, the time
// series behind the charts, and the gaps in collection. Values a window has no
// data for are zero with a zero sample count; JSON never carries NaN.
type Signals struct {
	Start      time.Time     `json:"start"`
	End        time.Time     `json:"end"`
	Engine     EngineSignals `json:"engine"`
	GPUs       []GPUSignals  `json:"gpus,omitempty"`
	Stragglers []Straggler   `json:"stragglers,omitempty"`
	Charts     []ChartSeries `json:"charts,omitempty"`
	Gaps       []Gap         `json:"gaps,omitempty"`
}

// Stat summarises a gauge over a window.
type Stat struct {
	Samples int     `json:"samples"`
	Mean    float64 `json:"mean"`
	Min     float64 `json:"min"`
	P50     float64 `json:"p50"`
	Max     float64 `json:"max"`
}

// Quantiles summarise a server-side latency histogram over a window, from the
// increase of its buckets between the window's edges.
type Quantiles struct {
	Count float64 `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// EngineSignals aggregate every vLLM series in the window: request gauges are
// summed across engines and targets at each instant, KV-cache usage averaged,
// counters and histograms summed over their increase.
type EngineSignals struct {
	Running      Stat `json:"running"`
	Waiting      Stat `json:"waiting"`
	KVCacheUsage Stat `json:"kv_cache_usage"`
	// PrefixCacheHitRate is increase(hits)/increase(queries), in tokens; zero
	// when PrefixCacheQueries is zero.
	PrefixCacheHitRate float64   `json:"prefix_cache_hit_rate"`
	PrefixCacheQueries float64   `json:"prefix_cache_queries"`
	PrefixCacheHits    float64   `json:"prefix_cache_hits"`
	Preemptions        float64   `json:"preemptions"`
	PromptTokens       float64   `json:"prompt_tokens"`
	GenerationTokens   float64   `json:"generation_tokens"`
	RequestsSucceeded  float64   `json:"requests_succeeded"`
	TTFT               Quantiles `json:"ttft_seconds"`
	ITL                Quantiles `json:"itl_seconds"`
	E2E                Quantiles `json:"e2e_seconds"`
	QueueTime          Quantiles `json:"queue_time_seconds"`
}

// ChartSeries is one line of a chart: a signal over time, for the engine as a
// whole or for one GPU.
type ChartSeries struct {
	Signal string  `json:"signal"`
	GPU    string  `json:"gpu,omitempty"`
	Unit   string  `json:"unit"`
	Points []Point `json:"points"`
}

// Window derives the signals of [start, end] from the store.
func (s *Store) Window(start, end time.Time, opts DeriveOptions) Signals {
	opts = opts.withDefaults()
	sig := Signals{Start: start.UTC(), End: end.UTC()}
	lo, hi := start.UnixNano(), end.UnixNano()

	running := aggregate(s.byName(VLLMRunning), lo, hi, false)
	waiting := aggregate(s.byName(VLLMWaiting), lo, hi, false)
	kv := aggregate(s.byName(VLLMKVCacheUsage), lo, hi, true)
	e := &sig.Engine
	e.Running, e.Waiting, e.KVCacheUsage = stat(running), stat(waiting), stat(kv)

	hits := increments(s.byName(VLLMPrefixHits), lo, hi)
	queries := increments(s.byName(VLLMPrefixQueries), lo, hi)
	e.PrefixCacheHits, e.PrefixCacheQueries = total(hits), total(queries)
	if e.PrefixCacheQueries > 0 {
		e.PrefixCacheHitRate = e.PrefixCacheHits / e.PrefixCacheQueries
	}
	preempt := increments(s.byName(VLLMPreemptions), lo, hi)
	prompt := increments(s.byName(VLLMPromptTokens), lo, hi)
	gen := increments(s.byName(VLLMGenerationTokens), lo, hi)
	e.Preemptions, e.PromptTokens, e.GenerationTokens = total(preempt), total(prompt), total(gen)
	e.RequestsSucceeded = total(increments(s.byName(VLLMRequestSuccess), lo, hi))
	e.TTFT = s.quantiles(VLLMTTFT, lo, hi)
	e.ITL = s.quantiles(VLLMITL, lo, hi)
	e.E2E = s.quantiles(VLLME2E, lo, hi)
	e.QueueTime = s.quantiles(VLLMQueueTime, lo, hi)

	for _, c := range []ChartSeries{
		{Signal: "running", Unit: "requests", Points: running},
		{Signal: "waiting", Unit: "requests", Points: waiting},
		{Signal: "kv_cache_usage", Unit: "ratio", Points: kv},
		{Signal: "prefix_cache_hit_rate", Unit: "ratio", Points: ratioPoints(hits, queries)},
		{Signal: "prompt_tokens_per_second", Unit: "tokens/s", Points: ratePoints(prompt)},
		{Signal: "generation_tokens_per_second", Unit: "tokens/s", Points: ratePoints(gen)},
		{Signal: "preemptions", Unit: "preemptions", Points: stepPoints(preempt)},
	} {
		if len(c.Points) > 0 {
			sig.Charts = append(sig.Charts, c)
		}
	}

	gpus, charts := s.gpuSignals(lo, hi, opts)
	sig.GPUs = gpus
	sig.Charts = append(sig.Charts, charts...)
	for i := range sig.Charts {
		sig.Charts[i].Points = downsample(sig.Charts[i].Points, opts.MaxChartPoints)
	}
	sig.Stragglers = s.stragglers(lo, hi, opts)
	for _, g := range s.Gaps() {
		if !g.End.Before(start) && !g.Start.After(end) {
			sig.Gaps = append(sig.Gaps, g)
		}
	}
	return sig
}

// downsample averages p into at most n points, each the mean of an equal
// run of consecutive points, stamped with the run's last time.
func downsample(p []Point, n int) []Point {
	if n <= 0 || len(p) <= n {
		return p
	}
	out := make([]Point, 0, n)
	for i := 0; i < n; i++ {
		lo, hi := i*len(p)/n, (i+1)*len(p)/n
		sum := 0.0
		for _, x := range p[lo:hi] {
			sum += x.V
		}
		out = append(out, Point{T: p[hi-1].T, V: sum / float64(hi-lo)})
	}
	return out
}

// inWindow returns the points of p with lo ≤ t ≤ hi.
func inWindow(p []Point, lo, hi int64) []Point {
	i := sort.Search(len(p), func(i int) bool { return p[i].T.UnixNano() >= lo })
	j := sort.Search(len(p), func(i int) bool { return p[i].T.UnixNano() > hi })
	return p[i:j]
}

// aggregate sums (or averages) the series' values at each instant of the
// window. Series scraped in one round, or returned by one query_range, share
// their timestamps.
func aggregate(series []Series, lo, hi int64, mean bool) []Point {
	sum := make(map[int64]float64)
	n := make(map[int64]int)
	for _, sr := range series {
		for _, p := range inWindow(sr.Points, lo, hi) {
			t := p.T.UnixNano()
			sum[t] += p.V
			n[t]++
		}
	}
	out := make([]Point, 0, len(sum))
	for t, v := range sum {
		if mean {
			v /= float64(n[t])
		}
		out = append(out, Point{T: time.Unix(0, t).UTC(), V: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

// increments returns, per instant, the summed increase of counter series
// since each series' previous point. The first point counted from is the
// last one at or before the window's start (or the first inside it); a value
// lower than its predecessor is a counter reset, and counts from zero.
func increments(series []Series, lo, hi int64) []Point {
	inc := make(map[int64]float64)
	for _, sr := range series {
		p := sr.Points
		first := sort.Search(len(p), func(i int) bool { return p[i].T.UnixNano() > lo })
		if first > 0 {
			first-- // the baseline at or before the window's start
		}
		last := sort.Search(len(p), func(i int) bool { return p[i].T.UnixNano() > hi })
		for i := first + 1; i < last; i++ {
			d := p[i].V - p[i-1].V
			if d < 0 {
				d = p[i].V
			}
			inc[p[i].T.UnixNano()] += d
		}
	}
	out := make([]Point, 0, len(inc))
	for t, v := range inc {
		out = append(out, Point{T: time.Unix(0, t).UTC(), V: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

func total(p []Point) float64 {
	s := 0.0
	for _, x := range p {
		s += x.V
	}
	return s
}

// ratePoints turns per-instant increments into per-second rates.
func ratePoints(inc []Point) []Point {
	out := make([]Point, 0, len(inc))
	for i := 1; i < len(inc); i++ {
		dt := inc[i].T.Sub(inc[i-1].T).Seconds()
		if dt > 0 {
			out = append(out, Point{T: inc[i].T, V: inc[i].V / dt})
		}
	}
	return out
}

// stepPoints are increments as they are (events per step).
func stepPoints(inc []Point) []Point { return append([]Point(nil), inc...) }

// ratioPoints divides num by den at the instants den is positive.
func ratioPoints(num, den []Point) []Point {
	nv := make(map[int64]float64, len(num))
	for _, p := range num {
		nv[p.T.UnixNano()] = p.V
	}
	var out []Point
	for _, p := range den {
		if p.V > 0 {
			out = append(out, Point{T: p.T, V: nv[p.T.UnixNano()] / p.V})
		}
	}
	return out
}

// stat summarises points' values.
func stat(p []Point) Stat {
	if len(p) == 0 {
		return Stat{}
	}
	v := make([]float64, len(p))
	sum := 0.0
	for i, x := range p {
		v[i] = x.V
		sum += x.V
	}
	sort.Float64s(v)
	return Stat{Samples: len(v), Mean: sum / float64(len(v)), Min: v[0], P50: quantileSorted(v, 0.5), Max: v[len(v)-1]}
}

// quantileSorted interpolates linearly between the closest ranks.
func quantileSorted(v []float64, q float64) float64 {
	if len(v) == 1 {
		return v[0]
	}
	pos := q * float64(len(v)-1)
	i := int(math.Floor(pos))
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	return v[i] + (v[i+1]-v[i])*(pos-float64(i))
}

// quantiles derives a histogram's window summary from the increase of its
// bucket, sum and count series.
func (s *Store) quantiles(name string, lo, hi int64) Quantiles {
	byLe := make(map[float64]float64)
	for _, sr := range s.byName(name + SuffixBucket) {
		le, ok := parseLe(sr.Labels["le"])
		if !ok {
			continue
		}
		byLe[le] += total(increments([]Series{sr}, lo, hi))
	}
	buckets := make([]Bucket, 0, len(byLe))
	for le, c := range byLe {
		buckets = append(buckets, Bucket{UpperBound: le, Count: c})
	}
	var q Quantiles
	count := total(increments(s.byName(name+SuffixCount), lo, hi))
	sum := total(increments(s.byName(name+SuffixSum), lo, hi))
	if count > 0 {
		q.Count, q.Mean = count, sum/count
	}
	for _, x := range []struct {
		q   float64
		dst *float64
	}{{0.5, &q.P50}, {0.9, &q.P90}, {0.95, &q.P95}, {0.99, &q.P99}} {
		if v := HistogramQuantile(x.q, buckets); finite(v) {
			*x.dst = v
		}
	}
	if q.Count == 0 && len(buckets) > 0 {
		// No _count series (a hand-written query); the +Inf bucket is the count.
		for _, b := range buckets {
			if math.IsInf(b.UpperBound, 1) {
				q.Count = b.Count
			}
		}
	}
	return q
}

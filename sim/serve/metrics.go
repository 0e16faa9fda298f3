package serve

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// Bucket boundaries exactly as vLLM v1 declares them (vllm/v1/metrics), so
// dashboards and quantile queries written for vLLM work unchanged.
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmTokenLatencyBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vllmIterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// vllmMetrics are the vLLM Prometheus series the simulator maintains, with
// vLLM's names, types and labels (model_name, engine). Counter names carry
// the _total suffix Python's client library appends.
type vllmMetrics struct {
	model   string
	engines []string

	running, waiting, kvUsage                                       *prometheus.GaugeVec
	promptTokens, genTokens, prefixQueries, prefixHits, preemptions *prometheus.CounterVec
	success                                                         *prometheus.CounterVec
	ttft, itlH, tpot, e2e, queue, iterTokens                        *prometheus.HistogramVec
}

// metricNames are the exposition names of the series the simulator keeps:
// vLLM's, or SGLang's in the SGLang-faithful mode, where a series SGLang
// has no counterpart of is named "" and kept off /metrics.
type metricNames struct {
	running, waiting, kvUsage, promptTokens, genTokens, prefixQueries, prefixHits string
	preemptions, success, ttft, itl, tpot, e2e, queue, iterTokens, cacheConfig    string
}

var (
	vllmNames = metricNames{
		running: vllm.MetricNumRequestsRunning, waiting: vllm.MetricNumRequestsWaiting, kvUsage: vllm.MetricKVCacheUsagePerc,
		promptTokens: vllm.MetricPromptTokens, genTokens: vllm.MetricGenerationTokens,
		prefixQueries: vllm.MetricPrefixCacheQueries, prefixHits: vllm.MetricPrefixCacheHits,
		preemptions: vllm.MetricNumPreemptions, success: vllm.MetricRequestSuccess,
		ttft: vllm.MetricTimeToFirstToken, itl: vllm.MetricInterTokenLatency, tpot: vllm.MetricTimePerOutputToken,
		e2e: vllm.MetricE2ERequestLatency, queue: vllm.MetricRequestQueueTime, iterTokens: vllm.MetricIterationTokens,
		cacheConfig: vllm.MetricCacheConfigInfo,
	}
	// sglangNames: SGLang counts cached prompt tokens
	// (sglang:cached_tokens_total) but not the tokens looked up, and has no
	// preemption, finish-reason, queue-time or step-size series of vLLM's
	// kind.
	sglangNames = metricNames{
		running: sglang.MetricNumRunningReqs, waiting: sglang.MetricNumQueueReqs, kvUsage: sglang.MetricTokenUsage,
		promptTokens: sglang.MetricPromptTokens, genTokens: sglang.MetricGenerationTokens,
		prefixHits: sglang.MetricCachedTokens,
		ttft:       sglang.MetricTimeToFirstToken, itl: sglang.MetricInterTokenLatency, e2e: sglang.MetricE2ERequestLatency,
	}
)

func newVLLMMetrics(reg prometheus.Registerer, model string, c *sim.Cluster, names metricNames) *vllmMetrics {
	labels := []string{vllm.LabelModelName, vllm.LabelEngine}
	// a series the served engine lacks is kept, off the exposition
	hidden := prometheus.NewRegistry()
	register := func(name string, col prometheus.Collector) {
		if name == "" {
			hidden.MustRegister(col)
			return
		}
		reg.MustRegister(col)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: orHidden(name), Help: help}, labels)
		register(name, g)
		return g
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: orHidden(name), Help: help}, append(labels[:2:2], extra...))
		register(name, v)
		return v
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: orHidden(name), Help: help, Buckets: buckets}, labels)
		register(name, h)
		return h
	}
	n := names
	m := &vllmMetrics{
		model:         model,
		running:       gauge(n.running, "Number of requests in model execution batches."),
		waiting:       gauge(n.waiting, "Number of requests waiting to be processed."),
		kvUsage:       gauge(n.kvUsage, "KV-cache usage. 1 means 100 percent usage."),
		promptTokens:  counter(n.promptTokens, "Number of prefill tokens processed."),
		genTokens:     counter(n.genTokens, "Number of generation tokens processed."),
		prefixQueries: counter(n.prefixQueries, "Prefix cache queries, in terms of number of queried tokens."),
		prefixHits:    counter(n.prefixHits, "Prefix cache hits, in terms of number of cached tokens."),
		preemptions:   counter(n.preemptions, "Cumulative number of preemption from the engine."),
		success:       counter(n.success, "Count of successfully processed requests.", vllm.LabelFinishedReason),
		ttft:          hist(n.ttft, "Histogram of time to first token in seconds.", vllmTTFTBuckets),
		itlH:          hist(n.itl, "Histogram of inter-token latency in seconds.", vllmTokenLatencyBuckets),
		tpot:          hist(n.tpot, "Histogram of time per output token in seconds.", vllmTokenLatencyBuckets),
		e2e:           hist(n.e2e, "Histogram of e2e request latency in seconds.", vllmRequestLatencyBuckets),
		queue:         hist(n.queue, "Histogram of time spent in WAITING phase for request.", vllmRequestLatencyBuckets),
		iterTokens:    hist(n.iterTokens, "Histogram of number of tokens per engine_step.", vllmIterationTokenBuckets),
	}
	p := c.Deployment().Params
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: orHidden(n.cacheConfig), Help: "Information of the LLMEngine CacheConfig"},
		[]string{"block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization", "num_gpu_blocks", vllm.LabelEngine})
	register(n.cacheConfig, info)
	dtype := p.KVCacheDtype
	if dtype == "" {
		dtype = "auto"
	}
	for k, e := range c.Engines() {
		name := strconv.Itoa(k)
		m.engines = append(m.engines, name)
		info.WithLabelValues(strconv.Itoa(p.BlockSize), dtype, pyBool(p.EnablePrefixCaching),
			strconv.FormatFloat(p.GPUMemoryUtilization, 'g', -1, 64), strconv.Itoa(e.KVBlocks()), name).Set(1)
		// Create every series at zero, as vLLM does, so rate() works from the start.
		for _, v := range []*prometheus.GaugeVec{m.running, m.waiting, m.kvUsage} {
			v.WithLabelValues(model, name)
		}
		for _, v := range []*prometheus.CounterVec{m.promptTokens, m.genTokens, m.prefixQueries, m.prefixHits, m.preemptions} {
			v.WithLabelValues(model, name)
		}
		for _, reason := range []string{"stop", "length", "abort"} {
			m.success.WithLabelValues(model, name, reason)
		}
		for _, h := range []*prometheus.HistogramVec{m.ttft, m.itlH, m.tpot, m.e2e, m.queue, m.iterTokens} {
			h.WithLabelValues(model, name)
		}
	}
	return m
}

// hiddenSeq names the series kept off the exposition (distinct names, so
// that one hidden registry holds them all).
var hiddenSeq atomic.Int64

func orHidden(name string) string {
	if name != "" {
		return name
	}
	return "spoc_sim_hidden_" + strconv.FormatInt(hiddenSeq.Add(1), 10)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func (m *vllmMetrics) iteration(k int, s *sim.StepInfo) {
	m.iterTokens.WithLabelValues(m.model, m.engines[k]).Observe(float64(s.Tokens))
}

func (m *vllmMetrics) itl(k int, seconds float64) {
	m.itlH.WithLabelValues(m.model, m.engines[k]).Observe(seconds)
}

func (m *vllmMetrics) firstToken(k int, r *sim.Request) {
	e := m.engines[k]
	m.ttft.WithLabelValues(m.model, e).Observe(r.FirstToken - r.Arrival)
	m.queue.WithLabelValues(m.model, e).Observe(r.FirstScheduled - r.Arrival)
}

func (m *vllmMetrics) finished(k int, r *sim.Request, c *call) {
	e := m.engines[k]
	m.e2e.WithLabelValues(m.model, e).Observe(r.Done - r.Arrival)
	if n := r.Generated(); n > 1 {
		m.tpot.WithLabelValues(m.model, e).Observe((r.Done - r.FirstToken) / float64(n-1))
	}
	reason := "length"
	if c.stop {
		reason = "stop"
	}
	m.success.WithLabelValues(m.model, e, reason).Inc()
}

func (m *vllmMetrics) aborted(k int) {
	m.success.WithLabelValues(m.model, m.engines[k], "abort").Inc()
}

// engineDelta advances the counters by what replica k did since prev and
// sets its gauges.
func (m *vllmMetrics) engineDelta(k int, prev, cur sim.EngineStats, e *sim.Engine) {
	l := []string{m.model, m.engines[k]}
	m.promptTokens.WithLabelValues(l...).Add(float64(cur.PromptTokens - prev.PromptTokens))
	m.genTokens.WithLabelValues(l...).Add(float64(cur.GenerationTokens - prev.GenerationTokens))
	m.prefixQueries.WithLabelValues(l...).Add(float64(cur.PrefixQueries - prev.PrefixQueries))
	m.prefixHits.WithLabelValues(l...).Add(float64(cur.PrefixHits - prev.PrefixHits))
	m.preemptions.WithLabelValues(l...).Add(float64(cur.Preemptions - prev.Preemptions))
	m.gauges(k, e)
}

func (m *vllmMetrics) gauges(k int, e *sim.Engine) {
	l := []string{m.model, m.engines[k]}
	m.running.WithLabelValues(l...).Set(float64(e.NumRunning()))
	m.waiting.WithLabelValues(l...).Set(float64(e.NumWaiting()))
	m.kvUsage.WithLabelValues(l...).Set(e.KVUsage())
}

// dcgmCollector exports the simulated GPUs the way dcgm-exporter does: one
// gauge per field, labelled gpu, UUID, device, modelName and Hostname, from
// the last completed one-second interval of simulated time.
type dcgmCollector struct{ s *Server }

var dcgmLabels = []string{"gpu", "UUID", "device", "modelName", "Hostname"}

var dcgmFields = []struct {
	name, help string
	value      func(g *sim.GPUSample) float64
}{
	{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", func(g *sim.GPUSample) float64 { return g.SMClockMHz }},
	{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", func(g *sim.GPUSample) float64 { return g.TemperatureC }},
	{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", func(g *sim.GPUSample) float64 { return g.PowerWatts }},
	{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(g *sim.GPUSample) float64 { return g.Util }},
	{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(g *sim.GPUSample) float64 { return g.FBUsedMiB }},
	{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (bitmask).", func(g *sim.GPUSample) float64 { return float64(g.ThrottleReasons) }},
	{"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", func(g *sim.GPUSample) float64 { return g.SMActive }},
	{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", func(g *sim.GPUSample) float64 { return g.DRAMActive }},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", func(g *sim.GPUSample) float64 { return g.TensorActive }},
}

var dcgmDescs = func() []*prometheus.Desc {
	d := make([]*prometheus.Desc, len(dcgmFields))
	for i, f := range dcgmFields {
		d[i] = prometheus.NewDesc(f.name, f.help, dcgmLabels, nil)
	}
	return d
}()

func (d *dcgmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range dcgmDescs {
		ch <- desc
	}
}

func (d *dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	s := d.s
	s.mu.Lock()
	s.mon.Advance(s.vnow())
	sample := s.mon.Latest()
	s.mu.Unlock()
	model := dcgmModelName(s.dep.GPU.Name)
	for i := range sample.GPUs {
		g := &sample.GPUs[i]
		labels := []string{strconv.Itoa(g.GPU), gpuUUID(s.cfg.Hostname, g.GPU), "nvidia" + strconv.Itoa(g.GPU), model, s.cfg.Hostname}
		for j, f := range dcgmFields {
			ch <- prometheus.MustNewConstMetric(dcgmDescs[j], prometheus.GaugeValue, f.value(g), labels...)
		}
	}
}

// dcgmModelName is the product name nvidia-smi reports for a catalog GPU.
func dcgmModelName(name string) string {
	switch strings.ToLower(name) {
	case "h100-sxm":
		return "NVIDIA H100 80GB HBM3"
	case "h200-sxm":
		return "NVIDIA H200"
	case "a100-sxm-80gb":
		return "NVIDIA A100-SXM4-80GB"
	case "b200":
		return "NVIDIA B200"
	}
	return "NVIDIA " + name
}

// gpuUUID is a stable fake UUID per host and GPU index, formatted as
// nvidia-smi prints one.
func gpuUUID(host string, gpu int) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "%s/%d", host, gpu)
	b := h.Sum(nil)
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

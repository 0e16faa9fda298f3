package telemetry

import (
	"sort"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/vllm"
)

// Kind is the Prometheus type of a catalog metric.
type Kind string

// The metric kinds spoc derives signals from.
const (
	Gauge     Kind = "gauge"
	Counter   Kind = "counter"
	Histogram Kind = "histogram"
)

// Source names the exporter a metric comes from.
type Source string

// The exporters spoc knows.
const (
	SourceVLLM Source = "vllm"
	SourceDCGM Source = "dcgm"
)

// Canonical metric names. Counters carry their _total suffix; histograms are
// named by their base name (the exposition adds _bucket, _sum and _count).
// The vLLM names are package vllm's; DCGM's field names are known here only.
const (
	VLLMRunning          = vllm.MetricNumRequestsRunning
	VLLMWaiting          = vllm.MetricNumRequestsWaiting
	VLLMKVCacheUsage     = vllm.MetricKVCacheUsagePerc
	VLLMPromptTokens     = vllm.MetricPromptTokens
	VLLMGenerationTokens = vllm.MetricGenerationTokens
	VLLMPrefixQueries    = vllm.MetricPrefixCacheQueries
	VLLMPrefixHits       = vllm.MetricPrefixCacheHits
	VLLMPreemptions      = vllm.MetricNumPreemptions
	VLLMRequestSuccess   = vllm.MetricRequestSuccess
	VLLMTTFT             = vllm.MetricTimeToFirstToken
	VLLMITL              = vllm.MetricInterTokenLatency
	VLLME2E              = vllm.MetricE2ERequestLatency
	VLLMQueueTime        = vllm.MetricRequestQueueTime

	DCGMSMActive        = "DCGM_FI_PROF_SM_ACTIVE"
	DCGMSMOccupancy     = "DCGM_FI_PROF_SM_OCCUPANCY"
	DCGMDRAMActive      = "DCGM_FI_PROF_DRAM_ACTIVE"
	DCGMTensorActive    = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
	DCGMGPUUtil         = "DCGM_FI_DEV_GPU_UTIL"
	DCGMGPUTemp         = "DCGM_FI_DEV_GPU_TEMP"
	DCGMSMClock         = "DCGM_FI_DEV_SM_CLOCK"
	DCGMMemClock        = "DCGM_FI_DEV_MEM_CLOCK"
	DCGMPower           = "DCGM_FI_DEV_POWER_USAGE"
	DCGMFBUsed          = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree          = "DCGM_FI_DEV_FB_FREE"
	DCGMClockReasons    = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	DCGMNVLinkTxBytes   = "DCGM_FI_PROF_NVLINK_TX_BYTES"
	DCGMNVLinkRxBytes   = "DCGM_FI_PROF_NVLINK_RX_BYTES"
	DCGMNVLinkBandwidth = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
)

// Engine metric roles: what each engine metric of the catalog measures,
// the keys of a server's own metric names (Target.Metrics).
const (
	RoleRunning            = "running"
	RoleWaiting            = "waiting"
	RoleKVCacheUsage       = "kv_cache_usage"
	RolePromptTokens       = "prompt_tokens"
	RoleGenerationTokens   = "generation_tokens"
	RolePrefixCacheQueries = "prefix_cache_queries"
	RolePrefixCacheHits    = "prefix_cache_hits"
	RolePreemptions        = "preemptions"
	RoleRequestSuccess     = "request_success"
	RoleTTFT               = "ttft"
	RoleITL                = "itl"
	RoleE2E                = "e2e"
	RoleQueueTime          = "queue_time"
)

// Metric describes one metric spoc understands: its canonical name, the older
// names it has been exposed under, its kind and unit.
type Metric struct {
	Name string `json:"name"`
	// Role is what an engine metric measures, in words independent of
	// any engine's names (running, kv_cache_usage): the key a server spoc
	// knows nothing about maps its own metric names by (flavor generic's
	// engine.generic.metrics, Target.Metrics). DCGM's have none.
	Role    string   `json:"role,omitempty"`
	Aliases []string `json:"aliases,omitempty"`
	// Foreign are the names another engine gives the same quantity
	// (SGLang's sglang:num_running_reqs for vllm:num_requests_running):
	// accepted when scraped and stored under Name, so that one store and
	// one set of signals serve both engines. Prometheus queries
	// (DefaultQueries) ask for Name and Aliases only.
	Foreign []string `json:"foreign,omitempty"`
	Kind    Kind     `json:"kind"`
	Source  Source   `json:"source"`
	Unit    string   `json:"unit"`
	Help    string   `json:"help"`
}

// catalog is the table behind Catalog and Lookup. vLLM's older names (package
// vllm) are aliases of the current ones; dcgm-exporter's field rename (CLOCK_THROTTLE_REASONS →
// CLOCKS_EVENT_REASONS) is an alias too.
var catalog = []Metric{
	{Name: VLLMRunning, Role: RoleRunning, Foreign: []string{sglang.MetricNumRunningReqs}, Kind: Gauge, Source: SourceVLLM, Unit: "requests", Help: "requests in the running batch"},
	{Name: VLLMWaiting, Role: RoleWaiting, Foreign: []string{sglang.MetricNumQueueReqs}, Kind: Gauge, Source: SourceVLLM, Unit: "requests", Help: "requests queued for admission"},
	{Name: VLLMKVCacheUsage, Role: RoleKVCacheUsage, Aliases: []string{vllm.MetricGPUCacheUsagePerc}, Foreign: []string{sglang.MetricTokenUsage}, Kind: Gauge, Source: SourceVLLM, Unit: "ratio", Help: "fraction of KV-cache blocks in use"},
	{Name: VLLMPromptTokens, Role: RolePromptTokens, Foreign: []string{sglang.MetricPromptTokens}, Kind: Counter, Source: SourceVLLM, Unit: "tokens", Help: "prefill tokens processed"},
	{Name: VLLMGenerationTokens, Role: RoleGenerationTokens, Foreign: []string{sglang.MetricGenerationTokens}, Kind: Counter, Source: SourceVLLM, Unit: "tokens", Help: "tokens generated"},
	{Name: VLLMPrefixQueries, Role: RolePrefixCacheQueries, Aliases: []string{vllm.MetricGPUPrefixCacheQueries}, Kind: Counter, Source: SourceVLLM, Unit: "tokens", Help: "tokens looked up in the prefix cache"},
	{Name: VLLMPrefixHits, Role: RolePrefixCacheHits, Aliases: []string{vllm.MetricGPUPrefixCacheHits}, Kind: Counter, Source: SourceVLLM, Unit: "tokens", Help: "tokens found in the prefix cache"},
	{Name: VLLMPreemptions, Role: RolePreemptions, Kind: Counter, Source: SourceVLLM, Unit: "preemptions", Help: "requests preempted for lack of KV-cache blocks"},
	{Name: VLLMRequestSuccess, Role: RoleRequestSuccess, Kind: Counter, Source: SourceVLLM, Unit: "requests", Help: "requests finished"},
	{Name: VLLMTTFT, Role: RoleTTFT, Foreign: []string{sglang.MetricTimeToFirstToken}, Kind: Histogram, Source: SourceVLLM, Unit: "seconds", Help: "server-side time to first token"},
	{Name: VLLMITL, Role: RoleITL, Aliases: []string{vllm.MetricTimePerOutputToken}, Foreign: []string{sglang.MetricInterTokenLatency, sglang.MetricTimePerOutputToken}, Kind: Histogram, Source: SourceVLLM, Unit: "seconds", Help: "server-side inter-token latency"},
	{Name: VLLME2E, Role: RoleE2E, Foreign: []string{sglang.MetricE2ERequestLatency}, Kind: Histogram, Source: SourceVLLM, Unit: "seconds", Help: "server-side end-to-end request latency"},
	{Name: VLLMQueueTime, Role: RoleQueueTime, Kind: Histogram, Source: SourceVLLM, Unit: "seconds", Help: "time requests spent waiting"},

	{Name: DCGMSMActive, Kind: Gauge, Source: SourceDCGM, Unit: "ratio", Help: "fraction of cycles an SM has a warp assigned"},
	{Name: DCGMSMOccupancy, Kind: Gauge, Source: SourceDCGM, Unit: "ratio", Help: "fraction of resident warps per SM"},
	{Name: DCGMDRAMActive, Kind: Gauge, Source: SourceDCGM, Unit: "ratio", Help: "fraction of cycles device memory is busy"},
	{Name: DCGMTensorActive, Kind: Gauge, Source: SourceDCGM, Unit: "ratio", Help: "fraction of cycles the tensor pipe is active"},
	{Name: DCGMGPUUtil, Kind: Gauge, Source: SourceDCGM, Unit: "percent", Help: "coarse GPU utilisation (a kernel was running)"},
	{Name: DCGMGPUTemp, Kind: Gauge, Source: SourceDCGM, Unit: "celsius", Help: "GPU temperature"},
	{Name: DCGMSMClock, Kind: Gauge, Source: SourceDCGM, Unit: "MHz", Help: "SM clock"},
	{Name: DCGMMemClock, Kind: Gauge, Source: SourceDCGM, Unit: "MHz", Help: "memory clock"},
	{Name: DCGMPower, Kind: Gauge, Source: SourceDCGM, Unit: "watts", Help: "power draw"},
	{Name: DCGMFBUsed, Kind: Gauge, Source: SourceDCGM, Unit: "MiB", Help: "framebuffer memory used"},
	{Name: DCGMFBFree, Kind: Gauge, Source: SourceDCGM, Unit: "MiB", Help: "framebuffer memory free"},
	{Name: DCGMClockReasons, Aliases: []string{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}, Kind: Gauge, Source: SourceDCGM, Unit: "bitmask", Help: "NVML clock event (throttle) reasons"},
	{Name: DCGMNVLinkTxBytes, Kind: Gauge, Source: SourceDCGM, Unit: "bytes/s", Help: "NVLink transmit rate"},
	{Name: DCGMNVLinkRxBytes, Kind: Gauge, Source: SourceDCGM, Unit: "bytes/s", Help: "NVLink receive rate"},
	{Name: DCGMNVLinkBandwidth, Kind: Counter, Source: SourceDCGM, Unit: "counts", Help: "NVLink bandwidth counter, all lanes"},
}

// Histogram series suffixes as they appear in the exposition.
const (
	SuffixBucket = "_bucket"
	SuffixSum    = "_sum"
	SuffixCount  = "_count"
)

// byName indexes every exposition name spoc accepts from a server whose
// names are the catalog's: canonical names, aliases, other engines' names,
// counters without _total (OpenMetrics family nameIndex) and histogram series.
var byName = func() nameIndex {
	n := nameIndex{m: make(map[string]nameEntry)}
	for i := range catalog {
		md := &catalog[i]
		for j, name := range append(append([]string{md.Name}, md.Aliases...), md.Foreign...) {
			n.add(md, name, j > 0)
		}
	}
	return n
}()

// Catalog returns every metric spoc understands, sorted by name. The slice is
// a copy; changing it changes nothing in the package.
func Catalog() []Metric {
	out := make([]Metric, len(catalog))
	copy(out, catalog)
	for i := range out {
		out[i].Aliases = append([]string(nil), out[i].Aliases...)
		out[i].Foreign = append([]string(nil), out[i].Foreign...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup resolves an exposition name (canonical, alias, counter without its
// _total suffix, or a histogram's _bucket/_sum/_count series) to its catalog
// metric. suffix is the histogram series suffix, empty otherwise; alias is true
// when name is an older name of the metric.
func Lookup(name string) (m Metric, suffix string, alias bool, ok bool) {
	e, ok := byName.lookup(name)
	if !ok {
		return Metric{}, "", false, false
	}
	return *e.metric, e.suffix, e.alias, true
}

// CanonicalSeriesName maps an exposition name to the name spoc stores it
// under: the canonical metric name plus the histogram suffix, if any.
func CanonicalSeriesName(name string) (string, bool) {
	e, ok := byName.lookup(name)
	if !ok {
		return "", false
	}
	return e.metric.Name + e.suffix, true
}

// HostLabels are the label names dcgm-exporter has used for the node name;
// versions differ in capitalisation.
var HostLabels = []string{"Hostname", "hostname"}

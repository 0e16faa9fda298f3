package vllm

import "sort"

// Metric names of vLLM's Prometheus exporter (/metrics) as the v1 engine
// exposes them. Counters carry the _total suffix Python's client library
// appends; histograms are named by their base name (the exposition adds
// _bucket, _sum and _count).
const (
	// MetricNumRequestsRunning is a gauge: requests in the running batch.
	MetricNumRequestsRunning = "vllm:num_requests_running"
	// MetricNumRequestsWaiting is a gauge: requests queued for admission.
	MetricNumRequestsWaiting = "vllm:num_requests_waiting"
	// MetricKVCacheUsagePerc is a gauge: the fraction (0–1, despite the
	// name) of KV-cache blocks held by requests.
	MetricKVCacheUsagePerc = "vllm:kv_cache_usage_perc"
	// MetricPromptTokens counts prefill tokens processed.
	MetricPromptTokens = "vllm:prompt_tokens_total"
	// MetricGenerationTokens counts tokens generated.
	MetricGenerationTokens = "vllm:generation_tokens_total"
	// MetricPrefixCacheQueries counts tokens looked up in the prefix cache.
	MetricPrefixCacheQueries = "vllm:prefix_cache_queries_total"
	// MetricPrefixCacheHits counts tokens found in the prefix cache; with
	// MetricPrefixCacheQueries it gives the hit rate without the per-request
	// cached_tokens field (see FieldCachedTokens).
	MetricPrefixCacheHits = "vllm:prefix_cache_hits_total"
	// MetricNumPreemptions counts requests preempted for lack of KV blocks.
	MetricNumPreemptions = "vllm:num_preemptions_total"
	// MetricRequestSuccess counts finished requests, labelled
	// LabelFinishedReason.
	MetricRequestSuccess = "vllm:request_success_total"
	// MetricTimeToFirstToken is a histogram of server-side TTFT in seconds.
	MetricTimeToFirstToken = "vllm:time_to_first_token_seconds"
	// MetricInterTokenLatency is a histogram of the time between two
	// streamed outputs of a request, in seconds.
	MetricInterTokenLatency = "vllm:inter_token_latency_seconds"
	// MetricE2ERequestLatency is a histogram of request latency from arrival
	// to the last token, in seconds.
	MetricE2ERequestLatency = "vllm:e2e_request_latency_seconds"
	// MetricRequestQueueTime is a histogram of the time requests spent
	// waiting, in seconds.
	MetricRequestQueueTime = "vllm:request_queue_time_seconds"
	// MetricIterationTokens is a histogram of tokens per engine step.
	MetricIterationTokens = "vllm:iteration_tokens_total"
	// MetricCacheConfigInfo is an info gauge (value 1) whose labels carry
	// the cache configuration: block_size, cache_dtype,
	// enable_prefix_caching, gpu_memory_utilization, num_gpu_blocks.
	MetricCacheConfigInfo = "vllm:cache_config_info"
)

// Older names of vLLM metrics, still exposed by the servers spoc may meet.
// Readers accept them as aliases of the current names.
const (
	// MetricGPUCacheUsagePerc is the older name of MetricKVCacheUsagePerc.
	MetricGPUCacheUsagePerc = "vllm:gpu_cache_usage_perc"
	// MetricGPUPrefixCacheQueries is the older name of
	// MetricPrefixCacheQueries.
	MetricGPUPrefixCacheQueries = "vllm:gpu_prefix_cache_queries_total"
	// MetricGPUPrefixCacheHits is the older name of MetricPrefixCacheHits.
	MetricGPUPrefixCacheHits = "vllm:gpu_prefix_cache_hits_total"
	// MetricTimePerOutputToken is the older name of MetricInterTokenLatency:
	// deprecated in vLLM 0.11 when the histogram was renamed, hidden in
	// 0.12 and removed later (vllm PR 32661). It is not vLLM's
	// vllm:request_time_per_output_token_seconds, a per-request mean.
	MetricTimePerOutputToken = "vllm:time_per_output_token_seconds"
)

// Label names on vLLM's metrics.
const (
	// LabelModelName is the served model name (see ServedName).
	LabelModelName = "model_name"
	// LabelEngine is the engine-core index within one server (data-parallel
	// replicas), "0" for a single engine.
	LabelEngine = "engine"
	// LabelFinishedReason is "stop", "length" or "abort" on
	// MetricRequestSuccess.
	LabelFinishedReason = "finished_reason"
)

// MetricNames returns every vLLM metric name this package declares, current
// and older, sorted. A name that is not in it is not a vLLM metric spoc
// knows.
func MetricNames() []string {
	names := []string{
		MetricNumRequestsRunning, MetricNumRequestsWaiting, MetricKVCacheUsagePerc,
		MetricPromptTokens, MetricGenerationTokens, MetricPrefixCacheQueries, MetricPrefixCacheHits,
		MetricNumPreemptions, MetricRequestSuccess, MetricTimeToFirstToken, MetricInterTokenLatency,
		MetricE2ERequestLatency, MetricRequestQueueTime, MetricIterationTokens, MetricCacheConfigInfo,
		MetricGPUCacheUsagePerc, MetricGPUPrefixCacheQueries, MetricGPUPrefixCacheHits, MetricTimePerOutputToken,
	}
	sort.Strings(names)
	return names
}

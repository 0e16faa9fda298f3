package sglang

import "sort"

// Metric names of SGLang's Prometheus exporter (with --enable-metrics), as
// the scheduler's and the tokenizer manager's collectors register them.
// Counters carry the _total suffix; histograms are named by their base
// name. Every metric is labelled LabelModelName.
const (
	// MetricNumRunningReqs is a gauge: requests in the running batch
	// (vLLM's vllm:num_requests_running).
	MetricNumRunningReqs = "sglang:num_running_reqs"
	// MetricNumQueueReqs is a gauge: requests in the waiting queue (vLLM's
	// vllm:num_requests_waiting).
	MetricNumQueueReqs = "sglang:num_queue_reqs"
	// MetricTokenUsage is a gauge: the fraction (0–1) of the KV-cache token
	// pool in use (vLLM's vllm:kv_cache_usage_perc).
	MetricTokenUsage = "sglang:token_usage"
	// MetricCacheHitRate is a gauge: the radix cache's hit rate over the
	// scheduler's recent prefill batches (no counter pair as in vLLM).
	MetricCacheHitRate = "sglang:cache_hit_rate"
	// MetricGenThroughput is a gauge: generated tokens per second.
	MetricGenThroughput = "sglang:gen_throughput"
	// MetricNumUsedTokens is a gauge: KV-cache tokens in use.
	MetricNumUsedTokens = "sglang:num_used_tokens"
	// MetricPromptTokens counts prefill tokens processed.
	MetricPromptTokens = "sglang:prompt_tokens_total"
	// MetricGenerationTokens counts tokens generated.
	MetricGenerationTokens = "sglang:generation_tokens_total"
	// MetricCachedTokens counts prompt tokens served from the cache.
	MetricCachedTokens = "sglang:cached_tokens_total"
	// MetricNumRequests counts requests processed.
	MetricNumRequests = "sglang:num_requests_total"
	// MetricTimeToFirstToken is a histogram of server-side TTFT, seconds.
	MetricTimeToFirstToken = "sglang:time_to_first_token_seconds"
	// MetricInterTokenLatency is a histogram of the time between two
	// outputs of a request, seconds.
	MetricInterTokenLatency = "sglang:inter_token_latency_seconds"
	// MetricTimePerOutputToken is the older name of
	// MetricInterTokenLatency, in SGLang releases before the rename.
	MetricTimePerOutputToken = "sglang:time_per_output_token_seconds"
	// MetricE2ERequestLatency is a histogram of request latency, seconds.
	MetricE2ERequestLatency = "sglang:e2e_request_latency_seconds"
)

// LabelModelName is the served model name on every metric.
const LabelModelName = "model_name"

// MetricNames returns every SGLang metric name this package declares,
// sorted.
func MetricNames() []string {
	names := []string{
		MetricNumRunningReqs, MetricNumQueueReqs, MetricTokenUsage, MetricCacheHitRate,
		MetricGenThroughput, MetricNumUsedTokens, MetricPromptTokens, MetricGenerationTokens,
		MetricCachedTokens, MetricNumRequests, MetricTimeToFirstToken, MetricInterTokenLatency,
		MetricTimePerOutputToken, MetricE2ERequestLatency,
	}
	sort.Strings(names)
	return names
}

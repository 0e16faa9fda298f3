package sglang

// HTTP routes of SGLang's server that spoc uses besides the OpenAI ones
// (which SGLang serves under the same /v1 paths as vLLM: vllm.PathModels,
// vllm.PathChatCompletions, ...).
const (
	// PathHealth (GET) answers 200 once the server serves.
	PathHealth = "/health"
	// PathMetrics (GET) is the Prometheus exposition, served only with
	// --enable-metrics (FlagEnableMetrics).
	PathMetrics = "/metrics"
	// PathFlushCache (GET or POST) empties the radix (prefix) cache. SGLang
	// answers 400 and flushes nothing while requests are running or
	// waiting, so spoc posts it once MetricNumRunningReqs and
	// MetricNumQueueReqs read 0. Unlike vLLM's reset route it needs no
	// development mode.
	PathFlushCache = "/flush_cache"
)

// Fields of SGLang's responses spoc reads.
const (
	// FieldCachedTokens is usage.prompt_tokens_details.cached_tokens, the
	// prompt tokens served from the radix cache: SGLang reports it only
	// with --enable-cache-report (FlagEnableCacheReport).
	FieldCachedTokens = "cached_tokens"
)

// Launch is the command that starts an SGLang server, before its flags.
var Launch = []string{"python3", "-m", "sglang.launch_server"}

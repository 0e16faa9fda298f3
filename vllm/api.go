package vllm

// HTTP paths of vLLM's OpenAI-compatible server that spoc uses.
const (
	// PathPrefix is the prefix of the OpenAI routes. A target URL given as
	// the API's base (http://host:8000/v1) ends with it.
	PathPrefix = "/v1"
	// PathChatCompletions is OpenAI's chat completions endpoint.
	PathChatCompletions = PathPrefix + "/chat/completions"
	// PathCompletions is OpenAI's text completions endpoint.
	PathCompletions = PathPrefix + "/completions"
	// PathModels (GET) lists the served model names (see ServedName); spoc
	// probes a target with it.
	PathModels = PathPrefix + "/models"
	// PathHealth (GET) answers 200 once the engine is ready.
	PathHealth = "/health"
	// PathVersion (GET) answers {"version": "..."}.
	PathVersion = "/version"
	// PathTokenize (POST) counts and returns a prompt's token ids.
	PathTokenize = "/tokenize"
	// PathMetrics (GET) is the Prometheus exposition (the Metric* names).
	PathMetrics = "/metrics"
	// PathResetPrefixCache (POST) empties the prefix cache, so that one
	// run's cached prompts do not shorten the next run's. vLLM registers it
	// only when the server runs with EnvServerDevMode=1; without it the path
	// answers 404, and against a server spoc did not start that means cache
	// state carries over between runs.
	PathResetPrefixCache = "/reset_prefix_cache"
)

// EnvServerDevMode is the environment variable that, set to "1", makes vLLM
// register its development routes (PathResetPrefixCache, /server_info,
// /sleep, …) and log a security warning. A launcher that owns the server
// may set it.
const EnvServerDevMode = "VLLM_SERVER_DEV_MODE"

// Fields of vLLM's responses that are not in every OpenAI client.
const (
	// FieldReasoning is the streamed chain of thought in a chat delta
	// (delta.reasoning) on current servers: vLLM renamed it from
	// FieldReasoningContent in PR 27752 (October 2025) and stopped sending
	// the old name in PR 33402 (January 2026). Readers accept both. In
	// request messages vLLM still accepts FieldReasoningContent and
	// normalises it to FieldReasoning (PR 42664).
	FieldReasoning = "reasoning"
	// FieldReasoningContent is the older name of FieldReasoning, streamed
	// by servers before the rename.
	FieldReasoningContent = "reasoning_content"
	// FieldCachedTokens is usage.prompt_tokens_details.cached_tokens, the
	// prompt tokens served from the prefix cache. vLLM reports it only with
	// --enable-prompt-tokens-details (off by default), and some versions
	// omit it when it is 0, so an absent field is not zero.
	FieldCachedTokens = "cached_tokens"
)

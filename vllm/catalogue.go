package vllm

import "github.com/spoc-project/spoc/flagcatalog"

// CatalogueSource is where the vLLM flag catalogue was read: vLLM's own
// argument parser. The release line is 0.11 (after 0.11.0: the parser has
// --max-cudagraph-capture-size and marks flags "removed in v0.12.0").
const CatalogueSource = "vllm-project/vllm at commit 99d7eb5d (vllm/engine/arg_utils.py: EngineArgs.add_cli_args) and 789340fb (vllm/entrypoints/openai/cli_args.py: FrontendArgs, make_arg_parser), vLLM 0.11"

// CatalogueVersion is the vLLM release line the catalogue describes.
const CatalogueVersion = "0.11"

// Catalogue holds the flags of `vllm serve` (CatalogueSource): every flag
// its parser registers, so that a flag not in it is a misspelling or
// another engine's, caught before launch. Booleans are argparse
// BooleanOptionalAction (a --no- twin) unless marked otherwise; a default
// is given where vLLM fixes one, nil where it derives it at start-up
// (max-num-seqs and max-num-batched-tokens from the usage context and
// the GPU, block-size from the platform). Defaults gives the values spoc
// starts a study from. Releases differ: a flag newer than the catalogue
// can still be written into the command template.
var Catalogue = flagcatalog.New("vLLM", CatalogueSource, catalogueFlags())

func catalogueFlags() []flagcatalog.Flag {
	const (
		b = flagcatalog.Bool
		i = flagcatalog.Int
		f = flagcatalog.Float
		s = flagcatalog.String
		l = flagcatalog.List
		j = flagcatalog.JSON
	)
	flag := func(name string, k flagcatalog.Kind, def any, help string) flagcatalog.Flag {
		return flagcatalog.Flag{Name: name, Kind: k, Default: def, Negatable: k == b, Help: help}
	}
	alias := func(fl flagcatalog.Flag, aliases ...string) flagcatalog.Flag {
		fl.Aliases = aliases
		return fl
	}
	choices := func(fl flagcatalog.Flag, c ...string) flagcatalog.Flag {
		fl.Choices = c
		return fl
	}
	storeTrue := func(fl flagcatalog.Flag) flagcatalog.Flag {
		fl.Negatable = false
		return fl
	}
	deprecated := func(fl flagcatalog.Flag) flagcatalog.Flag {
		fl.Deprecated = true
		return fl
	}
	return []flagcatalog.Flag{
		// the server (make_arg_parser, FrontendArgs)
		storeTrue(flag("headless", b, false, "run the engine without the API server (multi-node data parallelism)")),
		alias(flag("api-server-count", i, 1, "API server processes"), "asc"),
		flag("config", s, nil, "read flags from a YAML file"),
		flag(FlagHost, s, nil, "the address the HTTP server binds (default: every interface)"),
		flag("port", i, 8000, "the HTTP server's port"),
		flag("uds", s, nil, "a Unix socket to serve on instead of host and port"),
		choices(flag("uvicorn-log-level", s, "info", ""), "debug", "info", "warning", "error", "critical", "trace"),
		flag("disable-uvicorn-access-log", b, false, ""),
		flag("allow-credentials", b, false, ""),
		flag("allowed-origins", j, nil, ""),
		flag("allowed-methods", j, nil, ""),
		flag("allowed-headers", j, nil, ""),
		flag("api-key", l, nil, "keys a request must present"),
		flag("lora-modules", l, nil, ""),
		flag("chat-template", s, nil, ""),
		flag("chat-template-content-format", s, "auto", ""),
		flag("trust-request-chat-template", b, false, ""),
		flag("response-role", s, "assistant", ""),
		flag("ssl-keyfile", s, nil, ""),
		flag("ssl-certfile", s, nil, ""),
		flag("ssl-ca-certs", s, nil, ""),
		flag("enable-ssl-refresh", b, false, ""),
		flag("ssl-cert-reqs", i, 0, ""),
		flag("root-path", s, nil, ""),
		flag("middleware", l, nil, ""),
		flag("return-tokens-as-token-ids", b, false, ""),
		flag("disable-frontend-multiprocessing", b, false, ""),
		flag("enable-request-id-headers", b, false, ""),
		flag("enable-auto-tool-choice", b, false, ""),
		flag("exclude-tools-when-tool-choice-none", b, false, ""),
		flag("tool-call-parser", s, nil, ""),
		flag("tool-parser-plugin", s, "", ""),
		flag("tool-server", s, nil, ""),
		flag("log-config-file", s, nil, ""),
		flag("max-log-len", i, nil, ""),
		flag("disable-fastapi-docs", b, false, ""),
		flag(FlagEnablePromptTokensDetails, b, false, "report usage.prompt_tokens_details.cached_tokens (spoc passes it to every server it launches)"),
		flag("enable-server-load-tracking", b, false, ""),
		flag("enable-force-include-usage", b, false, ""),
		flag("enable-tokenizer-info-endpoint", b, false, ""),
		flag("enable-log-outputs", b, false, ""),
		flag("enable-log-requests", b, false, ""),
		deprecated(storeTrue(flag("disable-log-requests", b, nil, ""))),
		flag("h11-max-incomplete-event-size", i, nil, ""),
		flag("h11-max-header-count", i, nil, ""),
		flag("log-error-stack", b, nil, ""),
		flag("tokens-only", b, false, ""),

		// ModelConfig
		flag(FlagModel, s, nil, "the model weights: a local folder or a Hugging Face repository id (vllm serve's positional MODEL)"),
		flag("runner", s, "auto", ""),
		flag("convert", s, "auto", ""),
		deprecated(flag("task", s, nil, "")),
		flag("tokenizer", s, nil, ""),
		flag("tokenizer-mode", s, "auto", ""),
		flag("trust-remote-code", b, false, "allow model code from the Hub"),
		choices(flag("dtype", s, "auto", "the weights' and activations' data type"), "auto", "half", "float16", "bfloat16", "float", "float32"),
		flag("seed", i, nil, ""),
		flag("hf-config-path", s, nil, ""),
		flag("allowed-local-media-path", s, "", ""),
		flag("allowed-media-domains", l, nil, ""),
		flag("revision", s, nil, ""),
		flag("code-revision", s, nil, ""),
		flag("rope-scaling", j, nil, ""),
		flag("rope-theta", f, nil, ""),
		flag("tokenizer-revision", s, nil, ""),
		flag(FlagMaxModelLen, i, nil, "the context limit (default: the model's config)"),
		alias(flag("quantization", s, nil, "the weights' quantization method"), "q"),
		flag("enforce-eager", b, false, "run without CUDA graphs"),
		flag("max-logprobs", i, 20, ""),
		flag("logprobs-mode", s, nil, ""),
		flag("disable-sliding-window", b, false, ""),
		flag("disable-cascade-attn", b, false, ""),
		flag("skip-tokenizer-init", b, false, ""),
		flag("enable-prompt-embeds", b, false, ""),
		flag(FlagServedModelName, s, nil, "the model name in the API (default: the model)"),
		flag("config-format", s, "auto", ""),
		flag("hf-token", s, nil, ""),
		flag("hf-overrides", j, nil, ""),
		flag("pooler-config", j, nil, ""),
		deprecated(flag("override-pooler-config", j, nil, "")),
		flag("logits-processor-pattern", s, nil, ""),
		flag("generation-config", s, "auto", ""),
		flag("override-generation-config", j, nil, ""),
		flag("enable-sleep-mode", b, false, ""),
		flag("model-impl", s, "auto", ""),
		flag("override-attention-dtype", s, nil, ""),
		flag("logits-processors", l, nil, ""),
		flag("io-processor-plugin", s, nil, ""),

		// LoadConfig
		flag("load-format", s, "auto", ""),
		flag("download-dir", s, nil, ""),
		flag("safetensors-load-strategy", s, nil, ""),
		flag("model-loader-extra-config", j, nil, ""),
		flag("ignore-patterns", l, nil, ""),
		flag("use-tqdm-on-load", b, true, ""),
		flag("pt-load-map-location", s, nil, ""),

		// StructuredOutputsConfig
		flag("reasoning-parser", s, nil, ""),
		deprecated(flag("guided-decoding-backend", s, nil, "")),
		deprecated(flag("guided-decoding-disable-fallback", s, nil, "")),
		deprecated(flag("guided-decoding-disable-any-whitespace", s, nil, "")),
		deprecated(flag("guided-decoding-disable-additional-properties", s, nil, "")),

		// ParallelConfig
		flag("distributed-executor-backend", s, nil, ""),
		alias(flag("pipeline-parallel-size", i, 1, "pipeline-parallel size"), "pp"),
		alias(flag(FlagTensorParallelSize, i, 1, "tensor-parallel size"), "tp"),
		alias(flag("decode-context-parallel-size", i, 1, ""), "dcp"),
		alias(flag(FlagDataParallelSize, i, 1, "data-parallel size: engine replicas inside one server, behind its own router"), "dp"),
		alias(flag("data-parallel-rank", i, nil, ""), "dpn"),
		alias(flag("data-parallel-start-rank", i, nil, ""), "dpr"),
		alias(flag("data-parallel-size-local", i, nil, ""), "dpl"),
		alias(flag("data-parallel-address", s, nil, ""), "dpa"),
		alias(flag("data-parallel-rpc-port", i, nil, ""), "dpp"),
		alias(flag("data-parallel-backend", s, "mp", ""), "dpb"),
		flag("data-parallel-hybrid-lb", b, false, ""),
		flag("enable-expert-parallel", b, false, "expert parallelism for MoE layers"),
		flag("all2all-backend", s, nil, ""),
		flag("enable-dbo", b, false, ""),
		flag("dbo-decode-token-threshold", i, nil, ""),
		flag("dbo-prefill-token-threshold", i, nil, ""),
		flag("disable-nccl-for-dp-synchronization", b, false, ""),
		flag("enable-eplb", b, false, ""),
		flag("eplb-config", j, nil, ""),
		flag("expert-placement-strategy", s, nil, ""),
		deprecated(flag("num-redundant-experts", i, nil, "")),
		deprecated(flag("eplb-window-size", i, nil, "")),
		deprecated(flag("eplb-step-interval", i, nil, "")),
		deprecated(flag("eplb-log-balancedness", b, nil, "")),
		flag("max-parallel-loading-workers", i, nil, ""),
		flag("ray-workers-use-nsight", b, false, ""),
		flag("disable-custom-all-reduce", b, false, ""),
		flag("worker-cls", s, "auto", ""),
		flag("worker-extension-cls", s, "", ""),
		deprecated(storeTrue(flag("enable-multimodal-encoder-data-parallel", b, false, ""))),

		// CacheConfig
		flag("block-size", i, nil, "tokens per KV-cache block (default: the platform's, 16 on CUDA)"),
		flag("gpu-memory-utilization", f, 0.9, "fraction of GPU memory vLLM may use: weights, activations and the KV cache"),
		flag("kv-cache-memory-bytes", i, nil, ""),
		flag("swap-space", f, 4.0, ""),
		flag("kv-cache-dtype", s, "auto", "the KV cache's data type"),
		flag("num-gpu-blocks-override", i, nil, ""),
		flag("enable-prefix-caching", b, nil, "the prefix cache (on by default in the V1 engine)"),
		flag("prefix-caching-hash-algo", s, nil, ""),
		flag("cpu-offload-gb", f, 0.0, ""),
		flag("calculate-kv-scales", b, false, ""),
		flag("kv-sharing-fast-prefill", b, false, ""),
		flag("mamba-cache-dtype", s, "auto", ""),
		flag("mamba-ssm-cache-dtype", s, "auto", ""),
		flag("mamba-block-size", i, nil, ""),

		// MultiModalConfig
		flag("limit-mm-per-prompt", j, nil, ""),
		flag("enable-mm-embeds", b, false, ""),
		flag("media-io-kwargs", j, nil, ""),
		flag("mm-processor-kwargs", j, nil, ""),
		flag("mm-processor-cache-gb", f, nil, ""),
		deprecated(storeTrue(flag("disable-mm-preprocessor-cache", b, false, ""))),
		flag("mm-processor-cache-type", s, nil, ""),
		flag("mm-shm-cache-max-object-size-mb", i, nil, ""),
		flag("mm-encoder-tp-mode", s, nil, ""),
		flag("mm-encoder-attn-backend", s, nil, ""),
		flag("interleave-mm-strings", b, false, ""),
		flag("skip-mm-profiling", b, false, ""),
		flag("video-pruning-rate", f, nil, ""),

		// LoRAConfig
		flag("enable-lora", b, false, ""),
		flag("max-loras", i, 1, ""),
		flag("max-lora-rank", i, nil, ""),
		flag("lora-extra-vocab-size", i, nil, ""),
		flag("lora-dtype", s, "auto", ""),
		flag("max-cpu-loras", i, nil, ""),
		flag("fully-sharded-loras", b, false, ""),
		flag("default-mm-loras", j, nil, ""),

		// ObservabilityConfig
		flag("show-hidden-metrics-for-version", s, nil, "show metrics hidden since that version (vllm:time_per_output_token_seconds after 0.11)"),
		flag("otlp-traces-endpoint", s, nil, ""),
		flag("collect-detailed-traces", s, nil, ""),

		// SchedulerConfig
		flag("max-num-batched-tokens", i, nil, "the most tokens one engine step computes (prefill chunks and decodes together)"),
		flag("max-num-seqs", i, nil, "the most requests in the running batch"),
		flag("max-num-partial-prefills", i, 1, ""),
		flag("max-long-partial-prefills", i, 1, ""),
		flag("long-prefill-token-threshold", i, 0, "a request with more prompt tokens than this computes at most this many per step; 0: no cap"),
		flag("num-lookahead-slots", i, 0, ""),
		choices(flag("scheduling-policy", s, "fcfs", "the order waiting requests are admitted in"), "fcfs", "priority"),
		flag("enable-chunked-prefill", b, nil, "split long prompts across steps (on by default in the V1 engine)"),
		flag("disable-chunked-mm-input", b, false, ""),
		flag("scheduler-cls", s, nil, ""),
		flag("disable-hybrid-kv-cache-manager", b, false, ""),
		flag("async-scheduling", b, false, "schedule the next step while the GPU runs this one"),

		// CompilationConfig
		flag("cudagraph-capture-sizes", l, nil, ""),
		deprecated(flag("cuda-graph-sizes", l, nil, "")),
		flag("max-cudagraph-capture-size", i, nil, ""),

		// VllmConfig
		flag("speculative-config", j, nil, ""),
		flag("kv-transfer-config", j, nil, ""),
		flag("kv-events-config", j, nil, ""),
		alias(flag("compilation-config", j, nil, ""), "O"),
		flag("additional-config", j, nil, ""),
		flag("structured-outputs-config", j, nil, ""),

		storeTrue(flag("disable-log-stats", b, false, "no periodic statistics in the log")),
		storeTrue(flag("aggregate-engine-logging", b, false, "")),
	}
}

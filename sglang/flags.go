package sglang

import (
	"fmt"
	"github.com/spoc-project/spoc/flagcatalog"
	"math"
	"sort"
	"strconv"

	"github.com/spoc-project/spoc/vllm"
)

// Kind is the type of a flag's value (flagcatalog's).
type Kind = flagcatalog.Kind

// Flag kinds. SGLang's booleans are argparse store_true flags: given, they
// are on; there is no --no- form, and off is the flag left out.
const (
	Bool   = flagcatalog.Bool
	Int    = flagcatalog.Int
	Float  = flagcatalog.Float
	String = flagcatalog.String
)

// Flag is one server flag of the catalogue.
type Flag = flagcatalog.Flag

// Flag names spoc itself passes or searches.
const (
	FlagModelPath          = "model-path"
	FlagServedModelName    = "served-model-name"
	FlagHost               = "host"
	FlagPort               = "port"
	FlagTPSize             = "tp-size"
	FlagDPSize             = "dp-size"
	FlagContextLength      = "context-length"
	FlagMemFractionStatic  = "mem-fraction-static"
	FlagMaxRunningRequests = "max-running-requests"
	FlagChunkedPrefillSize = "chunked-prefill-size"
	FlagMaxPrefillTokens   = "max-prefill-tokens"
	FlagSchedulePolicy     = "schedule-policy"
	FlagDisableRadixCache  = "disable-radix-cache"
	FlagEnableMetrics      = "enable-metrics"
	FlagEnableCacheReport  = "enable-cache-report"
)

// CatalogueVersion is the SGLang release the catalogue was read from.
const CatalogueVersion = "0.5.3 (main after it, commit 001067ff)"

// Catalogue holds the server flags spoc knows, from ServerArgs in
// python/sglang/srt/server_args.py (see the package comment for the
// version). SGLang has many more (speculative decoding, LoRA,
// disaggregation); a flag not here is refused in engine.params and
// search.space (a misspelling is caught before launch) and can still be
// written into the command template.
var Catalogue = flagcatalog.New("SGLang", "sgl-project/sglang at commit 001067ff (python/sglang/srt/server_args.py), SGLang "+CatalogueVersion, catalogue)

var catalogue = []Flag{
	{Name: FlagModelPath, Kind: String, Aliases: []string{"model"}, Help: "the model weights: a local folder or a Hugging Face repository id"},
	{Name: FlagServedModelName, Kind: String, Help: "the model name in the API and the metrics' model_name label (default: the model path)"},
	{Name: FlagHost, Kind: String, Default: "127.0.0.1", Help: "the address the HTTP server binds"},
	{Name: FlagPort, Kind: Int, Default: 30000, Help: "the HTTP server's port"},
	{Name: FlagTPSize, Kind: Int, Default: 1, Aliases: []string{"tensor-parallel-size"}, Help: "tensor-parallel size"},
	{Name: FlagDPSize, Kind: Int, Default: 1, Aliases: []string{"data-parallel-size"}, Help: "data-parallel size: replicas inside one server, behind its own router"},
	{Name: "pp-size", Kind: Int, Default: 1, Aliases: []string{"pipeline-parallel-size"}, Help: "pipeline-parallel size"},
	{Name: "load-balance-method", Kind: String, Default: "auto", Choices: []string{"auto", "round_robin", "follow_bootstrap_room", "total_requests", "total_tokens"}, Help: "how the data-parallel router spreads requests"},
	{Name: "enable-dp-attention", Kind: Bool, Default: false, Help: "data-parallel attention with tensor-parallel experts (MoE models)"},
	{Name: FlagContextLength, Kind: Int, Help: "the context limit (default: the model's config.json)"},
	{Name: FlagMemFractionStatic, Kind: Float, Help: "fraction of GPU memory for the static pool: weights and the KV-cache token pool (default derived from the GPU's memory and the parallelism)"},
	{Name: FlagMaxRunningRequests, Kind: Int, Help: "the most requests in the running batch (default derived from the KV pool)"},
	{Name: "max-queued-requests", Kind: Int, Help: "the most requests waiting; more are refused"},
	{Name: "max-total-tokens", Kind: Int, Help: "the KV-cache token pool's size (default derived from mem-fraction-static)"},
	{Name: FlagChunkedPrefillSize, Kind: Int, Help: "the most prompt tokens of one request prefilled per step; -1 disables chunked prefill (default derived from the GPU's memory)"},
	{Name: FlagMaxPrefillTokens, Kind: Int, Default: 16384, Help: "the most prompt tokens of a prefill batch (at least the context length of one request)"},
	{Name: "prefill-max-requests", Kind: Int, Help: "the most requests in a prefill batch (default: no limit)"},
	{Name: FlagSchedulePolicy, Kind: String, Default: "fcfs", Choices: []string{"lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key"}, Help: "the order waiting requests are admitted in: fcfs (arrival), lpm (longest cached prefix first), ... (lpm was the default of earlier releases)"},
	{Name: "schedule-conservativeness", Kind: Float, Default: 1.0, Help: "how much KV headroom admission keeps for running requests' growth; larger retracts less"},
	{Name: "page-size", Kind: Int, Help: "tokens per KV-cache page (default 1)"},
	{Name: FlagDisableRadixCache, Kind: Bool, Default: false, Help: "turn the radix (prefix) cache off"},
	{Name: "radix-eviction-policy", Kind: String, Default: "lru", Choices: []string{"lru", "lfu", "slru", "priority"}, Help: "which cached prefixes are evicted first"},
	{Name: "disable-overlap-schedule", Kind: Bool, Default: false, Help: "run the CPU scheduler and the GPU step one after the other"},
	{Name: "enable-mixed-chunk", Kind: Bool, Default: false, Help: "mix prefill chunks and decodes in one batch"},
	{Name: "num-continuous-decode-steps", Kind: Int, Default: 1, Help: "decode steps run between two scheduling rounds"},
	{Name: "enable-priority-scheduling", Kind: Bool, Default: false, Help: "admit requests by their priority field"},
	{Name: "kv-cache-dtype", Kind: String, Default: "auto", Choices: []string{"auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16", "fp4_e2m1"}, Help: "the KV cache's data type"},
	{Name: "quantization", Kind: String, Help: "the weights' quantization method"},
	{Name: "trust-remote-code", Kind: Bool, Default: false, Help: "allow model code from the Hub"},
	{Name: FlagEnableMetrics, Kind: Bool, Default: false, Help: "serve Prometheus metrics on /metrics"},
	{Name: FlagEnableCacheReport, Kind: Bool, Default: false, Help: "report usage.prompt_tokens_details.cached_tokens"},
	{Name: "log-level", Kind: String, Default: "info", Help: "the server's log level"},
}

// VLLMCounterparts are vLLM flags and the SGLang flag closest to each:
// the knob a user means who writes the vLLM name on SGLang. Where the
// semantics differ the docs (docs/engines.md) say how.
var VLLMCounterparts = map[string]string{
	"max-num-seqs":           FlagMaxRunningRequests,
	"max-num-batched-tokens": FlagChunkedPrefillSize,
	"gpu-memory-utilization": FlagMemFractionStatic,
	"enable-prefix-caching":  FlagDisableRadixCache + " (inverted)",
	"max-model-len":          FlagContextLength,
	"model":                  FlagModelPath,
	"scheduling-policy":      FlagSchedulePolicy,
}

// Render writes p as SGLang command-line flags, sorted by flag name:
//
//	max-running-requests: 64   → --max-running-requests 64
//	mem-fraction-static: 0.85  → --mem-fraction-static 0.85
//	disable-radix-cache: true  → --disable-radix-cache
//	disable-radix-cache: false → (nothing: SGLang's switches have no off form)
//
// A name is written as the catalogue spells it when it is a known alias
// (tensor-parallel-size stays as given; SGLang accepts both). Values must
// be bool, int, int64, float64 or string; two names of one flag are an
// error. Unknown flags are rendered as given: the configuration check
// refuses them before a launch (Lookup).
func Render(p map[string]any) ([]string, error) {
	names := make([]string, 0, len(p))
	byFlag := make(map[string]string, len(p))
	for k := range p {
		f := vllm.FlagName(k)
		if f == "" {
			return nil, fmt.Errorf("render SGLang flags: empty parameter name %q", k)
		}
		canonical := f
		if cf, ok := Catalogue.Lookup(f); ok {
			canonical = cf.Name
		}
		if prev, dup := byFlag[canonical]; dup {
			return nil, fmt.Errorf("render SGLang flags: parameters %q and %q are the same flag --%s", prev, k, canonical)
		}
		byFlag[canonical] = k
		names = append(names, canonical)
	}
	sort.Strings(names)
	args := make([]string, 0, 2*len(names))
	for _, name := range names {
		k := byFlag[name]
		f := vllm.FlagName(k)
		switch v := p[k].(type) {
		case bool:
			if v {
				args = append(args, "--"+f)
			}
		case int:
			args = append(args, "--"+f, strconv.Itoa(v))
		case int64:
			args = append(args, "--"+f, strconv.FormatInt(v, 10))
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("render SGLang flags: parameter %q: %v is not a finite number", k, v)
			}
			args = append(args, "--"+f, strconv.FormatFloat(v, 'f', -1, 64))
		case string:
			args = append(args, "--"+f, v)
		default:
			return nil, fmt.Errorf("render SGLang flags: parameter %q: unsupported value %v of type %T (want bool, int, float or string)", k, v, v)
		}
	}
	return args, nil
}

// Defaults returns the values SGLang gives its flags when the command
// line does not set them, keyed by flag name, for those with a fixed
// default: mem-fraction-static, max-running-requests and
// chunked-prefill-size are derived from the GPU and the KV pool at
// start-up and have none, so a study over them has no defaults seed. The
// address and port are the launcher's, not a configuration's.
func Defaults() map[string]any {
	return Catalogue.Defaults(FlagHost, FlagPort)
}

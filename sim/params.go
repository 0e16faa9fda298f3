package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/vllm"
)

// EngineParams are the engine flags the simulator models, named after vLLM's
// command-line flags (--max-num-batched-tokens is MaxNumBatchedTokens).
type EngineParams struct {
	// MaxNumBatchedTokens is the per-step token budget shared by decodes and
	// prefill chunks.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// MaxNumSeqs caps the number of running requests.
	MaxNumSeqs int `json:"max_num_seqs"`
	// GPUMemoryUtilization is the fraction of each GPU's memory the engine may
	// use for weights, activations and KV cache.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// EnablePrefixCaching shares KV blocks between requests with equal
	// prefixes.
	EnablePrefixCaching bool `json:"enable_prefix_caching"`
	// EnableChunkedPrefill lets a prompt be computed over several steps; off,
	// a prompt must fit the step's remaining budget whole.
	EnableChunkedPrefill bool `json:"enable_chunked_prefill"`
	// LongPrefillTokenThreshold caps the tokens one request may compute in a
	// step (0: no cap), so one long prompt cannot take the whole budget.
	LongPrefillTokenThreshold int `json:"long_prefill_token_threshold"`
	// BlockSize is the number of tokens per KV-cache block.
	BlockSize int `json:"block_size"`
	// AsyncScheduling overlaps scheduling of the next step with the current
	// one, hiding the per-step CPU overhead.
	AsyncScheduling bool `json:"async_scheduling"`
	// EnforceEager disables CUDA graphs (more kernel-launch overhead).
	EnforceEager bool `json:"enforce_eager"`
	// MaxModelLen overrides the deployment's context limit when positive.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// KVCacheDtype is vLLM's --kv-cache-dtype (auto, fp8, ...); empty is auto.
	KVCacheDtype string `json:"kv_cache_dtype,omitempty"`
}

// DefaultEngineParams are vLLM's online-serving defaults on an 80 GB-class
// GPU: an 8192-token budget, 256 sequences, 90 % of memory, prefix caching and
// chunked prefill on, 16-token blocks.
func DefaultEngineParams() EngineParams {
	return EngineParams{
		MaxNumBatchedTokens:  8192,
		MaxNumSeqs:           256,
		GPUMemoryUtilization: 0.9,
		EnablePrefixCaching:  true,
		EnableChunkedPrefill: true,
		BlockSize:            16,
	}
}

// Validate reports the first impossible value, naming the vLLM flag.
func (p *EngineParams) Validate() error {
	switch {
	case p.MaxNumBatchedTokens < 1:
		return fmt.Errorf("max-num-batched-tokens must be at least 1, got %d", p.MaxNumBatchedTokens)
	case p.MaxNumSeqs < 1:
		return fmt.Errorf("max-num-seqs must be at least 1, got %d", p.MaxNumSeqs)
	case !(p.GPUMemoryUtilization > 0 && p.GPUMemoryUtilization <= 1):
		return fmt.Errorf("gpu-memory-utilization must be in (0, 1], got %v", p.GPUMemoryUtilization)
	case p.LongPrefillTokenThreshold < 0:
		return fmt.Errorf("long-prefill-token-threshold must not be negative, got %d", p.LongPrefillTokenThreshold)
	case p.BlockSize < 1 || p.BlockSize > 1024:
		return fmt.Errorf("block-size must be in [1, 1024], got %d", p.BlockSize)
	case p.MaxModelLen < 0:
		return fmt.Errorf("max-model-len must not be negative, got %d", p.MaxModelLen)
	}
	return nil
}

// paramKind is how a flag's value is parsed.
type paramKind uint8

const (
	kindInt paramKind = iota
	kindFloat
	kindBool
	kindString
)

type paramField struct {
	kind paramKind
	set  func(p *EngineParams, v any)
}

// paramFields maps every accepted flag (vLLM's dashed name) to its field.
var paramFields = map[string]paramField{
	"max-num-batched-tokens":       {kindInt, func(p *EngineParams, v any) { p.MaxNumBatchedTokens = v.(int) }},
	"max-num-seqs":                 {kindInt, func(p *EngineParams, v any) { p.MaxNumSeqs = v.(int) }},
	"gpu-memory-utilization":       {kindFloat, func(p *EngineParams, v any) { p.GPUMemoryUtilization = v.(float64) }},
	"enable-prefix-caching":        {kindBool, func(p *EngineParams, v any) { p.EnablePrefixCaching = v.(bool) }},
	"enable-chunked-prefill":       {kindBool, func(p *EngineParams, v any) { p.EnableChunkedPrefill = v.(bool) }},
	"long-prefill-token-threshold": {kindInt, func(p *EngineParams, v any) { p.LongPrefillTokenThreshold = v.(int) }},
	"block-size":                   {kindInt, func(p *EngineParams, v any) { p.BlockSize = v.(int) }},
	"async-scheduling":             {kindBool, func(p *EngineParams, v any) { p.AsyncScheduling = v.(bool) }},
	"enforce-eager":                {kindBool, func(p *EngineParams, v any) { p.EnforceEager = v.(bool) }},
	"max-model-len":                {kindInt, func(p *EngineParams, v any) { p.MaxModelLen = v.(int) }},
	"kv-cache-dtype":               {kindString, func(p *EngineParams, v any) { p.KVCacheDtype = v.(string) }},
}

// ParamNames lists the flags ParamsFromMap accepts, sorted.
func ParamNames() []string {
	names := make([]string, 0, len(paramFields))
	for n := range paramFields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParamsFromMap overlays flags named as on vLLM's command line
// ("max-num-batched-tokens"; any spelling vllm.FlagName normalises is accepted)
// on DefaultEngineParams and validates the result. Values may be Go numbers,
// booleans or strings as YAML, JSON or a sampler produce them. A "no-" prefix
// negates a boolean flag, as vLLM's --no-enable-prefix-caching does.
func ParamsFromMap(m map[string]any) (EngineParams, error) {
	p := DefaultEngineParams()
	if err := p.Apply(m); err != nil {
		return EngineParams{}, err
	}
	return p, nil
}

// Apply overlays the flags in m on p and validates the result.
func (p *EngineParams) Apply(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic first error
	for _, key := range keys {
		f, negate, ok := lookupParam(key)
		if !ok {
			return fmt.Errorf("engine param %q: not a flag the simulator models (known: %s)", key, strings.Join(ParamNames(), ", "))
		}
		v, err := parseParam(f.kind, m[key])
		if err != nil {
			return fmt.Errorf("engine param %q: %w", key, err)
		}
		if negate {
			v = !v.(bool)
		}
		f.set(p, v)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("engine params: %w", err)
	}
	return nil
}

// IsParam reports whether name, in any spelling vllm.FlagName accepts and
// including the "no-" form of a boolean flag, is a flag the simulator
// models.
func IsParam(name string) bool {
	_, _, ok := lookupParam(name)
	return ok
}

// lookupParam finds the field a parameter name sets, and whether the name
// is the negated ("no-") form of a boolean flag. A name that is a flag
// itself is never read as a negation.
func lookupParam(name string) (f paramField, negate, ok bool) {
	flag := vllm.FlagName(name)
	if f, ok := paramFields[flag]; ok {
		return f, false, true
	}
	if base, neg := vllm.CutNegation(flag); neg {
		if f, ok := paramFields[base]; ok && f.kind == kindBool {
			return f, true, true
		}
	}
	return paramField{}, false, false
}

func parseParam(kind paramKind, v any) (any, error) {
	switch kind {
	case kindInt:
		return parseInt(v)
	case kindFloat:
		return parseFloat(v)
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("want true or false, got %q", x)
			}
			return b, nil
		}
		return nil, fmt.Errorf("want a boolean, got %T %v", v, v)
	default:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("want a string, got %T %v", v, v)
	}
}

func parseInt(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int32:
		return int(x), nil
	case int64:
		if x > math.MaxInt32 || x < math.MinInt32 {
			return nil, fmt.Errorf("integer %d out of range", x)
		}
		return int(x), nil
	case uint64:
		if x > math.MaxInt32 {
			return nil, fmt.Errorf("integer %d out of range", x)
		}
		return int(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return nil, fmt.Errorf("want an integer, got %v", x)
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %q", x)
		}
		return n, nil
	}
	return nil, fmt.Errorf("want an integer, got %T %v", v, v)
}

func parseFloat(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("want a finite number, got %v", x)
		}
		return x, nil
	case float32:
		return parseFloat(float64(x))
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", x)
		}
		return parseFloat(f)
	}
	return nil, fmt.Errorf("want a number, got %T %v", v, v)
}

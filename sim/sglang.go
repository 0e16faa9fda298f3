package sim

import (
	"fmt"
	"github.com/spoc-project/spoc/flagcatalog"
	"sort"

	"github.com/spoc-project/spoc/sglang"
)

// FlavorSGLang marks a deployment whose engine parameters are SGLang's
// flags (DeploymentSpec.Flavor): the simulator reads them in its vLLM-like
// terms (SGLangParams).
const FlavorSGLang = "sglang"

// SGLangParams translates SGLang flags (package sglang's names, any
// spelling) into the simulator's parameters (vLLM's names) where the
// semantics match:
//
//	max-running-requests  → max-num-seqs (the same cap on the running batch)
//	chunked-prefill-size  → max-num-batched-tokens (-1: chunked prefill off)
//	mem-fraction-static   → gpu-memory-utilization
//	disable-radix-cache   → enable-prefix-caching, inverted
//	context-length        → max-model-len
//
// Where the match is not exact: SGLang's chunk is the prefill part of a
// step while vLLM's budget is shared with the decodes; mem-fraction-static
// covers the weights and the KV pool but not the activations, which
// gpu-memory-utilization includes, so the same number gives real SGLang a
// somewhat larger KV cache than the simulator; -1 turns chunked prefill
// off, and the simulator then, as vLLM, needs a max-num-batched-tokens of
// at least the context length (SGLang bounds such a prefill by
// max-prefill-tokens or the context length). ignored lists the SGLang
// flags the simulator has no counterpart of (schedule-policy,
// max-prefill-tokens, the parallelism and serving flags the deployment
// sets otherwise): a search over them is blind on the simulator. A name
// that is not in SGLang's catalogue is an error.
func SGLangParams(m map[string]any) (params map[string]any, ignored []string, err error) {
	params = make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := sglang.Catalogue.Lookup(k)
		if !ok {
			return nil, nil, fmt.Errorf("engine param %q: not an SGLang flag spoc knows", k)
		}
		v := m[k]
		if n, isNum := flagcatalog.IntValue(v); isNum && f.Kind == sglang.Int {
			v = n
		}
		if err := f.Check(v); err != nil {
			return nil, nil, fmt.Errorf("engine param %q: %w", k, err)
		}
		switch f.Name {
		case sglang.FlagMaxRunningRequests:
			params["max-num-seqs"] = v
		case sglang.FlagChunkedPrefillSize:
			if v.(int) < 0 {
				params["enable-chunked-prefill"] = false
			} else {
				params["max-num-batched-tokens"] = v
			}
		case sglang.FlagMemFractionStatic:
			params["gpu-memory-utilization"] = v
		case sglang.FlagDisableRadixCache:
			params["enable-prefix-caching"] = !v.(bool)
		case sglang.FlagContextLength:
			params["max-model-len"] = v
		default:
			ignored = append(ignored, f.Name)
		}
	}
	return params, ignored, nil
}

// ApplyParams overlays engine parameters on d's, in d's flavor: SGLang's
// flags translated by SGLangParams, vLLM's as they are (EngineParams.Apply).
func (d *Deployment) ApplyParams(m map[string]any) error {
	if d.Flavor == FlavorSGLang {
		p, _, err := SGLangParams(m)
		if err != nil {
			return err
		}
		m = p
	}
	return d.Params.Apply(m)
}

// IsParamOf reports whether name is a parameter a deployment of flavor
// takes: an SGLang flag spoc knows, or a flag the simulator models.
func IsParamOf(flavor, name string) bool {
	if flavor == FlavorSGLang {
		_, ok := sglang.Catalogue.Lookup(name)
		return ok
	}
	return IsParam(name)
}

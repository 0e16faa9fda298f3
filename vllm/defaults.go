package vllm

import "github.com/spoc-project/spoc/flagcatalog"

// Defaults returns the values vLLM gives the scheduler and memory flags
// spoc searches when the command line does not set them (`vllm serve`,
// V1 engine, an 80 GB-class GPU), keyed by FlagName. spoc's simulator
// starts from the same values (sim.DefaultEngineParams; a test in package
// tune keeps the two equal). A study queues them as a trial of its own
// when they differ from the configured engine.params.
//
// vLLM has changed some of these between releases (max-num-seqs became
// 1024 on H100-class GPUs in later versions); set engine.params to the
// values of the version you run and the study starts from those.
func Defaults() map[string]any {
	return map[string]any{
		"max-num-batched-tokens":       8192,
		"max-num-seqs":                 256,
		"gpu-memory-utilization":       0.9,
		"enable-prefix-caching":        true,
		"enable-chunked-prefill":       true,
		"long-prefill-token-threshold": 0,
		"block-size":                   16,
		"async-scheduling":             false,
		"enforce-eager":                false,
	}
}

// Canonical returns p with every flag rewritten to the form that behaves
// identically, so that two flag sets with equal canonical forms start the
// same engine. p holds the flags being compared (a trial's); base holds the
// flags every server gets, consulted (then Defaults) for the flags p does
// not set. p is not modified; flags keep their spelling in p.
//
// The equivalences are those of vLLM's V1 scheduler:
//
//   - long-prefill-token-threshold caps the tokens one request computes in
//     a step, and a step never computes more than max-num-batched-tokens,
//     so a threshold at or above the budget is the same as 0 (off).
func Canonical(p, base map[string]any) map[string]any {
	thrKey, ok := keyOf(p, "long-prefill-token-threshold")
	if !ok {
		return p
	}
	thr, ok := flagcatalog.IntValue(p[thrKey])
	if !ok || thr <= 0 {
		return p
	}
	budget, ok := lookupInt("max-num-batched-tokens", p, base)
	if !ok || thr < budget {
		return p
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = v
	}
	out[thrKey] = 0
	return out
}

// keyOf finds the key of p that spells flag.
func keyOf(p map[string]any, flag string) (string, bool) {
	if _, ok := p[flag]; ok {
		return flag, true
	}
	for k := range p {
		if FlagName(k) == flag {
			return k, true
		}
	}
	return "", false
}

// lookupInt reads an integer flag from the first of p, base and Defaults
// that sets it.
func lookupInt(flag string, p, base map[string]any) (int, bool) {
	for _, m := range []map[string]any{p, base, Defaults()} {
		if k, ok := keyOf(m, flag); ok {
			return flagcatalog.IntValue(m[k])
		}
	}
	return 0, false
}

package trace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Category is the kind of work a kernel does. Only the canonical categories
// below exist, so breakdowns from different traces and rule files compare.
type Category string

// The canonical categories, in report order.
const (
	// Attention is the attention computation itself (prefill and decode).
	Attention Category = "attention"
	// KVCache is writing keys and values into the paged cache and moving blocks.
	KVCache Category = "kv_cache"
	// MoEGEMM is the expert matrix multiplications of mixture-of-experts layers.
	MoEGEMM Category = "moe_gemm"
	// MoERouting is top-k expert selection, token sorting, dispatch and combine.
	MoERouting Category = "moe_routing"
	// GEMM is dense matrix multiplication (QKV/output projections, router, LM head).
	GEMM Category = "gemm"
	// Communication is collective communication: NCCL and custom all-reduce.
	Communication Category = "communication"
	// Elementwise is norms, activations, rotary embeddings and fused pointwise work.
	Elementwise Category = "elementwise"
	// Sampling is logits post-processing: softmax, top-k/top-p, sort, argmax.
	Sampling Category = "sampling"
	// Memory is memcpy and memset activity.
	Memory Category = "memory"
	// Other is every kernel no rule matched; Breakdown lists them.
	Other Category = "other"
)

// Categories lists the canonical categories in report order.
var Categories = []Category{Attention, KVCache, MoEGEMM, MoERouting, GEMM, Communication, Elementwise, Sampling, Memory, Other}

// ParseCategory returns the canonical category named s.
func ParseCategory(s string) (Category, error) {
	c := Category(s)
	if slices.Contains(Categories, c) {
		return c, nil
	}
	names := make([]string, len(Categories))
	for i, c := range Categories {
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown category %q (want one of %s)", s, strings.Join(names, ", "))
}

// Groups names sums of categories that a coarser model predicts as one term:
// a roofline model usually has one "moe" term for routing and expert GEMMs,
// and one "misc" term for the memory-bound rest (norms, activations, rotary,
// KV-cache writes, sampling, copies, unknown kernels). Compare accepts a group
// name wherever it accepts a category.
var Groups = map[string][]Category{
	"moe":  {MoEGEMM, MoERouting},
	"misc": {KVCache, Elementwise, Sampling, Memory, Other},
}

// resolveKey maps a category or group name onto categories.
func resolveKey(key string) ([]Category, error) {
	if cats, ok := Groups[key]; ok {
		return cats, nil
	}
	c, err := ParseCategory(key)
	if err != nil {
		groups := make([]string, 0, len(Groups))
		for g := range Groups {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		return nil, fmt.Errorf("%w, or a group (%s)", err, strings.Join(groups, ", "))
	}
	return []Category{c}, nil
}

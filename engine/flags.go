package engine

import "github.com/spoc-project/spoc/vllm"

// withoutFlags removes from p every parameter whose flag argv already sets,
// so a template that pins --tensor-parallel-size is not contradicted.
func withoutFlags(p Params, argv []string) Params {
	out := make(Params, len(p))
	for k, v := range p {
		if !vllm.HasFlag(argv, k) {
			out[k] = v
		}
	}
	return out
}

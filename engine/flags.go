package engine

import (
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/vllm"
)

// Flags renders p as vLLM command-line flags; see vllm.Flags.
//
// Deprecated: call vllm.Flags. Kept only for capacity's serveCommand until
// it calls vllm.Flags itself.
func Flags(p search.Params) ([]string, error) { return vllm.Flags(p) }

// withoutFlags removes from p every parameter whose flag argv already sets,
// so a template that pins --tensor-parallel-size is not contradicted.
func withoutFlags(p search.Params, argv []string) search.Params {
	out := make(search.Params, len(p))
	for k, v := range p {
		if !vllm.HasFlag(argv, k) {
			out[k] = v
		}
	}
	return out
}

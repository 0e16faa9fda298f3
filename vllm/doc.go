// Package vllm is spoc's one place for what it knows about vLLM's outside:
// how engine parameters become command-line flags (names, normalisation,
// the "no-" form of booleans), which model name requests must carry, the
// names of vLLM's Prometheus metrics old and new, and the HTTP paths and
// response fields spoc depends on.
//
// The launchers (package engine), the simulator (packages sim and
// sim/serve), telemetry and the load client read these facts from here, so
// that a vLLM release that renames something is one edit. The package has
// no dependencies inside spoc; parameters are plain map[string]any so that
// any map type with that underlying type (search.Params, YAML maps) can be
// passed without conversion.
//
// Each constant's comment says which vLLM behaviour it records and, where
// vLLM changed it, since when.
package vllm

// Package serve is the simulator as an HTTP server: it drives a
// sim.Cluster in scaled wall-clock time behind vLLM's OpenAI-compatible
// API, so that the load client, telemetry and the launchers can be tested
// end to end, and spoc can be demonstrated, without a GPU.
//
// Server answers /v1/chat/completions and /v1/completions (streamed or
// not, with usage and cached-token counts), /v1/models, /health, /version,
// /tokenize and /reset_prefix_cache; it exports vLLM's Prometheus metrics
// on /metrics under the names of package vllm, and dcgm-exporter style GPU
// metrics on /dcgm/metrics. One goroutine runs the engines' steps when the
// scaled clock reaches them; handlers wait for their request's tokens.
// Faults can be injected: HTTP 500s at a rate, stalls of the whole engine
// (Stall), throttled GPUs (sim.Throttle).
//
// Config.VLLMFaithful turns on a vLLM-faithful mode, in which the server can
// stand in for a real vLLM process in end-to-end tests of spoc's live path:
// gpt-oss models stream reasoning before content, chunks carry several
// tokens, cached_tokens and /reset_prefix_cache need vLLM's switches
// (--enable-prompt-tokens-details, VLLM_SERVER_DEV_MODE=1), and /version
// says which mode answers. Requests served are counted, as in vLLM, by
// vllm:request_success_total.
//
// The engine model itself — scheduler, KV cache, cost model, deployment,
// virtual-time executor — is package sim; nothing here changes what it
// computes, only when.
package serve

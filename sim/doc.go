// Package sim is spoc's built-in inference engine: a model of a vLLM-v1-like
// server that needs no GPU.
//
// Engine reproduces the v1 scheduler's decisions step by step — continuous
// batching under a per-step token budget (running requests first, then
// chunked prefills from a FCFS waiting queue), max_num_seqs, paged KV blocks
// with prefix caching by chained block hashes and LRU eviction of free cached
// blocks, and preemption by recompute when blocks run out. How long each step
// takes comes from a CostModel (perfmodel.System by default), slowed by the
// clock factor of the slowest GPU of the tensor-parallel group.
//
// The same engine runs in two clocks:
//
//   - RunVirtual drives it in simulated time with closed-loop users replaying
//     workload session scripts and writes result.Records, exactly as the HTTP
//     load runner does against a real server, plus per-second engine and GPU
//     time series. Minutes of load take a second of CPU.
//   - Package sim/serve drives a Cluster in (scaled) wall-clock time behind
//     an OpenAI-compatible HTTP API with vLLM's Prometheus metrics on
//     /metrics and dcgm-exporter style GPU metrics on /dcgm/metrics (fed by
//     a Monitor), so every other part of spoc can be tested end to end
//     without a GPU.
//
// docs/simulator.md lists what is and is not modelled.
package sim

// Package calibrate fits perfmodel's Factors to measured serving benchmarks
// and reports how far the cost model's predictions are from them.
//
// A measurement Point is one benchmark run: a deployment (model, GPU, tensor
// parallel size, server flags), a workload (closed loop of Concurrency users
// without think time, NumPrompts random prompts of lengths uniform in
// [RangeRatio·L, L], ignore-eos) and its measured output throughput per GPU,
// median time per output token and median time to first token. A Predictor
// re-creates the point's workload under given factors; Replay does it with a
// small discrete-time continuous-batching engine over perfmodel.System (vLLM
// v1 scheduling: decodes first, then chunked prefills, within
// max_num_batched_tokens and max_num_seqs). Fit minimises a robust
// (Huber on log ratios) error over the three metrics with Nelder–Mead in a
// space where every fraction stays in (0, 1) and every overhead ≥ 0; Validate
// reports predicted versus measured per point and the MAPE per metric.
package calibrate

// Package perfmodel predicts how long one engine step of an LLM inference server
// takes on given hardware, and how much KV cache fits in its memory.
//
// It holds catalogs of models (gpt-oss, Llama 3.1, Qwen3 MoE, or any Hugging Face
// config.json) and GPUs (H100, H200, A100, B200, or any YAML description), and a
// roofline cost model: every kernel family of a step (attention, dense GEMMs, MoE
// expert GEMMs, tensor-parallel all-reduce, elementwise work) costs the larger of
// its compute time and its memory time, each at an achievable fraction of the
// datasheet peak (Factors), plus per-step and per-kernel-launch overheads.
//
// The simulator calls System.Step for every scheduler step, so Step allocates
// nothing and costs well under a microsecond for a batch of hundreds of sequences.
// docs/perfmodel.md derives every formula and cites every constant.
package perfmodel

// Package roofline turns perfmodel's per-step cost prediction into the plain
// predicted split trace.Compare takes, so that a measured kernel breakdown can
// be read beside what a roofline model expects for the same batch mix.
//
// Each prediction is made under an explicit weight-format assumption. For
// gpt-oss on Hopper the two that matter are W4A16 (MXFP4 expert weights
// unpacked to BF16 for BF16 tensor-core math, which is what vLLM runs on H100)
// and FP4 (the experts multiplied natively in FP4). A GPU without FP4 tensor
// cores gets a hypothetical FP4 peak for the FP4 assumption, so that the
// "all FP4" roofline a naive estimate would use can be shown beside the
// measurement it mispredicts.
package roofline

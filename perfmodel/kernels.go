package perfmodel

import (
	"fmt"
	"strings"
)

// MoEKernel is the engine's implementation of the routed-expert GEMMs. It is
// an input of the cost model, not a constant folded into the factors: the
// same checkpoint runs on different tensor-core formats depending on the
// kernel the engine picks (vLLM: VLLM_MXFP4_USE_MARLIN,
// VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8, or its per-GPU default).
type MoEKernel uint8

// MoE kernels. The zero value lets the weight format decide (System).
const (
	// MoEKernelAuto multiplies in the resolved expert weight format.
	MoEKernelAuto MoEKernel = iota
	// MoEKernelW4A16 unpacks 4-bit weights to BF16 and multiplies at the BF16
	// peak: vLLM's Marlin MXFP4 MoE, and the Triton matmul_ogs MXFP4 kernels
	// vLLM 0.11 uses on Hopper.
	MoEKernelW4A16
	// MoEKernelMXFP4xMXFP8 multiplies MXFP4 weights by activations quantized
	// to MXFP8 on FP8-rate tensor cores (FlashInfer's TRT-LLM MoE on
	// Blackwell): 4.25-bit weights at the FP8 peak.
	MoEKernelMXFP4xMXFP8
)

// String returns the name ParseMoEKernel accepts.
func (k MoEKernel) String() string {
	switch k {
	case MoEKernelAuto:
		return "auto"
	case MoEKernelW4A16:
		return "w4a16"
	case MoEKernelMXFP4xMXFP8:
		return "mxfp4-mxfp8"
	}
	return fmt.Sprintf("MoEKernel(%d)", uint8(k))
}

// ParseMoEKernel accepts "auto", "w4a16" (aliases "marlin", "triton") and
// "mxfp4-mxfp8" (alias "flashinfer-mxfp8").
func ParseMoEKernel(s string) (MoEKernel, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return MoEKernelAuto, nil
	case "w4a16", "marlin", "triton":
		return MoEKernelW4A16, nil
	case "mxfp4-mxfp8", "mxfp4_mxfp8", "flashinfer-mxfp8":
		return MoEKernelMXFP4xMXFP8, nil
	}
	return MoEKernelAuto, fmt.Errorf("unknown MoE kernel %q (want auto, w4a16 or mxfp4-mxfp8)", s)
}

// MoEClass is the kernel class whose achieved fractions price the expert
// GEMMs: "bf16" for BF16 math (BF16 checkpoints, W4A16 and W8A16 which
// unpack to BF16), "fp8" for FP8-rate math (FP8 checkpoints, MXFP4×MXFP8),
// "fp4" for native FP4. Factors holds one compute and one memory fraction
// per class.
func (s *System) MoEClass() string {
	switch {
	case s.opts.MoEKernel == MoEKernelMXFP4xMXFP8:
		return "fp8"
	case s.expertFormat == FormatFP8 && s.gpu.FP8FLOPS > 0:
		return "fp8"
	case s.expertFormat == FormatFP4:
		return "fp4"
	}
	return "bf16"
}

// moePeak is the tensor-core FLOP/s the expert GEMMs multiply at.
func (s *System) moePeak() float64 {
	if s.opts.MoEKernel == MoEKernelMXFP4xMXFP8 {
		return s.gpu.FP8FLOPS
	}
	return s.peak(s.expertFormat)
}

// moeFractions returns the achieved compute and memory fractions of the
// expert GEMMs' kernel class.
func (s *System) moeFractions() (compute, memory float64) {
	f := &s.factors
	switch s.MoEClass() {
	case "fp8":
		return f.MoEFP8Compute, f.MoEFP8Memory
	case "fp4":
		return f.MoEFP8Compute, f.MoEFP8Memory // no FP4 data yet: the FP8 class (docs/calibration.md)
	}
	return f.MoECompute, f.MoEMemory
}

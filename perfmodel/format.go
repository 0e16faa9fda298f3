package perfmodel

import (
	"fmt"
	"strings"
)

// WeightFormat is how the quantizable linear weights of a model are stored in
// memory and multiplied on the tensor cores.
type WeightFormat uint8

// Weight formats. The zero value means "the model's and GPU's natural default"
// (see System).
const (
	// FormatDefault picks the model's checkpoint format, run natively when the
	// GPU supports it and as W4A16 otherwise.
	FormatDefault WeightFormat = iota
	// FormatBF16 stores 2 bytes per weight and multiplies in BF16.
	FormatBF16
	// FormatFP8 stores 1 byte per weight and multiplies in FP8.
	FormatFP8
	// FormatW4A16 stores 4-bit weights with one 8-bit scale per 32 (MXFP4, 4.25
	// bits per weight) and unpacks them to BF16 for BF16 math, as vLLM's Marlin
	// MXFP4 kernels do on Hopper.
	FormatW4A16
	// FormatFP4 stores MXFP4 weights (4.25 bits) and multiplies on native FP4
	// tensor cores (Blackwell).
	FormatFP4
)

// String returns the lower-case name used in configuration files.
func (f WeightFormat) String() string {
	switch f {
	case FormatDefault:
		return "default"
	case FormatBF16:
		return "bf16"
	case FormatFP8:
		return "fp8"
	case FormatW4A16:
		return "w4a16"
	case FormatFP4:
		return "fp4"
	}
	return fmt.Sprintf("WeightFormat(%d)", uint8(f))
}

// BytesPerWeight is the storage cost of one weight, including block scales.
func (f WeightFormat) BytesPerWeight() float64 {
	switch f {
	case FormatFP8:
		return 1
	case FormatW4A16, FormatFP4:
		return 4.25 / 8 // 4-bit values plus one E8M0 scale byte per 32 values (OCP MX spec)
	default:
		return 2
	}
}

// ParseWeightFormat accepts the names printed by String (case-insensitive) and
// the aliases "mxfp4" (FP4) and "auto" (default).
func ParseWeightFormat(s string) (WeightFormat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "default", "auto":
		return FormatDefault, nil
	case "bf16", "bfloat16", "fp16", "float16":
		return FormatBF16, nil
	case "fp8":
		return FormatFP8, nil
	case "w4a16", "marlin":
		return FormatW4A16, nil
	case "fp4", "mxfp4", "nvfp4":
		return FormatFP4, nil
	}
	return FormatDefault, fmt.Errorf("unknown weight format %q (want bf16, fp8, w4a16 or fp4)", s)
}

// KVCacheDtype is the element type of the paged KV cache.
type KVCacheDtype uint8

// KV cache element types; the zero value is vLLM's "auto" (the model dtype, BF16).
const (
	KVAuto KVCacheDtype = iota
	KVBF16
	KVFP8
)

// Bytes is the size of one cached K or V element.
func (d KVCacheDtype) Bytes() float64 {
	if d == KVFP8 {
		return 1
	}
	return 2
}

// String returns vLLM's --kv-cache-dtype spelling.
func (d KVCacheDtype) String() string {
	switch d {
	case KVAuto:
		return "auto"
	case KVBF16:
		return "bfloat16"
	case KVFP8:
		return "fp8"
	}
	return fmt.Sprintf("KVCacheDtype(%d)", uint8(d))
}

// ParseKVCacheDtype accepts vLLM's --kv-cache-dtype values.
func ParseKVCacheDtype(s string) (KVCacheDtype, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return KVAuto, nil
	case "bf16", "bfloat16", "fp16", "float16":
		return KVBF16, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		return KVFP8, nil
	}
	return KVAuto, fmt.Errorf("unknown KV cache dtype %q (want auto, bfloat16 or fp8)", s)
}

package trace

import (
	"os"
	"strings"
	"testing"
)

// ruleExamples are real kernel names (as nsys shows them demangled) for every
// built-in rule; TestDefaultRulesCoverage makes sure none is left without one.
var ruleExamples = []struct {
	name string
	cat  Category
	rule string
}{
	{"[CUDA memcpy Device-to-Host]", Memory, "cuda-memcpy-memset"},
	{"[CUDA memset]", Memory, "cuda-memcpy-memset"},
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Communication, "nccl"},
	{"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", Communication, "nccl"},
	{"void vllm::cross_device_reduce_2stage<__nv_bfloat16, 4>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", Communication, "vllm-custom-allreduce"},
	{"void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, 16, 4>(c10::BFloat16**, unsigned long, unsigned long, c10::BFloat16*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)", Communication, "torch-symm-mem-allreduce"},
	{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*)", KVCache, "vllm-reshape-and-cache"},
	{"void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>()", KVCache, "vllm-reshape-and-cache"},
	{"void vllm::copy_blocks_kernel<c10::BFloat16>(long*, long*, long const*, int)", KVCache, "vllm-cache-block-ops"},
	{"void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true>(Flash_fwd_params)", Attention, "flash-attention"},
	{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cutlass::gemm::GemmShape<128, 128, 64> > > > >(Params)", Attention, "flash-attention"},
	{"void flash::prepare_varlen_num_blocks_kernel(int, int, int, int const*)", Attention, "flash-attention"},
	{"kernel_unified_attention_2d", Attention, "triton-unified-attention"},
	{"kernel_unified_attention_3d", Attention, "triton-unified-attention"},
	{"reduce_segments", Attention, "triton-unified-attention"},
	{"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u> >(Params)", Attention, "flashinfer-attention"},
	{"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u>(Params)", Attention, "flashinfer-attention"},
	{"fmhaSm100fKernel_QkvBfloat16OBfloat16H64PagedKvSlidingOrChunkedCausalP64VarSeqQ128Kv128PersistentContext", Attention, "flashinfer-attention"},
	{"void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 64, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>()", Attention, "vllm-paged-attention"},
	{"_topk_forward", MoERouting, "triton-kernels-routing"},
	{"_combined_routing_compute", MoERouting, "triton-kernels-routing"},
	{"_routing_memset_indx", MoERouting, "triton-kernels-routing"},
	{"_sum_bitmatrix_rows", MoERouting, "triton-kernels-routing"},
	{"void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, 32, int, float>(float const*, bool const*, float*, int, int*, int*, int, int, int)", MoERouting, "vllm-moe-routing"},
	{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)", MoERouting, "vllm-moe-routing"},
	{"void vllm::moe::moe_sum_kernel<c10::BFloat16, 4>(c10::BFloat16*, c10::BFloat16 const*, int)", MoERouting, "vllm-moe-routing"},
	{"_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu", MoEGEMM, "triton-matmul-ogs"},
	{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1", MoEGEMM, "triton-matmul-ogs"},
	{"_finalize_matmul", MoEGEMM, "triton-matmul-ogs"},
	{"void marlin_moe_wna16::Marlin<__nv_bfloat16, 4, 8, 8, 4, 8, false, false, 0>(int4 const*, int4 const*, int4*)", MoEGEMM, "marlin-moe"},
	{"fused_moe_kernel", MoEGEMM, "fused-moe"},
	{"fused_moe_kernel_gptq_awq", MoEGEMM, "fused-moe"},
	{"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<> > >(Params)", MoEGEMM, "cutlass-grouped-gemm"},
	{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", GEMM, "cublas-xmma"},
	{"nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNT", GEMM, "cublas-nvjet"},
	{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", GEMM, "cublas-legacy"},
	{"void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16, 4, 4, false, false>(params)", GEMM, "cublas-legacy"},
	{"void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(params)", GEMM, "cublas-legacy"},
	{"void cutlass::device_kernel<vllm::cutlass_3x_gemm_sm90_fp8<cutlass::float_e4m3_t> >(Params)", GEMM, "cutlass-gemm"},
	{"void marlin::Marlin<__nv_bfloat16, 4, 8, 8, 8, 8, false, 0>(int4 const*)", GEMM, "cutlass-gemm"},
	{"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)0>(float*, int*)", Sampling, "sampling-topk-sort"},
	{"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>)", Sampling, "sampling-topk-sort"},
	{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(Op)", Sampling, "sampling-topk-sort"},
	{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", Sampling, "sampling-topk-sort"},
	{"void cub::CUB_200200_900_NS::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<float, long, int>::Policy900>()", Sampling, "sampling-topk-sort"},
	{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", Elementwise, "norms"},
	{"void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", Elementwise, "norms"},
	{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", Elementwise, "activations"},
	{"void vllm::swigluoai_and_mul_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int, float, float)", Elementwise, "activations"},
	{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)", Elementwise, "rotary"},
	{"triton_poi_fused_add_mul_0", Elementwise, "inductor-triton"},
	{"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", Elementwise, "inductor-triton"},
	{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)", Elementwise, "aten-elementwise"},
	{"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>()", Elementwise, "aten-elementwise"},
	{"void vllm::dynamic_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>()", Elementwise, "aten-elementwise"},
	{"custom_lookahead_kernel", Other, ""},
	{"void my::unheard_of<int>(int)", Other, ""},
}

func TestDefaultRulesClassify(t *testing.T) {
	rs := DefaultRules()
	for _, ex := range ruleExamples {
		cat, rule := rs.Classify(ex.name)
		if cat != ex.cat || rule != ex.rule {
			t.Errorf("%s\n  got %s by %q, want %s by %q", ex.name, cat, rule, ex.cat, ex.rule)
		}
	}
}

func TestDefaultRulesCoverage(t *testing.T) {
	covered := map[string]bool{}
	for _, ex := range ruleExamples {
		covered[ex.rule] = true
	}
	docs, err := os.ReadFile("../docs/trace.md")
	if err != nil {
		t.Fatalf("docs/trace.md documents every rule: %v", err)
	}
	for _, r := range DefaultRules().Rules() {
		if !covered[r.Name] {
			t.Errorf("built-in rule %q has no example kernel name in ruleExamples", r.Name)
		}
		if r.Evidence == "" {
			t.Errorf("built-in rule %q has no evidence", r.Name)
		}
		if !strings.Contains(string(docs), "`"+r.Name+"`") {
			t.Errorf("built-in rule %q is not documented in docs/trace.md", r.Name)
		}
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"bad category", "rules:\n  - name: mine\n    category: attn\n    match: foo\n", []string{`rule 1 "mine"`, "line 2", `unknown category "attn"`}},
		{"bad regexp", "rules:\n  - name: a\n    category: gemm\n    match: x\n  - name: broken\n    category: gemm\n    match: 'foo(('\n", []string{`rule 2 "broken"`, "line 5", "match:"}},
		{"matches everything", "rules:\n  - name: all\n    category: other\n    match: '.*'\n", []string{`rule 1 "all"`, "empty string"}},
		{"no name", "rules:\n  - category: gemm\n    match: x\n", []string{"rule 1 ", "name: required"}},
		{"no match", "rules:\n  - name: nomatch\n    category: gemm\n", []string{`rule 1 "nomatch"`, "match: required"}},
		{"unknown field", "rules:\n  - name: typo\n    categroy: gemm\n    match: x\n", []string{`rule 1 "typo"`, `unknown field "categroy"`, "line 3"}},
		{"duplicate", "rules:\n  - name: d\n    category: gemm\n    match: x\n  - name: d\n    category: gemm\n    match: y\n", []string{`rule 2 "d"`, "duplicate name (first used by rule 1)"}},
		{"unknown top key", "rule:\n  - name: a\n", []string{"line 1", `unknown key "rule"`}},
		{"empty list", "rules: []\n", []string{"non-empty list"}},
		{"empty file", "", []string{"empty file"}},
		{"not yaml", "rules: [\n", []string{"my.yaml"}},
		{"include_defaults", "include_defaults: maybe\nrules:\n  - name: a\n    category: gemm\n    match: x\n", []string{"include_defaults"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRules(strings.NewReader(tc.yaml), "my.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, "my.yaml") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseRulesOverride(t *testing.T) {
	const y = `
include_defaults: true
rules:
  - name: lookahead
    category: sampling
    match: '^custom_lookahead_kernel$'
    evidence: our speculative decoding helper
  - name: nccl
    category: other
    match: 'ncclDevKernel_Broadcast'
`
	rs, err := ParseRules(strings.NewReader(y), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cat  Category
		rule string
	}{
		{"custom_lookahead_kernel", Sampling, "lookahead"},
		{"ncclDevKernel_Broadcast_RING_LL", Other, "nccl"},
		// The user's "nccl" replaces the built-in one of that name, so an
		// all-reduce is no longer known.
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Other, ""},
		{"kernel_unified_attention_2d", Attention, "triton-unified-attention"},
	} {
		if cat, rule := rs.Classify(tc.name); cat != tc.cat || rule != tc.rule {
			t.Errorf("%s: got %s by %q, want %s by %q", tc.name, cat, rule, tc.cat, tc.rule)
		}
	}
	only, err := ParseRules(strings.NewReader("rules:\n  - name: x\n    category: gemm\n    match: nvjet\n"), "only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(only.Rules()); n != 1 {
		t.Errorf("without include_defaults the file replaces the built-ins; got %d rules", n)
	}
	if cat, _ := only.Classify("flash_fwd_kernel"); cat != Other {
		t.Errorf("flash_fwd_kernel: %s, want other", cat)
	}
}

func TestDefaultRulesYAMLRoundTrip(t *testing.T) {
	rs, err := ParseRules(strings.NewReader(string(DefaultRulesYAML())), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Rules()) != len(DefaultRules().Rules()) {
		t.Error("DefaultRulesYAML does not parse to DefaultRules")
	}
}

func FuzzParseRules(f *testing.F) {
	f.Add("include_defaults: true\nrules:\n  - name: a\n    category: gemm\n    match: x\n")
	f.Add("rules:\n  - name: [1]\n")
	f.Fuzz(func(t *testing.T, in string) {
		rs, err := ParseRules(strings.NewReader(in), "fuzz.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, r := range rs.Rules() {
			if r.Name == "" || r.Match == nil {
				t.Fatalf("accepted an invalid rule %+v", r)
			}
			if _, err := ParseCategory(string(r.Category)); err != nil {
				t.Fatal(err)
			}
		}
		rs.Classify("ncclDevKernel_AllReduce")
	})
}

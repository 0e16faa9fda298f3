package nsys

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spoc-project/spoc/trace"
)

// The tables below follow the column lists Nsight Systems documents for its
// SQLite export (schema 3.x), trimmed of nothing the reader could rely on.
const fixtureSchema = `
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (
  vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
  mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
  migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS (
  start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
  color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id),
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1,'CUDA_MEMCPY_OPER_HTOD','Host-to-Device'),
  (2,'CUDA_MEMCPY_OPER_DTOH','Device-to-Host'), (8,'CUDA_MEMCPY_OPER_DTOD','Device-to-Device');
`

// activityKind says which table a fixture activity goes to.
type activityKind int

const (
	kernelKind activityKind = iota
	memcpyDtoH
	memsetKind
)

// fixtureKernel is one gpt-oss-120b kernel as nsys names it.
type fixtureKernel struct {
	demangled, short string
	category         trace.Category
	durNS            int64
	kind             activityKind
	graph            bool // launched from a CUDA graph (decode)
}

// Real kernel names of vLLM serving gpt-oss-120b on H100 with TP=4
// (FlashAttention 3 with sinks, triton_kernels matmul_ogs MoE), shortened
// only in their parameter lists.
var (
	kRMSNorm  = fixtureKernel{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", "fused_add_rms_norm_kernel", trace.Elementwise, 2000, kernelKind, true}
	kQKV      = fixtureKernel{"nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNT", "nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNT", trace.GEMM, 6000, kernelKind, true}
	kRotary   = fixtureKernel{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", "rotary_embedding_kernel", trace.Elementwise, 1000, kernelKind, true}
	kCache    = fixtureKernel{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)", "reshape_and_cache_flash_kernel", trace.KVCache, 1000, kernelKind, true}
	kFA3      = fixtureKernel{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<64> >, 64, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<64>, cute::C<64> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<...>::Params)", "device_kernel", trace.Attention, 20000, kernelKind, true}
	kOProj    = fixtureKernel{"nvjet_tst_64x32_64x16_4x1_v_bz_splitK_TNT", "nvjet_tst_64x32_64x16_4x1_v_bz_splitK_TNT", trace.GEMM, 4000, kernelKind, true}
	kCustomAR = fixtureKernel{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", "cross_device_reduce_1stage", trace.Communication, 3000, kernelKind, true}
	kRouter   = fixtureKernel{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", trace.GEMM, 1000, kernelKind, true}
	kTopK     = fixtureKernel{"_topk_forward", "_topk_forward", trace.MoERouting, 1000, kernelKind, true}
	kRouting  = fixtureKernel{"_combined_routing_compute", "_combined_routing_compute", trace.MoERouting, 1000, kernelKind, true}
	kGateUp   = fixtureKernel{"_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu", "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu", trace.MoEGEMM, 12000, kernelKind, true}
	kDown     = fixtureKernel{"_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1", "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1", trace.MoEGEMM, 8000, kernelKind, true}
	kNCCL     = fixtureKernel{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", trace.Communication, 5000, kernelKind, true}
	kLMHead   = fixtureKernel{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", trace.GEMM, 10000, kernelKind, false}
	kArgmax   = fixtureKernel{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)", "reduce_kernel", trace.Sampling, 2000, kernelKind, false}
	// kUnknown has no demangled name, so the reader must fall back to shortName.
	kUnknown = fixtureKernel{"", "custom_lookahead_kernel", trace.Other, 1000, kernelKind, false}
	kMemcpy  = fixtureKernel{"[CUDA memcpy Device-to-Host]", "", trace.Memory, 500, memcpyDtoH, false}
	kMemset  = fixtureKernel{"[CUDA memset]", "", trace.Memory, 500, memsetKind, false}
)

// gpt-oss fixture geometry: 4 GPUs (TP=4), 3 decode steps of 2 layers each,
// one step every 200 µs, 1 µs launch gap after every activity. GPU 2 is the
// straggler: it reaches each all-reduce last, so its peers spend 4 µs longer
// in each of the two all-reduces per layer.
const (
	fixtureT0        = int64(1_000_000)
	fixtureSteps     = 3
	fixtureLayers    = 2
	fixtureStepNS    = int64(200_000)
	fixtureGapNS     = int64(1000)
	fixtureStraggler = 2
	fixtureWaitNS    = int64(4000)
)

// fixtureActivity is one activity placed on the timeline.
type fixtureActivity struct {
	k      fixtureKernel
	device int
	stream int
	start  int64
	end    int64
}

// gptOSSTimeline lays the fixture out. On GPU 0 the per-step memset runs on a
// second stream inside the LM-head GEMM, so busy time must count it once.
func gptOSSTimeline() []fixtureActivity {
	var out []fixtureActivity
	layer := []fixtureKernel{kRMSNorm, kQKV, kRotary, kCache, kFA3, kOProj, kCustomAR, kRMSNorm, kRouter, kTopK, kRouting, kGateUp, kDown, kNCCL}
	for dev := range 4 {
		for s := range fixtureSteps {
			t := fixtureT0 + int64(s)*fixtureStepNS
			place := func(k fixtureKernel) {
				d := k.durNS
				if k.category == trace.Communication && dev != fixtureStraggler {
					d += fixtureWaitNS
				}
				out = append(out, fixtureActivity{k: k, device: dev, stream: 7, start: t, end: t + d})
				t += d + fixtureGapNS
			}
			for range fixtureLayers {
				for _, k := range layer {
					place(k)
				}
			}
			lmStart := t
			place(kLMHead)
			place(kArgmax)
			place(kUnknown)
			place(kMemcpy)
			if dev == 0 {
				out = append(out, fixtureActivity{k: kMemset, device: 0, stream: 13, start: lmStart + 1000, end: lmStart + 1000 + kMemset.durNS})
			} else {
				place(kMemset)
			}
		}
	}
	return out
}

// nvtxRange is an NVTX push/pop range of the fixture.
type nvtxRange struct {
	text       string
	start, end int64
	viaStrings bool // text stored through textId instead of inline
}

// fixtureNVTX marks steps 1 and 2 as "decode_step" ranges (one inline text,
// one through StringIds, as nsys writes both) and the whole capture as "run".
var fixtureNVTX = []nvtxRange{
	{"decode_step", fixtureT0 + fixtureStepNS, fixtureT0 + fixtureStepNS + 197_000, false},
	{"decode_step", fixtureT0 + 2*fixtureStepNS, fixtureT0 + 2*fixtureStepNS + 197_000, true},
	{"run", fixtureT0 - 10_000, fixtureT0 + 700_000, false},
}

// writeFixture creates an nsys-style export at path holding acts.
func writeFixture(tb testing.TB, path string, acts []fixtureActivity, nvtx []nvtxRange, schemaVersion string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := tx.Exec(q, args...); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	exec(fixtureSchema)
	exec(`INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', ?), ('EXPORT_PRODUCT_VERSION', '2025.3.1.90')`, schemaVersion)
	for dev := range 4 {
		exec(`INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, totalMemory, smCount, clockRate, computeMajor, computeMinor)
			VALUES (0, ?, 'NVIDIA H100 80GB HBM3', ?, 85520809984, 132, 1980000000, 9, 0)`, dev, fmt.Sprintf("0000:%02x:00.0", 0x18+dev))
	}
	ids := map[string]int64{}
	stringID := func(s string) int64 {
		if id, ok := ids[s]; ok {
			return id
		}
		id := int64(len(ids) + 1)
		ids[s] = id
		exec(`INSERT INTO StringIds VALUES (?, ?)`, id, s)
		return id
	}
	for i, a := range acts {
		var graph any
		if a.k.graph {
			graph = 1000 + i%40
		}
		switch a.k.kind {
		case kernelKind:
			exec(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
				demangledName, shortName, mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
				staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, graphNodeId)
				VALUES (?, ?, ?, 1, ?, ?, 281474976710656, ?, ?, NULL, 128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, ?, ?)`,
				a.start, a.end, a.device, a.stream, i, stringID(a.k.demangled), stringID(a.k.short), i, graph)
		case memcpyDtoH:
			exec(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, bytes, copyKind, srcKind, dstKind)
				VALUES (?, ?, ?, 1, ?, ?, 4096, 2, 2, 0)`, a.start, a.end, a.device, a.stream, i)
		case memsetKind:
			exec(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, value, bytes)
				VALUES (?, ?, ?, 1, ?, ?, 0, 65536)`, a.start, a.end, a.device, a.stream, i)
		}
	}
	for i, r := range nvtx {
		if r.viaStrings {
			exec(`INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, textId, globalTid) VALUES (?, ?, 59, ?, ?, 1)`, r.start, r.end, i, stringID(r.text))
		} else {
			exec(`INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, globalTid) VALUES (?, ?, 59, ?, ?, 1)`, r.start, r.end, i, r.text)
		}
	}
	// A mark (no end) with the same text must not count as a range.
	exec(`INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES (?, NULL, 34, 'decode_step')`, fixtureT0)
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// gptOSSFixture writes the standard fixture into a temp dir and returns its path.
func gptOSSFixture(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "gpt-oss-120b-tp4.sqlite")
	writeFixture(tb, path, gptOSSTimeline(), fixtureNVTX, "3.15.1")
	return path
}

// intervals converts fixture activities to trace intervals named as the
// reader names them.
func intervals(acts []fixtureActivity) []trace.Interval {
	out := make([]trace.Interval, len(acts))
	for i, a := range acts {
		name := a.k.demangled
		if name == "" {
			name = a.k.short
		}
		out[i] = trace.Interval{Device: a.device, StartNS: a.start, EndNS: a.end, Name: name}
	}
	return out
}

func openWritable(path string) (*sql.DB, error) { return sql.Open("sqlite", "file:"+path) }

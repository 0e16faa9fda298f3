package calibrate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

func TestBreakdown(t *testing.T) {
	row := func(tp, conc int, e float64) Row {
		return Row{Point: Point{TensorParallel: tp, Concurrency: conc},
			ErrorPercent: map[string]float64{MetricThroughput: e, MetricTPOT: -e, MetricTTFT: 0}}
	}
	v := Validation{Rows: []Row{row(8, 4, 10), row(2, 64, -4), row(8, 16, -2), row(2, 128, 6)}}
	got := Breakdown(v, ByTensorParallel)
	if len(got) != 2 || got[0].Key != "tp=2" || got[1].Key != "tp=8" {
		t.Fatalf("groups %+v", got)
	}
	if got[0].MAPE[MetricThroughput] != 5 || got[0].MeanSigned[MetricThroughput] != 1 || got[1].MeanSigned[MetricTPOT] != -4 {
		t.Errorf("tp=2 %+v, tp=8 %+v", got[0], got[1])
	}
	var keys []string
	for _, g := range Breakdown(v, ByConcurrency) {
		keys = append(keys, g.Key)
	}
	if want := []string{"conc 1-8", "conc 9-32", "conc 33+"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("bands %v, want %v", keys, want)
	}
}

// TestFitTiesUnseenKernelClass: an H100-only fit sees no MXFP4×MXFP8 expert
// GEMM, so it does not fit that class's fractions but gives it the W4A16
// class's, and says so.
func TestFitTiesUnseenKernelClass(t *testing.T) {
	var pts []Point
	for _, p := range readReference(t) {
		if p.TensorParallel == 8 && p.Concurrency <= 8 {
			pts = append(pts, p)
		}
	}
	res, err := Fit(context.Background(), pts, Options{Params: []string{"moe_memory", "moe_fp8_memory", "graph_kernel_seconds"},
		MaxEvaluations: 30})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Unidentified, []string{"moe_fp8_memory"}) || res.Tied["moe_fp8_memory"] != "moe_memory" {
		t.Fatalf("unidentified %v, tied %v", res.Unidentified, res.Tied)
	}
	if res.Factors.MoEFP8Memory != res.Factors.MoEMemory {
		t.Errorf("moe_fp8_memory %g, moe_memory %g", res.Factors.MoEFP8Memory, res.Factors.MoEMemory)
	}
	if res.Factors.MoEMemory == perfmodel.UncalibratedFactors.MoEMemory {
		t.Error("moe_memory was not fitted")
	}
}

func TestLeaveGPUOutErrors(t *testing.T) {
	pts := readReference(t)[:4]
	if _, err := LeaveGPUOut(context.Background(), pts, "h200", Options{}); err == nil || !strings.Contains(err.Error(), "no point was measured on it (GPUs: h100)") {
		t.Errorf("unknown GPU: %v", err)
	}
	if _, err := LeaveGPUOut(context.Background(), pts, "H100", Options{}); err == nil || !strings.Contains(err.Error(), "no point of another GPU") {
		t.Errorf("only GPU: %v", err)
	}
}

func TestReadB200Columns(t *testing.T) {
	var b200 []Point
	for _, p := range readAllReference(t) {
		if p.GPU == "b200" {
			b200 = append(b200, p)
		}
	}
	if len(b200) != 169 {
		t.Fatalf("%d B200 points", len(b200))
	}
	p := b200[0]
	if p.Server.KVCacheDtype != "fp8" || p.Server.MoEKernel != "mxfp4-mxfp8" || !p.Server.FusedAllReduceNorm ||
		p.Server.MaxNumSeqs != 512 || p.Server.Engine != "vllm 0.11.2" {
		t.Errorf("server %+v", p.Server)
	}
	p.Model = DefaultModel
	s, err := SystemFor(p, perfmodel.UncalibratedFactors)
	if err != nil {
		t.Fatal(err)
	}
	if s.MoEClass() != "fp8" || s.Options().KVCacheDtype != perfmodel.KVFP8 {
		t.Errorf("class %s, kv %v", s.MoEClass(), s.Options().KVCacheDtype)
	}
}

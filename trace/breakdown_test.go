package trace

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestBusyNS(t *testing.T) {
	for _, tc := range []struct {
		name string
		ivs  [][2]int64
		want int64
	}{
		{"empty", nil, 0},
		{"disjoint", [][2]int64{{0, 10}, {20, 25}}, 15},
		{"nested", [][2]int64{{0, 100}, {10, 20}, {30, 40}}, 100},
		{"chained overlap", [][2]int64{{0, 10}, {5, 15}, {12, 30}}, 30},
		{"unsorted", [][2]int64{{50, 60}, {0, 10}, {5, 55}}, 60},
		{"touching", [][2]int64{{0, 10}, {10, 20}}, 20},
		{"empty interval ignored", [][2]int64{{5, 5}, {7, 3}, {0, 1}}, 1},
	} {
		ivs := make([]Interval, len(tc.ivs))
		for i, iv := range tc.ivs {
			ivs[i] = Interval{StartNS: iv[0], EndNS: iv[1]}
		}
		if got := BusyNS(ivs); got != tc.want {
			t.Errorf("%s: BusyNS = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Window
		wantErr string
	}{
		{"10s:40s", Window{StartNS: 10e9, EndNS: 40e9}, ""},
		{"1500:2500", Window{StartNS: 1500, EndNS: 2500}, ""},
		{"30s:", Window{StartNS: 30e9}, ""},
		{":250ms", Window{EndNS: 250e6}, ""},
		{"1.5s:2s", Window{StartNS: 1.5e9, EndNS: 2e9}, ""},
		{"40s:10s", Window{}, "end must be after start"},
		{"10s", Window{}, "want start:end"},
		{"ten:20s", Window{}, "start:"},
		{"-5:10", Window{}, "negative"},
	} {
		got, err := ParseWindow(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseWindow(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseWindow(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// twoGPUTimeline: on each GPU, attention 0-60, GEMM 70-90, NCCL 90-100 (GPU 0)
// or 90-95 (GPU 1, the straggler waits least), plus on GPU 0 a memset on a
// second stream at 50-70 that overlaps attention by 10.
func twoGPUTimeline() []Interval {
	return []Interval{
		{0, 0, 60, "flash_fwd_kernel"},
		{0, 70, 90, "nvjet_tst_128x64"},
		{0, 90, 100, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
		{0, 50, 70, "[CUDA memset]"},
		{1, 0, 60, "flash_fwd_kernel"},
		{1, 70, 90, "nvjet_tst_128x64"},
		{1, 90, 95, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
		{1, 96, 98, "mystery_kernel"},
	}
}

func TestAnalyzeHandComputed(t *testing.T) {
	p := Aggregate("two.sqlite", twoGPUTimeline(), Window{})
	b, err := Analyze(&p, DefaultRules(), Options{TopKernels: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Totals: attention 120, gemm 40, comm 15, memory 20, other 2 → 197.
	if b.KernelTimeNS != 197 {
		t.Fatalf("kernel time %d", b.KernelTimeNS)
	}
	for c, want := range map[Category]float64{Attention: 120.0 / 197, GEMM: 40.0 / 197, Communication: 15.0 / 197, Memory: 20.0 / 197, Other: 2.0 / 197, MoEGEMM: 0} {
		if got := b.Category(c).Share; !near(got, want) {
			t.Errorf("%s share %v, want %v", c, got, want)
		}
	}
	// Window [0, 100): GPU 0 busy 0-100 minus the 60-70 gap filled by the
	// memset → 100; GPU 1 busy 60+20+5+2 = 87.
	g0, g1 := b.GPUs[0], b.GPUs[1]
	if g0.BusyNS != 100 || g0.KernelTimeNS != 110 || !near(g0.IdleFraction, 0) {
		t.Errorf("GPU 0: %+v", g0)
	}
	if g1.BusyNS != 87 || !near(g1.IdleFraction, 0.13) {
		t.Errorf("GPU 1: %+v", g1)
	}
	if !near(g0.Categories[0].Share, 60.0/110) {
		t.Errorf("GPU 0 attention share %v", g0.Categories[0].Share)
	}
	if len(b.UnknownKernels) != 1 || b.UnknownKernels[0].Name != "mystery_kernel" || !near(b.UnknownKernels[0].Share, 2.0/197) {
		t.Errorf("unknown %+v", b.UnknownKernels)
	}
	im := b.Imbalance
	// Communication 10 and 5: spread (10-5)/7.5 = 2/3 > 0.2 → GPU 1.
	if im == nil || im.Straggler == nil || *im.Straggler != 1 || !near(im.CommunicationSpread, 2.0/3) {
		t.Errorf("imbalance %+v", im)
	}
	if im.Ranks[0].ComputeNS != 80 || im.Ranks[1].ComputeNS != 82 {
		t.Errorf("compute per rank %+v (memory is not compute)", im.Ranks)
	}
	if n := len(b.Category(Attention).TopKernels); n != 1 {
		t.Errorf("TopKernels option ignored: %d", n)
	}
}

func TestAnalyzeBalancedAndSingleGPU(t *testing.T) {
	ivs := []Interval{
		{0, 0, 10, "ncclDevKernel_AllReduce"}, {1, 0, 11, "ncclDevKernel_AllReduce"},
	}
	p := Aggregate("x", ivs, Window{})
	b, err := Analyze(&p, DefaultRules(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Imbalance == nil || b.Imbalance.Straggler != nil || !strings.HasPrefix(b.Imbalance.Note, "balanced") {
		t.Errorf("10 vs 11 is balanced: %+v", b.Imbalance)
	}
	p = Aggregate("x", ivs[:1], Window{})
	if b, _ = Analyze(&p, DefaultRules(), Options{}); b.Imbalance != nil {
		t.Errorf("one GPU has no imbalance: %+v", b.Imbalance)
	}
}

func TestAnalyzeAllDevicesProfile(t *testing.T) {
	p := &Profile{Source: "kern_sum.csv", Devices: []DeviceProfile{{Device: AllDevices, Kernels: []KernelStat{
		{Name: "flash_fwd_kernel", Count: 3, TimeNS: 300},
		{Name: "nvjet_tst", Count: 1, TimeNS: 100},
	}}}}
	b, err := Analyze(p, DefaultRules(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.GPUs) != 0 || b.Imbalance != nil || !near(b.Category(Attention).Share, 0.75) {
		t.Errorf("breakdown %+v", b)
	}
	if b.GPUs == nil || b.UnknownKernels == nil {
		t.Error("empty lists must encode as [] in JSON, not null")
	}
}

func TestCompare(t *testing.T) {
	p := Aggregate("x", twoGPUTimeline(), Window{})
	b, err := Analyze(&p, DefaultRules(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Covered: attention 120, gemm 40, communication 15, moe 0 → 175;
	// uncovered memory 20 + other 2 of 197.
	c, err := Compare(b, map[string]float64{"attention": 5, "gemm": 3, "communication": 1, "moe": 1})
	if err != nil {
		t.Fatal(err)
	}
	if !near(c.UncoveredShare, 22.0/197) {
		t.Errorf("uncovered %v", c.UncoveredShare)
	}
	want := []ComparisonRow{
		{Key: "attention", MeasuredShare: 120.0 / 175, PredictedShare: 0.5},
		{Key: "moe", MeasuredShare: 0, PredictedShare: 0.1},
		{Key: "gemm", MeasuredShare: 40.0 / 175, PredictedShare: 0.3},
		{Key: "communication", MeasuredShare: 15.0 / 175, PredictedShare: 0.1},
	}
	if len(c.Rows) != len(want) {
		t.Fatalf("rows %+v", c.Rows)
	}
	for i, w := range want {
		r := c.Rows[i]
		if r.Key != w.Key || !near(r.MeasuredShare, w.MeasuredShare) || !near(r.PredictedShare, w.PredictedShare) ||
			!near(r.Delta, w.PredictedShare-w.MeasuredShare) {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	for _, tc := range []struct {
		pred map[string]float64
		want string
	}{
		{map[string]float64{}, "empty"},
		{map[string]float64{"attn": 1}, `unknown category "attn"`},
		{map[string]float64{"moe": 1, "moe_gemm": 1}, "covered by both"},
		{map[string]float64{"gemm": -1}, "non-negative"},
		{map[string]float64{"gemm": math.NaN()}, "finite"},
		{map[string]float64{"gemm": 0}, "sum to zero"},
	} {
		if _, err := Compare(b, tc.pred); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compare(%v) error %v, want %q", tc.pred, err, tc.want)
		}
	}
	var sb strings.Builder
	if err := WriteComparisonText(&sb, []string{"W4A16", "FP4"}, []*Comparison{c, c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "W4A16") || !strings.Contains(sb.String(), "68.6%") {
		t.Errorf("comparison text:\n%s", sb.String())
	}
}

func TestWriteTextAndRecipe(t *testing.T) {
	p := Aggregate("two.sqlite", twoGPUTimeline(), Window{})
	b, err := Analyze(&p, DefaultRules(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := WriteText(&sb, b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attention", "60.9%", "idle", "13.0%", "likely straggler", "mystery_kernel"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, sb.String())
		}
	}
	sb.Reset()
	if err := WriteRecipe(&sb, RecipeOptions{Model: "m", TensorParallel: 2, Duration: 15 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--cuda-graph-trace=node", "--trace=cuda,nvtx,osrt", "--trace-fork-before-exec=true",
		"VLLM_WORKER_MULTIPROC_METHOD=spawn", "nsys start", "nsys stop", "--duration=15", "nsys export --type sqlite",
		"vllm serve m --tensor-parallel-size 2", "sleep 15"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("recipe lacks %q", want)
		}
	}
}

func TestFormatNS(t *testing.T) {
	for ns, want := range map[int64]string{950: "950 ns", 12_345: "12.3 µs", 4_560_000: "4.56 ms", 1_234_000_000: "1.234 s"} {
		if got := FormatNS(ns); got != want {
			t.Errorf("FormatNS(%d) = %q, want %q", ns, got, want)
		}
	}
}

func ExampleAnalyze() {
	p := Aggregate("example", []Interval{
		{Device: 0, StartNS: 0, EndNS: 300, Name: "kernel_unified_attention_2d"},
		{Device: 0, StartNS: 300, EndNS: 400, Name: "nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNT"},
		{Device: 0, StartNS: 500, EndNS: 600, Name: "[CUDA memset]"},
	}, Window{})
	b, _ := Analyze(&p, DefaultRules(), Options{})
	for _, c := range b.Categories {
		if c.TimeNS > 0 {
			fmt.Printf("%s %.1f%%\n", c.Name, 100*c.Share)
		}
	}
	fmt.Printf("idle %.1f%%\n", 100*b.GPUs[0].IdleFraction)
	// Output:
	// attention 60.0%
	// gemm 20.0%
	// memory 20.0%
	// idle 16.7%
}

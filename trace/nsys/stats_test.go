package nsys

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/trace"
)

// statsCSV is what `nsys stats --report cuda_gpu_kern_sum --format csv` prints
// for the gpt-oss fixture: progress lines first, then the CSV. Kernel names
// with commas in their parameter lists are quoted.
const statsCSV = "Generating SQLite file steady.sqlite from steady.nsys-rep\r\n" +
	"Processing [steady.sqlite] with [/opt/nvidia/nsight-systems/2025.3.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... \r\n" +
	"\r\n" +
	`Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
25.3,480000,24,20000.0,20000.0,20000,20000,0.0,"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > > > >(Params)"
15.8,300000,24,12500.0,12500.0,12000,13000,500.0,_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu
9.5,180000,24,7500.0,7500.0,7000,8000,500.0,_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1
12.6,240000,24,10000.0,10000.0,6000,14000,4000.0,ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)
20.2,384000,84,4571.4,4000.0,1000,10000,2000.0,nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNT
6.3,120000,72,1666.7,2000.0,1000,2000,471.4,"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
5.0,95000,12,7916.7,8000.0,7000,9000,500.0,custom_lookahead_kernel
5.3,101000,12,8416.7,8000.0,8000,9000,500.0,custom_lookahead_kernel

`

func TestReadStatsCSV(t *testing.T) {
	p, err := ReadStatsCSV(strings.NewReader(statsCSV), "kern_sum.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices) != 1 || p.Devices[0].Device != trace.AllDevices {
		t.Fatalf("devices %+v", p.Devices)
	}
	ks := p.Devices[0].Kernels
	if len(ks) != 7 {
		t.Fatalf("%d kernels, want 7 (the duplicate name merged)", len(ks))
	}
	if ks[0].Count != 24 || ks[0].TimeNS != 480000 || !strings.HasPrefix(ks[0].Name, "void cutlass::device_kernel<flash::") {
		t.Errorf("first kernel %+v", ks[0])
	}
	if last := ks[6]; last.Name != "custom_lookahead_kernel" || last.TimeNS != 196000 || last.Count != 24 {
		t.Errorf("merged kernel %+v", last)
	}
	b, err := trace.Analyze(p, trace.DefaultRules(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Total 480+300+180+240+384+120+196 = 1900 µs.
	for c, want := range map[trace.Category]float64{
		trace.Attention: 480.0 / 1900, trace.MoEGEMM: 480.0 / 1900, trace.Communication: 240.0 / 1900,
		trace.GEMM: 384.0 / 1900, trace.Elementwise: 120.0 / 1900, trace.Other: 196.0 / 1900,
	} {
		approx(t, string(c)+" share", b.Category(c).Share, want)
	}
	if len(b.GPUs) != 0 || len(b.UnknownKernels) != 1 {
		t.Errorf("gpus %d unknown %+v", len(b.GPUs), b.UnknownKernels)
	}
}

func TestReadStatsCSVUnits(t *testing.T) {
	in := "\ufeffTime(%),Total Time (us),Calls,Average,Name\n60.0,1.5,3,0.5,flash_fwd_kernel\n40.0,\"1,000\",2,500,nvjet_x\n"
	p, err := ReadStatsCSV(strings.NewReader(in), "old.csv")
	if err != nil {
		t.Fatal(err)
	}
	ks := p.Devices[0].Kernels
	if ks[0].TimeNS != 1500 || ks[0].Count != 3 || ks[1].TimeNS != 1_000_000 {
		t.Errorf("kernels %+v", ks)
	}
}

func TestReadStatsCSVErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no header", "Generating SQLite file x\nProcessing...\n", `no header with "Total Time" and "Name"`},
		{"empty", "", "no header"},
		{"bad number", "Total Time (ns),Instances,Name\n100,1,a\nabc,2,b\n", `line 3: total time: "abc" is not a number`},
		{"negative", "Total Time (ns),Instances,Name\n-5,1,a\n", "line 2: total time"},
		{"short row", "Total Time (ns),Instances,Name\n100,1\n", "line 2: 2 fields"},
		{"fractional count", "Total Time (ns),Instances,Name\n100,1.5,a\n", "line 2: instances"},
		{"empty name", "Total Time (ns),Instances,Name\n100,1, \n", "line 2: empty kernel name"},
		{"unknown unit", "Total Time (fortnights),Name\n1,a\n", "no header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadStatsCSV(strings.NewReader(tc.in), "k.csv")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "k.csv") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadStatsCSV(f *testing.F) {
	f.Add(statsCSV)
	f.Add("Time(%),Total Time (us),Calls,Name\n1,2,3,x\n")
	f.Add("Total Time (ns),Name\n\"1,0\",\"a\"\"b\"\n\nTotal Time (ns),Name\n5,c\n")
	f.Add("Total Time (s),Instances,Name\n1e300,1,x\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadStatsCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		for _, k := range p.Devices[0].Kernels {
			if k.TimeNS < 0 || k.Count < 0 || strings.TrimSpace(k.Name) == "" {
				t.Fatalf("invalid kernel %+v", k)
			}
		}
		if _, err := trace.Analyze(p, trace.DefaultRules(), trace.Options{}); err != nil {
			t.Fatalf("analyze a profile the reader accepted: %v", err)
		}
	})
}

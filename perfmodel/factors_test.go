package perfmodel

import (
	"math"
	"testing"
)

func TestFactorsGetSet(t *testing.T) {
	names := FactorNames()
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			t.Fatalf("factor name %q empty or repeated", n)
		}
		seen[n] = true
		f := UncalibratedFactors
		if err := f.Set(n, 0.123); err != nil {
			t.Fatal(err)
		}
		if v, _ := f.Get(n); v != 0.123 {
			t.Errorf("%s: set 0.123, got %g", n, v)
		}
	}
	if len(names) != 17 {
		t.Errorf("%d factors, want 17", len(names))
	}
	var f Factors
	if err := f.Set("nope", 1); err == nil {
		t.Error("unknown factor accepted")
	}
}

func TestFactorsValidate(t *testing.T) {
	if err := UncalibratedFactors.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range Calibrations {
		if err := c.Factors.Validate(); err != nil {
			t.Errorf("calibration %s: %v", c.Family, err)
		}
	}
	tests := []struct {
		name string
		v    float64
	}{
		{"dense_compute", 0}, {"moe_memory", 1.01}, {"network", -0.5}, {"attention_memory", math.NaN()},
		{"step_overhead_seconds", -1e-6}, {"graph_kernel_seconds", math.Inf(1)},
	}
	for _, tc := range tests {
		f := UncalibratedFactors
		_ = f.Set(tc.name, tc.v)
		if err := f.Validate(); err == nil {
			t.Errorf("%s = %g accepted", tc.name, tc.v)
		}
	}
	m, _ := LookupModel("gpt-oss-20b")
	g, _ := LookupGPU("h100")
	bad := UncalibratedFactors
	bad.MoECompute = 2
	if _, err := NewSystem(m, g, SystemOptions{Factors: bad}); err == nil {
		t.Error("NewSystem accepted a factor above 1")
	}
}

func TestNewSystemOptions(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	tests := []struct {
		name string
		o    SystemOptions
	}{
		{"gpus not multiple", SystemOptions{TensorParallel: 4, GPUs: 6}},
		{"heads do not split", SystemOptions{TensorParallel: 3}},
		{"clock count", SystemOptions{TensorParallel: 2, ClockFactors: []float64{1}}},
		{"clock range", SystemOptions{TensorParallel: 2, ClockFactors: []float64{1, 1.2}}},
		{"negative seqs", SystemOptions{MaxNumSeqs: -1}},
	}
	for _, tc := range tests {
		if _, err := NewSystem(m, g, tc.o); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	s := mustSystem(t, m, g, SystemOptions{TensorParallel: 2})
	o := s.Options()
	if o.GPUs != 2 || o.MaxNumSeqs != DefaultMaxNumSeqs || o.BlockSize != DefaultBlockSize || o.CUDAGraphMaxTokens != DefaultCUDAGraphMaxTokens {
		t.Errorf("defaults not filled: %+v", o)
	}
	if s.Factors() != DefaultFactors(m) {
		t.Error("zero Factors did not select the model's defaults")
	}
	th, err := s.WithClockFactors([]float64{1, 0.7})
	if err != nil || th.ClockFactor() != 0.7 || s.ClockFactor() != 1 {
		t.Errorf("WithClockFactors: %v, clock %g (original %g)", err, th.ClockFactor(), s.ClockFactor())
	}
	b := []Seq{{NewTokens: 4096}}
	if th.Step(b).Seconds <= s.Step(b).Seconds {
		t.Error("a throttled rank did not slow a prefill step")
	}
}

func TestParseFormats(t *testing.T) {
	for in, want := range map[string]WeightFormat{"": FormatDefault, "BF16": FormatBF16, "fp8": FormatFP8, "w4a16": FormatW4A16, "mxfp4": FormatFP4} {
		got, err := ParseWeightFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseWeightFormat(%q) = %v, %v", in, got, err)
		}
		if want != FormatDefault {
			if back, _ := ParseWeightFormat(want.String()); back != want {
				t.Errorf("%v does not round-trip", want)
			}
		}
	}
	if _, err := ParseWeightFormat("int3"); err == nil {
		t.Error("int3 accepted")
	}
	for in, want := range map[string]KVCacheDtype{"auto": KVAuto, "bfloat16": KVBF16, "fp8_e4m3": KVFP8} {
		got, err := ParseKVCacheDtype(in)
		if err != nil || got != want {
			t.Errorf("ParseKVCacheDtype(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseKVCacheDtype("int8"); err == nil {
		t.Error("int8 KV accepted")
	}
	if KVFP8.Bytes() != 1 || KVAuto.Bytes() != 2 || FormatFP4.BytesPerWeight() != 4.25/8 {
		t.Error("element sizes")
	}
}

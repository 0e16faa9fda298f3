package calibrate

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestReadReferenceCSV(t *testing.T) {
	pts := readReference(t)
	if len(pts) != 86 {
		t.Fatalf("%d points, want 86", len(pts))
	}
	p := pts[0]
	want := Point{Source: "inferencemax_gptoss120b_h100_vllm0.13.csv:2", GPU: "h100", TensorParallel: 2, GPUs: 2,
		InputLen: 1024, OutputLen: 1024, RangeRatio: 0.8, NumPrompts: 40, Concurrency: 4, Server: Server{Engine: "vllm 0.13.0"},
		Measured: Metrics{OutputThroughputPerGPU: 369.3808, MedianTPOTSeconds: 0.0052404, MedianTTFTSeconds: 0.0514709}}
	if p.Key() != want.Key() || p.Source != want.Source || p.Measured != want.Measured {
		t.Errorf("first point\n%+v\nwant\n%+v", p, want)
	}
	tps := map[int]int{}
	for _, p := range pts {
		tps[p.TensorParallel]++
		if p.NumPrompts != 10*p.Concurrency {
			t.Errorf("%s: %d prompts at concurrency %d", p.Source, p.NumPrompts, p.Concurrency)
		}
	}
	if tps[2] != 30 || tps[4] != 30 || tps[8] != 26 {
		t.Errorf("points per TP %v", tps)
	}
}

func TestReadCSVErrors(t *testing.T) {
	header := "tp,num_gpus,isl,osl,conc,output_tput_per_gpu_tok_s,median_ttft_ms,median_tpot_ms,hw\n"
	tests := []struct{ name, csv, want string }{
		{"missing column", "tp,isl,osl,conc,median_ttft_ms,median_tpot_ms,hw\n2,1,1,4,1,1,h100\n", `no "output_tput_per_gpu_tok_s" column`},
		{"bad number", header + "2,2,1024,1024,4,369,51,5,h100\n2,2,1024,1024,4,abc,51,5,h100\n", `m.csv:3: column "output_tput_per_gpu_tok_s": "abc" is not a number`},
		{"bad integer", header + "2.5,2,1024,1024,4,369,51,5,h100\n", `column "tp": "2.5" is not an integer`},
		{"zero concurrency", header + "2,2,1024,1024,0,369,51,5,h100\n", "concurrency 0"},
		{"negative latency", header + "2,2,1024,1024,4,369,-51,5,h100\n", "median_ttft"},
		{"no gpu", header + "2,2,1024,1024,4,369,51,5,\n", "no GPU"},
		{"ragged", header + "2,2,1024\n", "wrong number of fields"},
		{"empty", "", "empty file"},
		{"header only", header, "no points"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMeasurements(strings.NewReader(tc.csv), "m.csv")
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m.csv") {
				t.Errorf("error %q, want it to name m.csv and %q", err, tc.want)
			}
		})
	}
}

func TestReadBenchJSON(t *testing.T) {
	f, err := os.Open("testdata/bench-serve.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pts, err := ReadMeasurements(f, "bench-serve.json")
	if err != nil {
		t.Fatal(err)
	}
	want := Point{Source: "bench-serve.json#1", Model: "openai/gpt-oss-120b", GPU: "h100", TensorParallel: 8, GPUs: 8,
		InputLen: 1024, OutputLen: 1024, RangeRatio: 0.8, NumPrompts: 40, Concurrency: 4,
		Server:   Server{MaxNumBatchedTokens: 8192},
		Measured: Metrics{OutputThroughputPerGPU: 1181.1 / 8, MedianTPOTSeconds: 3.72 / 1e3, MedianTTFTSeconds: 30.2 / 1e3}}
	if len(pts) != 1 || pts[0].Key() != want.Key() || !metricsClose(pts[0].Measured, want.Measured) || pts[0].Source != want.Source {
		t.Errorf("got %+v\nwant %+v", pts, want)
	}

	base := `"max_concurrency": 2, "num_prompts": 3, "output_throughput": 100, "median_ttft_ms": 10, "median_tpot_ms": 2, "tp": 1, "gpu": "h200", "model_id": "m"`
	detailed := `{` + base + `, "input_lens": [10, 20, 30], "output_lens": [5, 6, 7]}`
	pts, err = ReadMeasurements(strings.NewReader("["+detailed+","+detailed+"]"), "arr.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[1].Source != "arr.json#2" || pts[0].InputLen != 30 || pts[0].OutputLen != 7 ||
		len(pts[0].InputLens) != 3 || pts[0].GPUs != 1 || pts[0].Measured.OutputThroughputPerGPU != 100 {
		t.Errorf("detailed array: %+v", pts)
	}
	pts, err = ReadMeasurements(strings.NewReader(detailed+"\n"+detailed+"\n"), "lines.json")
	if err != nil || len(pts) != 2 {
		t.Errorf("JSON lines: %d points, %v", len(pts), err)
	}

	errs := []struct{ name, json, want string }{
		{"no tp", `{"max_concurrency": 2, "output_throughput": 100, "median_ttft_ms": 10, "median_tpot_ms": 2, "gpu": "h100"}`, "--metadata tp=N"},
		{"no ttft", `{"max_concurrency": 2, "output_throughput": 100, "median_tpot_ms": 2, "tp": 1}`, `missing field "median_ttft_ms"`},
		{"bad tp", `{"max_concurrency": 2, "output_throughput": 100, "median_ttft_ms": 10, "median_tpot_ms": 2, "tp": "two"}`, `field "tp"`},
		{"syntax", `{"max_concurrency": 2,,}`, "invalid character"},
		{"lens mismatch", `{` + base + `, "input_lens": [10, 20], "output_lens": [5]}`, "input and output lengths"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMeasurements(strings.NewReader(tc.json), "b.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "b.json") {
				t.Errorf("error %v, want it to name b.json and %q", err, tc.want)
			}
		})
	}
}

func metricsClose(a, b Metrics) bool {
	for _, n := range MetricNames {
		if math.Abs(a.Get(n)-b.Get(n)) > 1e-12*math.Abs(b.Get(n)) {
			return false
		}
	}
	return true
}

func FuzzReadMeasurements(f *testing.F) {
	ref, err := os.ReadFile("testdata/inferencemax_gptoss120b_h100_vllm0.13.csv")
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(ref), "\n")
	f.Add([]byte(strings.Join(lines[:4], "")))
	js, err := os.ReadFile("testdata/bench-serve.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js)
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, err := ReadMeasurements(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			return
		}
		for _, p := range pts {
			if p.Model == "" {
				p.Model = DefaultModel
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("ReadMeasurements returned an invalid point: %v", err)
			}
		}
	})
}

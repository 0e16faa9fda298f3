package calibrate

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxMeasurementBytes bounds one measurement file.
const maxMeasurementBytes = 64 << 20

// ReadMeasurements reads points from the reference CSV schema
// (shared/data/calibration: one row per run, throughputs per GPU, latencies
// in ms) or from a `vllm bench serve --save-result` JSON file (one object, or
// several objects one per line). name is used in errors and Point.Source.
func ReadMeasurements(r io.Reader, name string) ([]Point, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxMeasurementBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read measurements %s: %w", name, err)
	}
	if len(data) > maxMeasurementBytes {
		return nil, fmt.Errorf("read measurements %s: larger than %d bytes", name, maxMeasurementBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("read measurements %s: empty file", name)
	}
	var pts []Point
	if trimmed[0] == '{' || trimmed[0] == '[' {
		pts, err = readBenchJSON(trimmed, name)
	} else {
		pts, err = readCSV(data, name)
	}
	if err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("read measurements %s: no points", name)
	}
	return pts, nil
}

// csvColumns maps Point fields to accepted header names (first wins).
var csvColumns = map[string][]string{
	"tp":          {"tp", "tensor_parallel_size"},
	"gpus":        {"num_gpus", "gpus"},
	"isl":         {"isl", "input_len", "random_input_len"},
	"osl":         {"osl", "output_len", "random_output_len"},
	"ratio":       {"random_range_ratio_assumed", "random_range_ratio", "range_ratio"},
	"prompts":     {"num_prompts"},
	"conc":        {"conc", "max_concurrency", "concurrency"},
	"tput":        {"output_tput_per_gpu_tok_s", "output_throughput_per_gpu"},
	"ttft":        {"median_ttft_ms"},
	"tpot":        {"median_tpot_ms"},
	"gpu":         {"hw", "gpu"},
	"model":       {"model", "model_id"},
	"mnbt":        {"max_num_batched_tokens"},
	"mns":         {"max_num_seqs"},
	"graph":       {"cuda_graph_max_tokens", "max_cudagraph_capture_size"},
	"util":        {"gpu_memory_utilization"},
	"maxmodellen": {"max_model_len"},
	"async":       {"async_scheduling"},
	"engine":      {"engine", "image"},
	"kvdtype":     {"kv_cache_dtype"},
	"moekernel":   {"moe_kernel"},
	"fusedar":     {"fuse_allreduce_rms", "fused_allreduce_norm"},
}

var csvRequired = []string{"tp", "isl", "osl", "conc", "tput", "ttft", "tpot", "gpu"}

func readCSV(data []byte, name string) ([]Point, error) {
	cr := csv.NewReader(bufio.NewReader(bytes.NewReader(data)))
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read measurements %s: header: %w", name, err)
	}
	col := map[string]int{}
	for key, names := range csvColumns {
		for _, n := range names {
			for i, h := range header {
				if strings.EqualFold(strings.TrimSpace(h), n) {
					if _, done := col[key]; !done {
						col[key] = i
					}
				}
			}
		}
	}
	for _, key := range csvRequired {
		if _, ok := col[key]; !ok {
			return nil, fmt.Errorf("read measurements %s: header has no %q column", name, csvColumns[key][0])
		}
	}
	var pts []Point
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read measurements %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		src := fmt.Sprintf("%s:%d", name, line)
		f := fieldReader{rec: rec, col: col, header: header, src: src}
		p := Point{Source: src, GPU: f.str("gpu"), Model: f.str("model")}
		p.TensorParallel = f.int("tp", 0)
		p.GPUs = f.int("gpus", p.TensorParallel)
		p.InputLen, p.OutputLen = f.int("isl", 0), f.int("osl", 0)
		p.RangeRatio = f.float("ratio", 1)
		p.Concurrency = f.int("conc", 0)
		p.NumPrompts = f.int("prompts", 10*p.Concurrency)
		p.Server = Server{MaxNumBatchedTokens: f.int("mnbt", 0), MaxNumSeqs: f.int("mns", 0),
			CUDAGraphMaxTokens: f.int("graph", 0), GPUMemoryUtilization: f.float("util", 0), MaxModelLen: f.int("maxmodellen", 0),
			SyncScheduling: !f.bool("async", true), Engine: engineName(f.str("engine")), KVCacheDtype: f.str("kvdtype"),
			MoEKernel: f.str("moekernel"), FusedAllReduceNorm: f.bool("fusedar", false)}
		p.Measured = Metrics{OutputThroughputPerGPU: f.float("tput", 0),
			MedianTPOTSeconds: f.float("tpot", 0) / 1e3, MedianTTFTSeconds: f.float("ttft", 0) / 1e3}
		if f.err != nil {
			return nil, fmt.Errorf("read measurements %w", f.err)
		}
		if err := p.validateRead(); err != nil {
			return nil, fmt.Errorf("read measurements %w", err)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// engineName turns a container image ("vllm/vllm-openai:v0.13.0") into an
// engine name ("vllm 0.13.0"); other values are kept as written.
func engineName(s string) string {
	if i := strings.LastIndex(s, ":v"); i > 0 && strings.Contains(s[:i], "vllm") {
		return "vllm " + s[i+2:]
	}
	return s
}

// validateRead is Validate without the model check: files may leave the model
// to FitOptions.Model.
func (p *Point) validateRead() error {
	if p.Model != "" {
		return p.Validate()
	}
	q := *p
	q.Model = "unset"
	return q.Validate()
}

// fieldReader parses named CSV cells, remembering the first error.
type fieldReader struct {
	rec    []string
	col    map[string]int
	header []string
	src    string
	err    error
}

func (f *fieldReader) cell(key string) (string, string, bool) {
	i, ok := f.col[key]
	if !ok || i >= len(f.rec) {
		return "", "", false
	}
	v := strings.TrimSpace(f.rec[i])
	return v, f.header[i], v != ""
}

func (f *fieldReader) str(key string) string {
	v, _, _ := f.cell(key)
	return v
}

func (f *fieldReader) float(key string, def float64) float64 {
	v, h, ok := f.cell(key)
	if !ok {
		return def
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		if f.err == nil {
			f.err = fmt.Errorf("%s: column %q: %q is not a number", f.src, h, v)
		}
		return 0
	}
	return x
}

func (f *fieldReader) bool(key string, def bool) bool {
	v, h, ok := f.cell(key)
	if !ok {
		return def
	}
	x, err := strconv.ParseBool(v)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("%s: column %q: %q is not true or false", f.src, h, v)
		}
		return def
	}
	return x
}

func (f *fieldReader) int(key string, def int) int {
	v, h, ok := f.cell(key)
	if !ok {
		return def
	}
	x, err := strconv.Atoi(v)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("%s: column %q: %q is not an integer", f.src, h, v)
		}
		return 0
	}
	return x
}

// benchResult holds the fields of a `vllm bench serve` result JSON that a
// point needs. Deployment facts vLLM does not record (tensor parallel size,
// GPU) come from --metadata key=value pairs, which vLLM merges into the file.
type benchResult struct {
	ModelID          string   `json:"model_id"`
	Model            string   `json:"model"`
	NumPrompts       *int     `json:"num_prompts"`
	MaxConcurrency   *int     `json:"max_concurrency"`
	Completed        *int     `json:"completed"`
	Duration         float64  `json:"duration"`
	OutputThroughput *float64 `json:"output_throughput"`
	MedianTTFTms     *float64 `json:"median_ttft_ms"`
	MedianTPOTms     *float64 `json:"median_tpot_ms"`
	InputLens        []int    `json:"input_lens"`
	OutputLens       []int    `json:"output_lens"`
	// --metadata
	TP                   metaValue `json:"tp"`
	TensorParallelSize   metaValue `json:"tensor_parallel_size"`
	NumGPUs              metaValue `json:"num_gpus"`
	GPU                  string    `json:"gpu"`
	HW                   string    `json:"hw"`
	RandomInputLen       metaValue `json:"random_input_len"`
	RandomOutputLen      metaValue `json:"random_output_len"`
	RandomRangeRatio     metaValue `json:"random_range_ratio"`
	MaxNumBatchedTokens  metaValue `json:"max_num_batched_tokens"`
	MaxNumSeqs           metaValue `json:"max_num_seqs"`
	GPUMemoryUtilization metaValue `json:"gpu_memory_utilization"`
	AsyncScheduling      metaValue `json:"async_scheduling"`
}

func readBenchJSON(data []byte, name string) ([]Point, error) {
	var results []benchResult
	if data[0] == '[' {
		if err := json.Unmarshal(data, &results); err != nil {
			return nil, fmt.Errorf("read measurements %s: %w", name, err)
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 1; ; i++ {
			var b benchResult
			err := dec.Decode(&b)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("read measurements %s#%d: %w", name, i, err)
			}
			results = append(results, b)
		}
	}
	var pts []Point
	for i := range results {
		b := &results[i]
		src := fmt.Sprintf("%s#%d", name, i+1)
		p, err := b.point(src)
		if err != nil {
			return nil, fmt.Errorf("read measurements %s: %w", src, err)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// metaValue is a --metadata value: vLLM stores them as strings, other tools
// as numbers; both are kept as text and parsed where the field is known.
type metaValue string

// UnmarshalJSON accepts a JSON string or number.
func (m *metaValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = metaValue(s)
		return nil
	}
	*m = metaValue(b)
	return nil
}

func num(n metaValue, field string, def float64) (float64, error) {
	if n == "" || n == "null" {
		return def, nil
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(string(n)), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, fmt.Errorf("field %q: %q is not a non-negative number", field, string(n))
	}
	return x, nil
}

func (b *benchResult) point(src string) (Point, error) {
	p := Point{Source: src, Model: b.ModelID, GPU: b.GPU}
	if p.Model == "" {
		p.Model = b.Model
	}
	if p.GPU == "" {
		p.GPU = b.HW
	}
	need := []struct {
		name string
		ok   bool
	}{
		{"output_throughput", b.OutputThroughput != nil}, {"median_ttft_ms", b.MedianTTFTms != nil},
		{"median_tpot_ms", b.MedianTPOTms != nil}, {"max_concurrency", b.MaxConcurrency != nil},
	}
	for _, n := range need {
		if !n.ok {
			return p, fmt.Errorf("missing field %q", n.name)
		}
	}
	tp := b.TP
	if tp == "" {
		tp = b.TensorParallelSize
	}
	var vals [8]float64
	var err error
	for i, f := range []struct {
		n    metaValue
		name string
		def  float64
	}{
		{tp, "tp", 0}, {b.NumGPUs, "num_gpus", 0}, {b.RandomInputLen, "random_input_len", 0},
		{b.RandomOutputLen, "random_output_len", 0}, {b.RandomRangeRatio, "random_range_ratio", 1},
		{b.MaxNumBatchedTokens, "max_num_batched_tokens", 0}, {b.MaxNumSeqs, "max_num_seqs", 0},
		{b.GPUMemoryUtilization, "gpu_memory_utilization", 0},
	} {
		if vals[i], err = num(f.n, f.name, f.def); err != nil {
			return p, err
		}
	}
	if vals[0] == 0 {
		return p, errors.New(`no tensor parallel size: pass --metadata tp=N to vllm bench serve`)
	}
	p.TensorParallel, p.GPUs = int(vals[0]), int(vals[1])
	if p.GPUs == 0 {
		p.GPUs = p.TensorParallel
	}
	p.InputLen, p.OutputLen, p.RangeRatio = int(vals[2]), int(vals[3]), vals[4]
	p.Server = Server{MaxNumBatchedTokens: int(vals[5]), MaxNumSeqs: int(vals[6]), GPUMemoryUtilization: vals[7]}
	if b.AsyncScheduling != "" {
		async, err := strconv.ParseBool(string(b.AsyncScheduling))
		if err != nil {
			return p, fmt.Errorf("field \"async_scheduling\": %q is not true or false", string(b.AsyncScheduling))
		}
		p.Server.SyncScheduling = !async
	}
	p.Concurrency = *b.MaxConcurrency
	if b.NumPrompts != nil {
		p.NumPrompts = *b.NumPrompts
	}
	if len(b.InputLens) > 0 && len(b.InputLens) == len(b.OutputLens) {
		p.InputLens, p.OutputLens = b.InputLens, b.OutputLens
		p.NumPrompts = len(b.InputLens)
		p.InputLen, p.OutputLen = maxInt(b.InputLens), maxInt(b.OutputLens)
		p.RangeRatio = 1
	}
	p.Measured = Metrics{OutputThroughputPerGPU: *b.OutputThroughput / float64(p.GPUs),
		MedianTPOTSeconds: *b.MedianTPOTms / 1e3, MedianTTFTSeconds: *b.MedianTTFTms / 1e3}
	return p, p.validateRead()
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

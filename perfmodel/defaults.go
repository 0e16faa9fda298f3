package perfmodel

import "strings"

// DefaultFactors returns the factors for a model: its family's calibration when
// there is one (Calibrations), UncalibratedFactors otherwise.
func DefaultFactors(m Model) Factors {
	if c, ok := CalibrationFor(m); ok {
		return c.Factors
	}
	return UncalibratedFactors
}

// Calibration is a fitted set of factors with its provenance.
type Calibration struct {
	// Family matches model names containing it (case-insensitive).
	Family  string
	Engine  string // engine and version the measurements came from
	Factors Factors
	Source  string // measurement file
	Date    string // when the fit was made
	// MAPE is the validation error per metric on the source data, in percent
	// (in-sample: the points fitted).
	MAPE map[string]float64
	// OutOfSample is the leave-one-GPU-out error: for each GPU of the data, a
	// fit on the others predicting it. It is the error to quote for a GPU
	// the calibration has not seen.
	OutOfSample []HeldOutError
	// Envelope is the range of conditions the measurements covered.
	Envelope Envelope
}

// HeldOutError is a calibration's error on the points of a GPU that the fit
// did not see, per metric, in percent.
type HeldOutError struct {
	GPU    string `json:"gpu"`
	Points int    `json:"points"`
	// MAPE is the mean absolute percentage error; MeanSigned the mean
	// signed error (negative: predicted below measured).
	MAPE       map[string]float64 `json:"mape_percent"`
	MeanSigned map[string]float64 `json:"mean_signed_percent"`
}

// Calibrations lists the built-in calibrations. Each is reproduced by
// calibrate.Fit on its Source with default options (docs/perfmodel.md,
// "Calibration"); the calibrate package's tests check the MAPE stated here.
var Calibrations = []Calibration{
	{
		Family: "gpt-oss",
		Engine: "vLLM 0.11.2 and 0.13.0 (H100: W4A16 MoE, BF16 KV; B200: MXFP4×MXFP8 MoE, FP8 KV, fused all-reduce+norm; async scheduling, CUDA graphs)",
		Factors: Factors{
			DenseCompute: 0.70, DenseMemory: 0.80, // not fitted (UncalibratedFactors)
			AttentionCompute: 0.6770, AttentionMemory: 0.7517,
			MoECompute: 0.2099, MoEMemory: 0.8570, // W4A16 class (H100)
			MoEFP8Compute: 0.2836, MoEFP8Memory: 0.9238, // MXFP4×MXFP8 class (B200)
			ElementwiseMemory: 0.60, // not fitted
			Network:           0.4120,
			// CPU overheads: hidden by async scheduling in every reference
			// run, so not identifiable there; first-principles values.
			StepOverheadSeconds: 1e-3, PerSeqOverheadSeconds: 5e-6,
			GraphKernelSeconds: 4.614e-6, EagerKernelSeconds: 6e-6, // eager: not fitted
			AllReduceLatencySeconds: 6.970e-6,
			RequestOverheadSeconds:  17.60e-3, PromptTokenOverheadSeconds: 1.764e-6,
		},
		Source: "SemiAnalysis InferenceMAX gpt-oss-120b benchmarks: 134 H100 points (TP 2/4/8) and 169 B200 points (TP 1/2/4/8), vLLM 0.11.2 and 0.13.0",
		Date:   "2026-12-01",
		MAPE: map[string]float64{
			"output_throughput_per_gpu": 3.4, "median_tpot": 3.4, "median_ttft": 9.6,
		},
		OutOfSample: []HeldOutError{
			{GPU: "b200", Points: 169,
				MAPE:       map[string]float64{"output_throughput_per_gpu": 5.4, "median_tpot": 5.8, "median_ttft": 14.9},
				MeanSigned: map[string]float64{"output_throughput_per_gpu": -3.4, "median_tpot": 3.9, "median_ttft": 4.5}},
			{GPU: "h100", Points: 134,
				MAPE:       map[string]float64{"output_throughput_per_gpu": 5.1, "median_tpot": 4.7, "median_ttft": 11.8},
				MeanSigned: map[string]float64{"output_throughput_per_gpu": 3.8, "median_tpot": -3.3, "median_ttft": -7.4}},
		},
		Envelope: Envelope{
			Models: []string{"gpt-oss-120b"},
			GPUs:   []string{"b200", "h100"}, Engines: []string{"vllm 0.11.2", "vllm 0.13.0"},
			TensorParallel: IntRange{1, 8}, PromptTokens: IntRange{819, 8192}, OutputTokens: IntRange{819, 8192},
			Concurrency: IntRange{4, 128}, PrefixCaching: []bool{false}, MultiTurn: false,
		},
	},
}

// CalibrationFor returns the built-in calibration of the model's family.
func CalibrationFor(m Model) (Calibration, bool) {
	name := strings.ToLower(m.Name)
	for _, c := range Calibrations {
		if strings.Contains(name, strings.ToLower(c.Family)) {
			return c, true
		}
	}
	return Calibration{}, false
}

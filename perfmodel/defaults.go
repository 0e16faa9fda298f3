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
		Engine: "vLLM 0.13.0 (Marlin MXFP4 MoE, async scheduling, CUDA graphs)",
		Factors: Factors{
			DenseCompute: 0.70, DenseMemory: 0.80, // not fitted (UncalibratedFactors)
			AttentionCompute: 0.7844, AttentionMemory: 0.8646,
			MoECompute: 0.2088, MoEMemory: 0.8676,
			MoEFP8Compute: 0.40, MoEFP8Memory: 0.70, // not fitted
			ElementwiseMemory: 0.60, // not fitted
			Network:           0.5567,
			// CPU overheads: hidden by async scheduling in every reference
			// run, so not identifiable there; first-principles values.
			StepOverheadSeconds: 1e-3, PerSeqOverheadSeconds: 5e-6,
			GraphKernelSeconds: 4.079e-6, EagerKernelSeconds: 6e-6, // eager: not fitted
			AllReduceLatencySeconds: 12.65e-6,
			RequestOverheadSeconds:  15.61e-3, PromptTokenOverheadSeconds: 4.076e-6,
		},
		Source: "shared/data/calibration/inferencemax_gptoss120b_h100_vllm0.13.csv (86 points, gpt-oss-120b, 2/4/8×H100)",
		Date:   "2026-11-30",
		MAPE: map[string]float64{
			"output_throughput_per_gpu": 2.4, "median_tpot": 2.5, "median_ttft": 7.7,
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

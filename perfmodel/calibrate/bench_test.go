package calibrate

import (
	"context"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// BenchmarkValidateReference replays all 86 reference points (43 distinct
// configurations) once: the cost of one objective evaluation of the fit.
func BenchmarkValidateReference(b *testing.B) {
	pts := readReference(b)
	for b.Loop() {
		if _, err := Validate(context.Background(), pts, perfmodel.UncalibratedFactors, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitReference is the default calibration of gpt-oss-120b on the
// reference data (issue 12's budget: 2 minutes on two cores).
func BenchmarkFitReference(b *testing.B) {
	pts := readReference(b)
	for b.Loop() {
		res, err := Fit(context.Background(), pts, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Evaluations), "evaluations")
		b.ReportMetric(res.Validation.MAPE[MetricTPOT], "tpot-MAPE-%")
	}
}

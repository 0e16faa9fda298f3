package calibrate

import (
	"context"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// Targets of issue 12 on the reference data, in percent.
var mapeTargets = map[string]float64{MetricThroughput: 10, MetricTPOT: 10, MetricTTFT: 25}

func checkMAPE(t *testing.T, what string, got map[string]float64) {
	t.Helper()
	for _, name := range MetricNames {
		if got[name] > mapeTargets[name] {
			t.Errorf("%s: MAPE %s %.1f%% above the %.0f%% target", what, name, got[name], mapeTargets[name])
		}
	}
}

// TestReferenceValidation replays the 86 reference points with the built-in
// gpt-oss calibration and checks the MAPE it states.
func TestReferenceValidation(t *testing.T) {
	m, err := perfmodel.LookupModel(DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	cal, ok := perfmodel.CalibrationFor(m)
	if !ok {
		t.Fatal("no built-in calibration for gpt-oss-120b")
	}
	v, err := Validate(context.Background(), readReference(t), cal.Factors, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MAPE %v", v.MAPE)
	checkMAPE(t, "built-in calibration", v.MAPE)
	for _, name := range MetricNames {
		if d := v.MAPE[name] - cal.MAPE[name]; d > 0.1 || d < -0.1 {
			t.Errorf("MAPE %s is %.2f%%, the calibration states %.1f%%", name, v.MAPE[name], cal.MAPE[name])
		}
	}
	if len(v.Rows) != 86 {
		t.Errorf("%d rows", len(v.Rows))
	}
	// The uncalibrated defaults are worse: the fit earns its keep.
	u, err := Validate(context.Background(), readReference(t), perfmodel.UncalibratedFactors, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u.Loss <= v.Loss {
		t.Errorf("uncalibrated loss %g not above calibrated %g", u.Loss, v.Loss)
	}
}

// TestReferenceFitAndCrossValidation fits DefaultParams on the reference data
// from the uncalibrated defaults, then runs leave-one-TP-out cross-validation
// (fit on two TP sizes, predict the third). About half a minute on two
// cores; skipped with -short.
func TestReferenceFitAndCrossValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the reference data four times")
	}
	pts := readReference(t)
	res, err := Fit(context.Background(), pts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit: %d evaluations in %v, MAPE %v", res.Evaluations, res.Elapsed, res.Validation.MAPE)
	t.Logf("factors %+v", res.Factors)
	checkMAPE(t, "fit", res.Validation.MAPE)
	if err := res.Factors.Validate(); err != nil {
		t.Error(err)
	}
	folds, err := LeaveOneOut(context.Background(), pts, Options{}, ByTensorParallel)
	if err != nil {
		t.Fatal(err)
	}
	if len(folds) != 3 {
		t.Fatalf("%d folds", len(folds))
	}
	for _, f := range folds {
		t.Logf("held out %s (%d points): MAPE %v", f.HeldOut, len(f.Validation.Rows), f.Validation.MAPE)
		checkMAPE(t, "held-out "+f.HeldOut, f.Validation.MAPE)
	}
}

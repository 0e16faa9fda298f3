package calibrate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

func TestFileRoundTrip(t *testing.T) {
	res := Result{Factors: perfmodel.UncalibratedFactors, Params: DefaultParams,
		Validation: Validation{Rows: make([]Row, 3), MAPE: map[string]float64{MetricTPOT: 1.5}}}
	folds := []Fold{{HeldOut: "tp=2", Validation: Validation{MAPE: map[string]float64{MetricTPOT: 3}}}}
	f := NewFile(DefaultModel, "2026-11-30", []string{"a.csv"}, res, folds)
	var buf bytes.Buffer
	if err := WriteFile(&buf, f); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(&buf, "calib.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Errorf("round trip\n%+v\nwant\n%+v", got, f)
	}
	if c := got.Calibration(); c.Factors != f.Factors || c.Source != "a.csv" {
		t.Errorf("calibration %+v", c)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"model: m\nfactors:\n  moe_compute: 2\n", "moe_compute"},
		{"model: m\nfudge: 1\n", "fudge"},
		{"", "empty file"},
	} {
		if _, err := ReadFile(strings.NewReader(bad.yaml), "c.yaml"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

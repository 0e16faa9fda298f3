package sim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

func TestReadCalibration(t *testing.T) {
	good, _ := json.Marshal(perfmodel.UncalibratedFactors)
	wrapped := `{"factors":` + string(good) + `,"evaluations":12}`
	for _, in := range []string{string(good), wrapped} {
		f, err := ReadCalibration(strings.NewReader(in), "c.json")
		if err != nil || f != perfmodel.UncalibratedFactors {
			t.Errorf("%.40s: %+v %v", in, f, err)
		}
	}
	bad := strings.Replace(string(good), `"moe_compute":0.4`, `"moe_compute":1.4`, 1)
	for _, tc := range []struct{ in, err string }{
		{`{`, "c.json"},
		{`{"dense_compute":0.5}`, "is missing"},
		{bad, "moe_compute"},
		{strings.Replace(string(good), `{`, `{"extra":1,`, 1), "unknown field"},
	} {
		if _, err := ReadCalibration(strings.NewReader(tc.in), "c.json"); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%.50s: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzReadCalibration(f *testing.F) {
	good, _ := json.Marshal(perfmodel.UncalibratedFactors)
	f.Add(string(good))
	f.Add(`{"factors":` + string(good) + `}`)
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ReadCalibration(strings.NewReader(s), "fuzz")
		if err == nil {
			if verr := fs.Validate(); verr != nil {
				t.Fatalf("accepted invalid factors: %v", verr)
			}
		}
	})
}

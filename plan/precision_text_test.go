package plan

import (
	"math"
	"testing"

	"github.com/spoc-project/spoc/capacity"
)

// An interval the runs leave open above has no precision to print: the
// text says so instead of "±NaN %" or "±+Inf %".
func TestPrecisionText(t *testing.T) {
	for _, tc := range []struct {
		e    capacity.CapacityEstimate
		want string
	}{
		{capacity.CapacityEstimate{Users: 168, Lo: 154, Hi: 175, Bounded: true, Precision: 0.0625}, "±6.2 %"},
		{capacity.CapacityEstimate{Users: 168, Lo: 154, Hi: capacity.InfFloat(math.Inf(1)), Precision: capacity.InfFloat(math.Inf(1))}, "none (the interval is open above)"},
	} {
		if got := PrecisionText(&tc.e); got != tc.want {
			t.Errorf("PrecisionText(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

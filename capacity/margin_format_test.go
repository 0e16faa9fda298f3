package capacity

import "testing"

// TestMarginFormatReadsInTheClauseUnit: an ITL limit of 60 ms read "0.06 s"
// in the summary and the sweep's output, two digits that hide the margin.
func TestMarginFormatReadsInTheClauseUnit(t *testing.T) {
	itl := &Margin{Clause: "itl p95"}
	rate := &Margin{Clause: "error_rate"}
	for _, c := range []struct {
		m    *Margin
		v    float64
		want string
	}{
		{itl, 0.06, "60 ms"},
		{itl, 0.0523, "52 ms"},
		{itl, 0.0049, "4.9 ms"},
		{itl, 0.9994, "999 ms"},
		{itl, 2.06, "2.06 s"},
		{itl, 1, "1.00 s"},
		{rate, 0.012, "1.2 %"},
		{rate, 0, "0 %"},
	} {
		if got := c.m.Format(c.v); got != c.want {
			t.Errorf("%s Format(%g) = %q, want %q", c.m.Clause, c.v, got, c.want)
		}
	}
}

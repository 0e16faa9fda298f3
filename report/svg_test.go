package report

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
)

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		n      int
		want   []float64
		dec    int
	}{
		{0, 1, 5, []float64{0, 0.25, 0.5, 0.75, 1}, 2},
		{0, 100, 6, []float64{0, 20, 40, 60, 80, 100}, 0},
		{3, 97, 5, []float64{0, 25, 50, 75, 100}, 0},
		{0, 2000, 5, []float64{0, 500, 1000, 1500, 2000}, 0},
		{0.5, 4.7, 5, []float64{0, 2, 4, 6}, 0},
		{5, 5, 5, []float64{4.5, 4.75, 5, 5.25, 5.5}, 2},
		{0, 0, 5, []float64{-1, -0.5, 0, 0.5, 1}, 1},
		{-3, 3, 4, []float64{-4, -2, 0, 2, 4}, 0},
		{100, 0, 3, []float64{0, 50, 100}, 0},
		{0, 0.003, 4, []float64{0, 0.001, 0.002, 0.003}, 3},
		{math.NaN(), 1, 5, []float64{0, 0.25, 0.5, 0.75, 1}, 2},
		{0, math.Inf(1), 5, []float64{0, 0.25, 0.5, 0.75, 1}, 2},
		{-1e308, 1e308, 5, []float64{0, 0.25, 0.5, 0.75, 1}, 2},
	} {
		got, dec := niceTicks(tc.lo, tc.hi, tc.n)
		if len(got) != len(tc.want) || dec != tc.dec {
			t.Errorf("niceTicks(%v, %v, %d) = %v, %d decimals; want %v, %d", tc.lo, tc.hi, tc.n, got, dec, tc.want, tc.dec)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.want)
				break
			}
		}
	}
}

func TestNiceTicksCover(t *testing.T) {
	for _, r := range [][2]float64{{0, 1e-7}, {12, 13}, {-1e9, 1e9}, {0.001, 123456}, {99.5, 100.5}, {1980, 1980}} {
		ticks, _ := niceTicks(r[0], r[1], 5)
		if ticks[0] > r[0] || ticks[len(ticks)-1] < r[1] {
			t.Errorf("niceTicks(%v, %v) = %v: does not cover the range", r[0], r[1], ticks)
		}
		if len(ticks) < 2 || len(ticks) > 12 {
			t.Errorf("niceTicks(%v, %v) = %d ticks", r[0], r[1], len(ticks))
		}
	}
}

func TestFormatTick(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 0, "0"}, {2500, 0, "2500"}, {25000, 0, "25k"}, {12500, 0, "12.5k"}, {2e6, 0, "2M"}, {0.25, 2, "0.25"}, {-30000, 0, "-30k"},
	} {
		if got := formatTick(tc.v, tc.dec); got != tc.want {
			t.Errorf("formatTick(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}

// wellFormed parses an SVG fragment as XML and returns its text content
// and the number of elements named name.
func wellFormed(t *testing.T, svg string, name string) (text string, count int) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if x.Name.Local == name {
				count++
			}
		case xml.CharData:
			b.Write(x)
		}
	}
	return b.String(), count
}

func TestLineChartSVG(t *testing.T) {
	c := LineChart{
		Title: "TTFT <p95> & friends", XLabel: "users", YLabel: "ms", ZeroY: true,
		Series: []Series{
			{Name: "P0 <script>alert(1)</script>", X: []float64{1, 2, 3}, Y: []float64{10, 20, 30}, Titles: []string{"a<b", "", "c&d"}},
			{Name: "overall", X: []float64{1, 2, 3}, Y: []float64{5, math.NaN(), 50}, Dashed: true, Markers: true},
		},
		HLines: []RefLine{{Value: 25, Label: "SLA ≤ 25ms"}},
		VLines: []RefLine{{Value: 2, Label: "ceiling 2", Left: true}},
		Bands:  []Band{{From: 1.5, To: 2.5, Label: "straggler"}},
	}
	svg := string(c.SVG())
	text, circles := wellFormed(t, svg, "circle")
	if strings.Contains(svg, "<script") {
		t.Error("a series name reached the SVG unescaped")
	}
	for _, want := range []string{"P0 <script>alert(1)</script>", "a<b", "c&d", "SLA ≤ 25ms", "ceiling 2", "TTFT <p95> & friends", "straggler"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
	// Two titled points of P0 and the two finite points of overall.
	if circles != 4 {
		t.Errorf("%d circles, want 4", circles)
	}
	if !strings.Contains(svg, `stroke-dasharray="5 3"`) {
		t.Error("dashed series not dashed")
	}
}

func TestLineChartClip(t *testing.T) {
	c := LineChart{Series: []Series{{Name: "x", X: []float64{1, 2, 3}, Y: []float64{1, 2, 1000}, Titles: []string{"a", "b", "huge"}}}, YClip: 3, ZeroY: true}
	svg := string(c.SVG())
	text, paths := wellFormed(t, svg, "path")
	if paths != 1 || !strings.Contains(text, "huge (off the chart)") {
		t.Errorf("clipped point: %d triangles, text %q", paths, text)
	}
	if strings.Contains(text, "1000") {
		t.Error("the Y axis reached the clipped value")
	}
}

func TestLineChartEmpty(t *testing.T) {
	for _, c := range []LineChart{{}, {Series: []Series{{Name: "only NaN", X: []float64{math.NaN()}, Y: []float64{1}}}}, {ZeroY: true, Series: []Series{{X: []float64{0, 1}, Y: []float64{0, 0}}}}} {
		wellFormed(t, string(c.SVG()), "svg")
	}
}

func TestBarChartSVG(t *testing.T) {
	c := BarChart{Title: "kernels", Parts: []string{"attention", "<b>moe</b>"}, Max: 1, Percent: true, Unit: "share",
		Rows: []BarRow{{Label: "GPU 0 <img src=x>", Values: []float64{0.6, 0.4}, Note: "idle 5%"}, {Label: "GPU 1", Values: []float64{math.NaN(), -1}}}}
	svg := string(c.SVG())
	text, rects := wellFormed(t, svg, "rect")
	if strings.Contains(svg, "<img") || strings.Contains(svg, "<b>") {
		t.Error("a label reached the SVG unescaped")
	}
	// Two segments and two legend swatches; NaN and negative values draw nothing.
	if rects != 4 {
		t.Errorf("%d rects, want 4", rects)
	}
	for _, want := range []string{"GPU 0 <img src=x> — attention: 60.0% (idle 5%)", "<b>moe</b>", "100%"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

func TestNonDominated(t *testing.T) {
	objs := []plan.Objective{{Metric: "tput", Direction: "maximize"}, {Metric: "ttft", Direction: "minimize"}}
	ms := []plan.Member{{Values: []float64{10, 5}}, {Values: []float64{8, 6}}, {Values: []float64{12, 9}}, {Values: []float64{10, 5}}, {Values: []float64{5, 1}}}
	got := nonDominated(ms, objs)
	want := []int{0, 2, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("nonDominated = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("nonDominated = %v, want %v", got, want)
		}
	}
}

func TestKernelName(t *testing.T) {
	for in, want := range map[string]string{
		"void flash::fwd<cute::tuple<int, float>, 64>(Params)": "void flash::fwd<…>(Params)",
		"ncclKernel":      "ncclKernel",
		"a<b<c>>d<e>":     "a<…>d<…>",
		"unbalanced<<< >": "unbalanced<…>",
		"x>y":             "x>y",
	} {
		if got := kernelName(in); got != want {
			t.Errorf("kernelName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtMs(0.001), "< 0.1 ms"}, {fmtMs(0), "0.0 ms"}, {fmtMs(4.78), "4.8 ms"}, {fmtMs(352.5), "352 ms"}, {fmtMs(2060), "2.06 s"}, {fmtMs(47500), "47.5 s"},
		{fmtNum(1234567), "1,234,567"}, {fmtNum(-1500), "-1,500"}, {fmtNum(12.345), "12.35"}, {fmtNum(math.NaN()), "–"},
		{fmtPct(0.9416), "94.2%"}, {fmtValue(0.84547), "0.845"}, {fmtValue(float64(8192)), "8192"}, {fmtValue(true), "true"},
		{fmtParams(map[string]any{"b": 2.0, "a": "x"}), "a=x, b=2"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestCommandLines(t *testing.T) {
	for in, want := range map[string]string{
		"vllm serve m --a 1 --b":          "vllm serve m \\\n    --a 1 \\\n    --b",
		"vllm serve m":                    "vllm serve m",
		"vllm serve m --x 'a --b'":        "vllm serve m --x 'a --b'",
		`vllm serve m --json "{\"a\":1}"`: `vllm serve m --json "{\"a\":1}"`,
	} {
		if got := commandLines(in); got != want {
			t.Errorf("commandLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestObjectiveCellsUseHeaderUnit: a column headed "s" prints seconds in
// every cell, and one headed "ms" prints milliseconds, even below 1 s or
// above 1000 ms.
func TestObjectiveCellsUseHeaderUnit(t *testing.T) {
	ttft := plan.Objective{Metric: "ttft", Direction: "minimize", Unit: "ms"}
	for _, tc := range []struct {
		peak, v float64
		label   string
		want    string
	}{
		{peak: 31300, v: 850, label: "ttft, s (↓ better)", want: "0.85 s"},
		{peak: 31300, v: 31300, label: "ttft, s (↓ better)", want: "31.3 s"},
		{peak: 2500, v: 2500, label: "ttft, ms (↓ better)", want: "2500 ms"},
		{peak: 2500, v: 8.5, label: "ttft, ms (↓ better)", want: "8.50 ms"},
	} {
		o := displayObjectives([]plan.Objective{ttft}, []plan.Member{{Values: []float64{tc.peak}}})[0]
		if got := objectiveLabel(o); got != tc.label {
			t.Errorf("peak %g: label %q, want %q", tc.peak, got, tc.label)
		}
		if got := fmtObjective(o, tc.v); got != tc.want {
			t.Errorf("peak %g: fmtObjective(%g) = %q, want %q", tc.peak, tc.v, got, tc.want)
		}
	}
}

// TestMergeIdentical: identical per-GPU lines become one line named after
// all of them; a different one stays its own.
func TestMergeIdentical(t *testing.T) {
	c := LineChart{Series: []Series{
		{Name: "gpu0", X: []float64{0, 1}, Y: []float64{5, 6}},
		{Name: "gpu1", X: []float64{0, 1}, Y: []float64{5, 6}},
		{Name: "gpu2", X: []float64{0, 1}, Y: []float64{5, 7}},
	}}
	if note := mergeIdentical(&c); note != "identical GPUs drawn as one line" {
		t.Errorf("note %q", note)
	}
	if len(c.Series) != 2 || c.Series[0].Name != "gpu0, gpu1" || c.Series[1].Name != "gpu2" {
		t.Errorf("series %+v", c.Series)
	}
	if note := mergeIdentical(&c); note != "" {
		t.Errorf("nothing left to merge, got note %q", note)
	}
	if !allZero([]Series{{Y: []float64{0, 0}}}) || allZero(c.Series) {
		t.Error("allZero")
	}
}

// TestZoomOnFront: a trial far slower than the front is drawn as an edge
// triangle, keeping its true value in its hover text; the front decides the
// axis.
func TestZoomOnFront(t *testing.T) {
	ttft := objView{Objective: plan.Objective{Metric: "ttft", Direction: "minimize", Unit: "ms"}}
	tput := objView{Objective: plan.Objective{Metric: "tput", Direction: "maximize"}}
	if got := zoomOnFront(ttft, []float64{110}, []float64{18, 61.6}); got != 1.25*61.6 {
		t.Errorf("zoom %g, want %g", got, 1.25*61.6)
	}
	if got := zoomOnFront(ttft, []float64{70}, []float64{18, 61.6}); got != 0 {
		t.Errorf("no outlier, zoom %g", got)
	}
	if got := zoomOnFront(tput, []float64{1e6}, []float64{10}); got != 0 {
		t.Errorf("higher is better: zoom %g", got)
	}
	c := LineChart{Scatter: true, XClip: 10, Series: []Series{{Name: "s", X: []float64{1, 5, 100}, Y: []float64{1, 2, 3}, Titles: []string{"a", "b", "far"}}}}
	svg := string(c.SVG())
	if !strings.Contains(svg, "<title>far (off the chart)</title>") || strings.Count(svg, "<circle") != 2 {
		t.Errorf("point beyond XClip not drawn on the edge:\n%s", svg)
	}
}

// The influence heatmap colours a correlation by whether it helps the
// objective: the same +0.8 is green for a maximised throughput and red for
// a minimised latency, and a −0.8 the other way round.
func TestInfluenceColorFollowsDirection(t *testing.T) {
	green, red := "rgb(72,149,101)", "rgb(193,70,85)"
	for _, tc := range []struct {
		r         float64
		direction string
		want      string
	}{
		{0.8, "maximize", green}, {0.8, "minimize", red},
		{-0.8, "maximize", red}, {-0.8, "minimize", green},
	} {
		if got := string(influenceColor(tc.r, tc.direction)); !strings.Contains(got, tc.want) {
			t.Errorf("r %+.1f %s: %s, want background %s", tc.r, tc.direction, got, tc.want)
		}
	}
	if got := string(influenceColor(0, "minimize")); !strings.Contains(got, "rgb(255,255,255)") {
		t.Errorf("r 0: %s, want white", got)
	}
}

package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/trace"
)

// fuzzData is a small plan whose model, profile and kernel names are s.
func fuzzData(s string) *plan.Summary {
	cats := []trace.CategoryTime{{Name: trace.Attention, TimeNS: 10, Share: 1, TopKernels: []trace.KernelTime{{Name: s, Category: trace.Attention, TimeNS: 10, Share: 1}}}}
	return &plan.Summary{
		Title: "plan", SLA: result.DefaultSLA(),
		Engine:   plan.Engine{Kind: "sim", Model: s, GPU: "H100", GPUs: 1, TensorParallelSize: 1},
		Capacity: plan.Capacity{Users: 5, ServeCommand: "vllm serve " + s},
		Sweep:    []plan.SweepPoint{{Users: 5, Pass: true, Requests: 1, TTFTP95Ms: 10, Profiles: []plan.ProfilePoint{{Name: s, Requests: 1, TTFTP95Ms: 9}}}},
		Kernels: &plan.Kernels{File: s, Breakdown: &trace.Breakdown{Categories: cats, KernelTimeNS: 10,
			GPUs: []trace.GPUBreakdown{{Device: 0, Name: s, Categories: cats}}, UnknownKernels: []trace.KernelTime{{Name: s, TimeNS: 1}}}},
		Notes: []string{s},
	}
}

// FuzzHTMLNames: whatever a model, profile or kernel is called, the page has
// exactly the markup it has for a plain name, and every SVG stays
// well-formed XML.
func FuzzHTMLNames(f *testing.F) {
	for _, s := range []string{"gpt-oss-120b", `<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, "a]]>b", "</svg><svg>", "void k<int, 4>(T*)", "\x00\xff", "&amp;"} {
		f.Add(s)
	}
	var plain bytes.Buffer
	if err := HTML(&plain, fuzzData("x")); err != nil {
		f.Fatal(err)
	}
	want := strings.Count(plain.String(), "<")
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		if err := HTML(&buf, fuzzData(s)); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		if got := strings.Count(page, "<"); got != want {
			t.Fatalf("name %q changed the markup: %d '<' against %d", s, got, want)
		}
		for _, part := range strings.Split(page, "<svg")[1:] {
			wellFormed(t, "<svg"+part[:strings.Index(part, "</svg>")+len("</svg>")], "svg")
		}
		var md bytes.Buffer
		if err := Markdown(&md, fuzzData(s)); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzLineChart: any values and names draw a well-formed SVG.
func FuzzLineChart(f *testing.F) {
	f.Add("P0", 1.0, 2.0, 3.0, 0.0)
	f.Add("<b>", math.Inf(1), math.NaN(), -1e300, 5.0)
	f.Add("", 0.0, 0.0, 0.0, 1e-300)
	f.Fuzz(func(t *testing.T, name string, a, b, c, clip float64) {
		ch := LineChart{Title: name, Series: []Series{{Name: name, X: []float64{a, b, c}, Y: []float64{c, a, b}, Titles: []string{name}}}, YClip: clip,
			HLines: []RefLine{{Value: b, Label: name}}, VLines: []RefLine{{Value: a, Label: name}}, Bands: []Band{{From: a, To: c, Label: name}}}
		svg := string(ch.SVG())
		wellFormed(t, svg, "svg")
		if !strings.ContainsAny(name, "NaIf") && (strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf")) {
			t.Fatalf("non-finite coordinate in %s", svg)
		}
		bar := BarChart{Title: name, Parts: []string{name, "b"}, Rows: []BarRow{{Label: name, Values: []float64{a, b}}, {Label: "c", Values: []float64{c}}}, Max: clip}
		bsvg := string(bar.SVG())
		wellFormed(t, bsvg, "svg")
		if !strings.ContainsAny(name, "NaIf") && (strings.Contains(bsvg, "NaN") || strings.Contains(bsvg, "Inf")) {
			t.Fatalf("non-finite coordinate in %s", bsvg)
		}
	})
}

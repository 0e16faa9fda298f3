package report_test

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// A compare target outside the calibration envelope says so in the
// hardware comparison and in its cost row, in report.html and summary.md.
func TestCompareAndCostShowExcursions(t *testing.T) {
	d := fixture(t)
	if len(d.Compare) == 0 || d.Cost == nil || d.Envelope == nil {
		t.Fatal("the fixture has no compare rows, cost section or envelope")
	}
	x := perfmodel.Excursion{Dimension: "gpu", Value: "H200-SXM", Fitted: "b200, h100 (transferred by achieved fractions)"}
	name := d.Compare[len(d.Compare)-1].Name
	d.Envelope.Compare = []plan.TargetEnvelope{{Name: name, GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2, Outside: []perfmodel.Excursion{x}}}
	marked := false
	for i := range d.Cost.Rows {
		if d.Cost.Rows[i].Option == name {
			d.Cost.Rows[i].Extrapolates, marked = x.String(), true
		}
	}
	if !marked {
		t.Fatalf("no cost row for %s", name)
	}
	html := render(t, d)
	compare := html[strings.Index(html, `<section id="compare">`):]
	compare = compare[:strings.Index(compare, "</section>")]
	if !strings.Contains(compare, "⚠ outside: gpu H200-SXM outside the calibration&#39;s b200, h100") {
		t.Errorf("the hardware comparison does not show %s's excursion:\n%s", name, compare)
	}
	cost := html[strings.Index(html, `<section id="cost">`):]
	cost = cost[:strings.Index(cost, "</section>")]
	if !strings.Contains(cost, "⚠ outside the calibration: gpu H200-SXM") {
		t.Errorf("the cost section does not show %s's excursion", name)
	}
	var md strings.Builder
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "gpu H200-SXM outside the calibration's b200, h100"); n < 2 {
		t.Errorf("summary.md names the excursion %d times, want it in the comparison and the cost table", n)
	}
}

// A roofline batch with assumed fields says so beside each in the report.
func TestKernelsMixMarksAssumed(t *testing.T) {
	d := fixture(t)
	if d.Kernels == nil || len(d.Kernels.Roofline) == 0 {
		t.Skip("the fixture has no roofline comparison")
	}
	d.Kernels.Mix.Assumed = []string{"decode_seqs"}
	html := render(t, d)
	if !strings.Contains(html, "decoding sequences (assumed: not measured)") || strings.Count(html, "(assumed: not measured)") != 1 {
		t.Error("report.html does not mark the assumed decode sequences, and only them")
	}
}

// The fixture is the default plan with --compare: its report shows that
// the default target 2x H200 is a GPU the calibration never measured, in
// the hardware comparison and in the cost section.
func TestDefaultCompareReportShowsH200Excursion(t *testing.T) {
	html := render(t, fixture(t))
	for _, id := range []string{"compare", "cost"} {
		i := strings.Index(html, `<section id="`+id+`">`)
		if i < 0 {
			t.Fatalf("no %s section", id)
		}
		sec := html[i:]
		sec = sec[:strings.Index(sec, "</section>")]
		if !strings.Contains(sec, "gpu H200-SXM outside the calibration&#39;s b200, h100") {
			t.Errorf("the %s section does not show the 2x H200 envelope excursion", id)
		}
	}
}

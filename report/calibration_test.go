package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// The calibration section shows the out-of-sample error and the envelope
// excursions, in HTML and summary.md, and cites no file.
func TestCalibrationSectionRenders(t *testing.T) {
	d := fixture(t)
	m, _ := perfmodel.LookupModel("gpt-oss-120b")
	cal, _ := perfmodel.CalibrationFor(m)
	d.Envelope = &plan.Envelope{Calibration: "built-in gpt-oss calibration", Fitted: cal.Envelope, OutOfSample: cal.OutOfSample,
		Outside: []perfmodel.Excursion{
			{Dimension: "prompt length", Value: "up to 131072 tokens", Fitted: "819–8192 tokens", Factor: 16},
			{Dimension: "prefix caching", Value: "on", Fitted: "off only"}},
		Points: []plan.EnvelopePoint{{Users: 300, Concurrency: 300, Outside: []perfmodel.Excursion{{Dimension: "concurrency", Factor: 2.3}}}}}
	html := render(t, d)
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	b200 := cal.OutOfSample[0]
	tput := fmt.Sprintf("%.1f %%", b200.MAPE["output_throughput_per_gpu"])
	for _, want := range []string{"How far to trust the simulator", "predicted unseen", "B200", "H100",
		"prompt length up to 131072 tokens", "(16×)", "prefix caching on", "300 users (≤ 300 in flight per replica)",
		"prompts 819–8192 tokens", "prefix caching off"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if !strings.Contains(html, tput) || !strings.Contains(md, tput) {
		t.Errorf("the B200 out-of-sample throughput MAPE %s is missing", tput)
	}
	for _, unwanted := range []string{"shared/data", ".csv", "testdata"} {
		if strings.Contains(html, unwanted) {
			t.Errorf("HTML cites %q", unwanted)
		}
	}
	if !strings.Contains(html, `<section id="calibration">`) || !strings.Contains(html, `href="#calibration"`) {
		t.Error("no calibration section or link")
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
)

// The example with a day section: its quick plan prints one headline line
// per policy, and summary.json has the day with a row per policy.
func TestExampleDayQuickPlanPrintsTheDay(t *testing.T) {
	testtool.Long(t, "a quick plan and a simulated 2-hour day of up to 400 users under three policies and two more start-ups: about 90 s CPU")
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runLoadCLI(t, "plan", "-c", "../../../../examples/day.yaml", "--quick", "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{"day: 2.0 h simulated", "day static:", "day target-tracking 80%:", "day hpa num_requests_waiting 4:", "GPU-hours",
		"day start-up sensitivity, target-tracking 80%, requests within the SLA: 0 s "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// the day is the plan's last numbered phase, its progress on stderr
	// and its lines on stdout alone
	for _, want := range []string{"== day (phase 9/9)", "day done: 2.0 h simulated; requests within the SLA: static "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "day static:") {
		t.Errorf("stderr repeats the day's lines that stdout prints:\n%s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Day    *plan.DaySummary `json:"day"`
		Phases []plan.Phase     `json:"phases"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Day == nil || len(sum.Day.Rows) != 3 {
		t.Fatalf("summary.json day: %v %+v", err, sum.Day)
	}
	if n := len(sum.Phases); n == 0 || sum.Phases[n-1].Name != "day" || sum.Phases[n-1].Seconds <= 0 {
		t.Errorf("summary.json phases %+v: want the day last, timed", sum.Phases)
	}
	for _, r := range sum.Day.Rows {
		if r.GPUHours <= 0 || len(r.Attainment) < 2 || len(r.Minutes) != 120 {
			t.Errorf("row %s: %.1f GPU-hours, %d attainment rows, %d minutes", r.Policy, r.GPUHours, len(r.Attainment), len(r.Minutes))
		}
	}
	if s := sum.Day.Rows[0]; s.Policy != "static" || s.VsStatic != 1 {
		t.Errorf("first row %s at %.2f× static", s.Policy, s.VsStatic)
	}
	// the sensitivity to start-up time: in the summary, and in the report
	// rendered from it
	sens := sum.Day.Sensitivity
	if sens == nil || len(sens.Points) != 3 || sens.Points[1].StartupSeconds != 300 || sens.Points[1].RequestShare != sum.Day.Rows[1].Attainment[0].RequestShare {
		t.Fatalf("summary.json day.startup_sensitivity %+v: want 0 s, 5 min (the day's own) and 10 min", sens)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Sensitivity to start-up time", "Attainment against the replica start-up time", "<td>10 min</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

package tune

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/search"
)

// A violated constraint is the worst profile, the printed values are
// overall: the progress line names the failing clause from the verdict.
func TestWriteProgressNamesTheFailingProfile(t *testing.T) {
	objs := []search.ObjectiveSpec{{Metric: "ttft_p95"}}
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		cons  []float64
		want  string
		not   string
	}{
		{"per-profile verdict", map[string]any{"constraint_names": []any{"ttft p95 ≤ 2s"}, "sla": "fail: P2 ttft p95 2.08s > 2s"},
			[]float64{0.04}, "#7 ttft95 1.501s ✗ P2 ttft p95 2.08s > 2s front 0", "by 4%"},
		{"several clauses fail", map[string]any{"constraint_names": []any{"ttft p95 ≤ 2s"}, "sla": "fail: P0 ttft p95 5.6s > 2s; P1 ttft p95 5.8s > 2s; P2 itl p95 132ms > 100ms"},
			[]float64{1.8}, "✗ P0 ttft p95 5.6s > 2s +2 front", "P1"},
		{"no verdict recorded", map[string]any{"constraint_names": []any{"ttft p95 ≤ 2s"}},
			[]float64{0.04}, "✗ ttft p95 ≤ 2s by 4%", "4%:"},
		{"feasible", map[string]any{"sla": "pass"}, []float64{-0.5}, "1.501s ok front", "✗"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := search.Trial{Number: 7, State: search.StateComplete, Values: []float64{1501}, Constraints: tc.cons, UserAttrs: tc.attrs}
			var b bytes.Buffer
			if err := WriteProgress(&b, Progress{Trial: tr, Finished: 8, Total: 60, Objectives: objs}); err != nil {
				t.Fatal(err)
			}
			line := b.String()
			if !strings.HasPrefix(line, "trial 8/60 #7 ") {
				t.Errorf("line %q does not start with its count and number", line)
			}
			if !strings.Contains(line, tc.want) {
				t.Errorf("line %q lacks %q", line, tc.want)
			}
			if tc.not != "" && strings.Contains(line, tc.not) {
				t.Errorf("line %q contains %q", line, tc.not)
			}
		})
	}
}

// A trial that reused an earlier result says it did not run.
func TestWriteProgressNamesAReusedTrial(t *testing.T) {
	tr := search.Trial{Number: 12, State: search.StateComplete, Values: []float64{900}, Constraints: []float64{-1},
		SystemAttrs: map[string]any{"duplicate_of": float64(4)}}
	var b bytes.Buffer
	if err := WriteProgress(&b, Progress{Trial: tr, Finished: 13, Total: 60, Objectives: []search.ObjectiveSpec{{Metric: "ttft_p95"}}}); err != nil {
		t.Fatal(err)
	}
	if want := "trial 13/60 #12 (not run: same flags as #4, result reused) ttft95 900ms ok"; !strings.Contains(b.String(), want) {
		t.Errorf("line %q lacks %q", b.String(), want)
	}
}

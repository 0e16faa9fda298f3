package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// TestEnvelopeReferenceCase: the reference case (5k–128k-token multi-turn
// prompts, prefix caching on, 4× H100) lies outside the built-in gpt-oss
// calibration (≤ 8192-token single-turn prompts, no prefix cache), and the
// warning names prompt length and prefix caching; levels above the measured
// concurrency are flagged one by one.
func TestEnvelopeReferenceCase(t *testing.T) {
	var s Setup
	dep, err := sim.NewDeployment(sim.ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	s.Deployment.Sim = dep
	sum := &Summary{
		Workload: &workload.Inspection{Profiles: []workload.ProfileSummary{
			{Name: "P0", ContextStartP50: 5000, ContextMax: 50000, OutputBudgetP50: 600, TurnsP50: 8},
			{Name: "P2", ContextStartP50: 75000, ContextMax: 131072, OutputBudgetP50: 1200, TurnsP50: 4},
		}},
		Sweep:    []SweepPoint{{Users: 64}, {Users: 256}, {Users: 400}},
		Capacity: Capacity{Config: map[string]any{"max-num-seqs": 300}},
	}
	env, note := checkEnvelope(s, sum)
	if env == nil {
		t.Fatalf("no envelope: %s", note)
	}
	dims := map[string]string{}
	for _, x := range env.Outside {
		dims[x.Dimension] = x.String()
	}
	for _, d := range []string{"prompt length", "prefix caching", "multi-turn sessions", "output length", "concurrency"} {
		if dims[d] == "" {
			t.Errorf("no %s excursion in %v", d, env.Outside)
		}
	}
	if !strings.Contains(dims["prompt length"], "up to 131072 tokens") || !strings.Contains(dims["prompt length"], "(16×)") {
		t.Errorf("prompt length: %s", dims["prompt length"])
	}
	if len(env.Points) != 3 || env.Points[0].Concurrency != 64 || env.Points[1].Concurrency != 256 || env.Points[2].Concurrency != 300 {
		t.Fatalf("points %+v", env.Points)
	}
	concAt := func(p EnvelopePoint) bool {
		for _, x := range p.Outside {
			if x.Dimension == "concurrency" {
				return true
			}
		}
		return false
	}
	if concAt(env.Points[0]) || !concAt(env.Points[1]) {
		t.Errorf("concurrency excursions at 64 users %v, 256 users %v", env.Points[0].Outside, env.Points[1].Outside)
	}
	if w := env.EnvelopeWarning(); !strings.Contains(w, "prompt length") || !strings.Contains(w, "prefix caching on") {
		t.Errorf("warning: %s", w)
	}
	if len(env.OutOfSample) != 2 {
		t.Errorf("out-of-sample errors %+v", env.OutOfSample)
	}

	// A calibration file without an envelope: not checked, and said so.
	dir := t.TempDir()
	s.CalibrationFile = filepath.Join(dir, "old.json")
	if err := os.WriteFile(s.CalibrationFile, []byte(`{"factors": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if env, note := checkEnvelope(s, sum); env != nil || !strings.Contains(note, "states no measured envelope") {
		t.Errorf("calibration file without envelope: %v, %q", env, note)
	}
	// One with an envelope (as spoc sim calibrate writes it) is checked.
	s.CalibrationFile = filepath.Join(dir, "new.json")
	if err := os.WriteFile(s.CalibrationFile, []byte(`{"envelope": {"gpus": ["h100"], "tensor_parallel": {"min": 4, "max": 4},
		"prompt_tokens": {"min": 100, "max": 200000}, "output_tokens": {"min": 100, "max": 2000},
		"concurrency": {"min": 1, "max": 512}, "prefix_caching": [true], "multi_turn": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env, note = checkEnvelope(s, sum)
	if env == nil || len(env.Outside) != 0 || !strings.Contains(env.Calibration, "new.json") {
		t.Errorf("calibration file with a covering envelope: %+v, %q", env, note)
	}
}

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
	if err := os.WriteFile(s.CalibrationFile, []byte(`{"envelope": {"models": ["gpt-oss-120b"], "gpus": ["h100"], "tensor_parallel": {"min": 4, "max": 4},
		"prompt_tokens": {"min": 100, "max": 200000}, "output_tokens": {"min": 100, "max": 2000},
		"concurrency": {"min": 1, "max": 512}, "prefix_caching": [true], "multi_turn": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env, note = checkEnvelope(s, sum)
	if env == nil || len(env.Outside) != 0 || !strings.Contains(env.Calibration, "new.json") {
		t.Errorf("calibration file with a covering envelope: %+v, %q", env, note)
	}
}

// TestEnvelopeModelAndCompareTargets: factors fitted on gpt-oss-120b and
// applied to gpt-oss-20b, and a compare target on a GPU the calibration
// never saw (the default --compare target, 2× H200), are excursions: the
// plan's notes, the envelope's compare rows and the warning name them.
func TestEnvelopeModelAndCompareTargets(t *testing.T) {
	spec := sim.ReferenceDeploymentSpec()
	spec.Model = "gpt-oss-20b"
	dep, err := sim.NewDeployment(spec)
	if err != nil {
		t.Fatal(err)
	}
	var s Setup
	s.Deployment.Sim = dep
	sum := &Summary{Sweep: []SweepPoint{{Users: 64}},
		Compare: []CompareRow{{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4, Users: 160},
			{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2, Users: 60}}}
	env, note := checkEnvelope(s, sum)
	if env == nil {
		t.Fatalf("no envelope: %s", note)
	}
	model := ""
	for _, x := range env.Outside {
		if x.Dimension == "model" {
			model = x.String()
		}
	}
	if !strings.Contains(model, "gpt-oss-20b") || !strings.Contains(model, "gpt-oss-120b") {
		t.Errorf("model excursion %q, want gpt-oss-20b outside the gpt-oss-120b calibration (outside: %v)", model, env.Outside)
	}
	if len(env.Compare) != 2 {
		t.Fatalf("compare targets checked: %+v", env.Compare)
	}
	h100, _ := env.Target("4x H100")
	h200, _ := env.Target("2x H200")
	if strings.Contains(h100.Excursions(), "gpu") {
		t.Errorf("4x H100, a calibrated GPU, flagged: %s", h100.Excursions())
	}
	if !strings.Contains(h200.Excursions(), "gpu H200-SXM outside") {
		t.Errorf("2x H200 excursions %q, want the GPU", h200.Excursions())
	}
	if w := env.EnvelopeWarning(); !strings.Contains(w, "compare target 2x H200 (2× H200-SXM): gpu H200-SXM outside") {
		t.Errorf("warning %q does not name the H200 target's excursion", w)
	}
}

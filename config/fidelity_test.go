package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/sim"
)

func TestPlanFidelityResolves(t *testing.T) {
	cfg, err := Load(strings.NewReader("plan:\n  fidelity: multi\n  budget: 2h\n  engine_startup: 90s\n  verify_top_k: 3\n"), "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Fidelity{Requested: plan.FidelityMulti, Budget: 2 * time.Hour, Startup: 90 * time.Second, VerifyTopK: 3}
	if got := cfg.Plan.fidelity(); got != want {
		t.Errorf("fidelity() = %+v, want %+v", got, want)
	}
	if got := Default().Plan.fidelity(); got != (plan.Fidelity{}) {
		t.Errorf("default fidelity = %+v, want the engine's default (empty)", got)
	}
}

func TestPlanFidelityRejected(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"plan:\n  fidelity: exhaustive\n", `plan.fidelity: unknown fidelity "exhaustive"`},
		{"plan:\n  budget: -1h\n", "plan.budget: must not be negative"},
		{"plan:\n  engine_startup: -5s\n", "plan.engine_startup: must not be negative"},
		{"plan:\n  verify_top_k: -1\n", "plan.verify_top_k: must be in [0, 8]"},
		{"plan:\n  verify_top_k: 9\n", "plan.verify_top_k: must be in [0, 8]"},
		{"engine:\n  sim:\n    correction: /no/such/correction.json\n", "engine.sim.correction"},
	} {
		cfg, err := Load(strings.NewReader(tc.yaml), "plan.yaml")
		if err == nil {
			_, err = cfg.Setup(SetupOptions{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// processEngine is a process engine that is never started.
func processEngine(c *Config) {
	c.Engine.Kind = EngineProcess
	c.Engine.Process.Command = []string{"/no/such/server", "--port", "{{.Port}}"}
}

// The Setup decides, once, where a plan evaluates: the fidelity it runs,
// the note it prints, the launcher and whether runs are virtual. A
// simulated plan on a real engine gets the simulator only when resolved
// for spoc plan (SetupOptions.Plan); spoc run, sweep and tune keep the
// engine the configuration names.
func TestSetupResolvesThePlansEngine(t *testing.T) {
	for _, tc := range []struct {
		name             string
		edit             func(*Config)
		plan             bool
		mode, note, kind string
		virtual          bool
	}{
		{"sim default", func(*Config) {}, true, plan.FidelitySimulated, "", "sim", true},
		{"sim multi", func(c *Config) { c.Plan.Fidelity = plan.FidelityMulti }, true, plan.FidelitySimulated, "plan.fidelity multi on the simulator engine is the simulated plan", "sim", true},
		{"process default", processEngine, true, plan.FidelityMulti, "", "process", false},
		{"process live", func(c *Config) { processEngine(c); c.Plan.Fidelity = plan.FidelityLive }, true, plan.FidelityLive, "", "process", false},
		{"process simulated, plan", func(c *Config) { processEngine(c); c.Plan.Fidelity = plan.FidelitySimulated }, true, plan.FidelitySimulated, "the process engine was not started", "sim", true},
		{"process simulated, not a plan", func(c *Config) { processEngine(c); c.Plan.Fidelity = plan.FidelitySimulated }, false, plan.FidelitySimulated, "the process engine was not started", "process", false},
		{"external multi", func(c *Config) {
			c.Engine.Kind, c.Engine.External.URL, c.Plan.Fidelity = EngineExternal, "http://127.0.0.1:1", plan.FidelityMulti
		}, true, plan.FidelityLive, "plan.fidelity multi on an external server is the live plan", "external", false},
	} {
		cfg := Default()
		tc.edit(cfg)
		s, err := cfg.Setup(SetupOptions{Plan: tc.plan})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		f := s.Fidelity
		if f.Mode != tc.mode || f.Requested != cfg.Plan.Fidelity || !strings.Contains(f.Note, tc.note) || (tc.note == "") != (f.Note == "") {
			t.Errorf("%s: fidelity %+v, want mode %s, note %q", tc.name, f, tc.mode, tc.note)
		}
		if got := s.Launcher.(engine.Namer).Kind(); got != tc.kind || s.Virtual != tc.virtual {
			t.Errorf("%s: launcher %s, virtual %v; want %s, %v", tc.name, got, s.Virtual, tc.kind, tc.virtual)
		}
		if s.Simulator == nil || s.Deployment.SimErr != nil || s.Deployment.Sim.Model.Name == "" {
			t.Errorf("%s: no simulated deployment (%v)", tc.name, s.Deployment.SimErr)
		}
		if tc.virtual && s.Launcher != engine.Launcher(s.Simulator) {
			t.Errorf("%s: a virtual Setup evaluates on another simulator than Setup.Simulator", tc.name)
		}
	}
}

// The simulated deployment is resolved once: the correction file is read
// when the Setup is, and the simulator, the compare targets and the cost
// model's view keep it after the file is gone.
func TestSetupReadsTheSimulatorsFilesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "correction.json")
	if err := os.WriteFile(path, []byte(`{"compute": 1.25, "memory": 0.9, "step_seconds": 0.002}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.Engine.Sim.Correction = path
	s, err := cfg.Setup(SetupOptions{Compare: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	want := sim.Correction{Compute: 1.25, Memory: 0.9, StepSeconds: 0.002}
	if got := s.Deployment.Sim.Correction; got != want {
		t.Errorf("Deployment.Sim.Correction = %+v, want %+v", got, want)
	}
	d, err := s.Simulator.VirtualDeployment(engine.Params{"max-num-seqs": 64})
	if err != nil || d.Correction != want || d.Params.MaxNumSeqs != 64 {
		t.Errorf("the simulator's deployment: %+v, %v", d.Correction, err)
	}
	if len(s.Compare) != 2 {
		t.Fatalf("%d compare targets", len(s.Compare))
	}
	for _, tg := range s.Compare {
		if d := tg.Setup.Deployment.Sim; !tg.Setup.Virtual || d.GPU.Name != tg.GPU || d.GPUs != tg.GPUs || d.Correction != want {
			t.Errorf("target %s: virtual %v, GPU %s ×%d, correction %+v", tg.Name, tg.Setup.Virtual, tg.Setup.Deployment.Sim.GPU.Name, tg.Setup.Deployment.Sim.GPUs, tg.Setup.Deployment.Sim.Correction)
		}
	}
}

// A real engine may run flags the simulator does not model: its Setup
// resolves (spoc run, tune and a live plan need no simulator), and a plan
// whose fidelity needs the simulator is refused naming plan.fidelity.
func TestSetupWithoutASimulatedCounterpart(t *testing.T) {
	cfg := Default()
	processEngine(cfg)
	cfg.Engine.Params = map[string]any{"quantization": "fp8"}
	s, err := cfg.Setup(SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Simulator != nil || s.Deployment.SimErr == nil || s.Virtual {
		t.Errorf("simulator %v, SimErr %v, virtual %v", s.Simulator, s.Deployment.SimErr, s.Virtual)
	}
	_, err = cfg.Setup(SetupOptions{Plan: true})
	var errs *Errors
	if !errors.As(err, &errs) || errs.List[0].Path != "plan.fidelity" || !strings.Contains(err.Error(), "the default on the process engine") || !strings.Contains(err.Error(), "quantization") {
		t.Errorf("multi plan without a simulator: %v", err)
	}
	cfg.Plan.Fidelity = plan.FidelityLive
	if _, err := cfg.Setup(SetupOptions{Plan: true}); err != nil {
		t.Errorf("live plan: %v", err)
	}
	cfg.Engine.Kind = EngineSim
	if _, err := cfg.Setup(SetupOptions{}); err == nil || !strings.Contains(err.Error(), "sim engine") {
		t.Errorf("the sim engine with flags it does not model: %v", err)
	}
}

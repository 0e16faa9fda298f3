package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/tune"
	"github.com/spoc-project/spoc/workload"
)

// SetupOptions are what resolving a configuration needs besides the file.
type SetupOptions struct {
	// OutDir is the output folder: a relative study storage is resolved
	// in it, and servers keep their logs in OutDir/servers.
	OutDir string
	// Compare adds the default hardware comparison (4× H100, 2× H200) when
	// engine.compare names none (spoc plan --compare).
	Compare bool
	// Quick resolves the smoke-run settings (ApplyQuick) on a copy of the
	// configuration (spoc plan --quick).
	Quick bool
	// Plan resolves the Setup plan.Run runs (spoc plan): its fidelity
	// chooses the engine every phase evaluates on — plan.fidelity
	// simulated on a real engine is the simulator of the configured
	// deployment, in virtual time — and a fidelity that needs the
	// simulator (simulated, multi) fails here when the deployment has none.
	// Without it the Setup's launcher is the engine the configuration
	// names, whatever plan.fidelity says (spoc run, sweep, tune, plan
	// --estimate).
	Plan bool
	// NamePrefix names Kubernetes objects (default "spoc-" + study name).
	NamePrefix string
	Logger     *slog.Logger
}

// DefaultCompareTargets are the hardware options --compare plans when
// engine.compare names none: the reference case's two deployments.
var DefaultCompareTargets = []Target{
	{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4},
	{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2},
}

// Setup validates c and resolves it, once, into the value every use case
// runs on: the simulated deployment (model, GPU, flags, calibration and
// correction files read once), the engine's launcher and whether it
// evaluates in virtual time, the plan's fidelity, the workload, SLA,
// client, windows, sweep policy, study and telemetry as domain types, and
// each compare target's simulated Setup. Files that later phases read must
// exist now (an error naming the field rather than a failure after minutes
// of tuning). Only config knows the YAML schema; nothing downstream sees
// *Config.
func (c *Config) Setup(o SetupOptions) (plan.Setup, error) {
	if o.Quick {
		quick := *c
		quick.ApplyQuick()
		c = &quick
	}
	if err := c.Validate(); err != nil {
		return plan.Setup{}, err
	}
	if err := c.checkInputs(); err != nil {
		return plan.Setup{}, err
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "spoc-" + c.Search.Study
	}
	// The simulated deployment: the sim engine's input, and for any other
	// engine the cost model's view of it (a multi plan's search, the
	// roofline, --estimate). A real engine may run flags the simulator
	// does not model: then it has no simulated counterpart, and only what
	// needs one fails (SimErr).
	dep, simErr := resolveSim(c.Engine, c.Fleet)
	if f := c.Engine.flavorName(); simErr == nil && f == FlavorGeneric {
		// the simulator cannot know what a generic server's parameters
		// mean: a search over them has no simulated counterpart
		// (docs/engines.md, flavors); SGLang's it reads (sim.SGLangParams)
		dep, simErr = sim.Deployment{}, fmt.Errorf("engine.flavor %s: the simulator cannot know what this server's parameters mean", f)
	}
	if simErr != nil && c.Engine.Kind == EngineSim {
		return plan.Setup{}, fmt.Errorf("sim engine: %w", simErr)
	}
	lo := LauncherOptions{Fleet: c.Fleet, NamePrefix: o.NamePrefix, Study: c.Search.Study, MaxServers: c.Search.Parallel, Logger: o.Logger}
	if simErr == nil {
		lo.Sim = &dep
	}
	if o.OutDir != "" {
		lo.Dir = filepath.Join(o.OutDir, "servers")
	}
	launcher, err := c.Engine.Launcher(lo)
	if err != nil {
		return plan.Setup{}, err
	}
	day, err := c.Day.resolve(c.Plan.EngineStartup)
	if err != nil {
		return plan.Setup{}, err
	}
	s := plan.Setup{
		Setup:           c.capacitySetup(o.OutDir, dep, simErr),
		OutDir:          o.OutDir,
		Title:           c.Report.Title,
		Trace:           plan.Trace{File: c.Trace.File, Window: c.Trace.Window, NVTX: c.Trace.NVTX, Rules: c.Trace.Rules},
		CalibrationFile: c.Engine.Sim.Calibration,
		Quick:           o.Quick,
		Demand:          c.Plan.demand(),
		Fidelity:        c.Plan.fidelity(),
		Day:             day,
	}
	s.Launcher = launcher
	if c.Engine.Kind == EngineProcess && oneOf(c.Fleet.Router, haproxyRouters) && simErr == nil {
		// a plan on one replica verifies the small fleet it sizes (plan
		// fleetverify.go): the same command and flags, r replicas behind
		// the HAProxy the fleet section names
		eng, flo := c.Engine, lo
		s.FleetLauncher = func(r int) (engine.Launcher, error) {
			e := eng
			e.GPUs = r * max(e.TensorParallelSize, 1)
			if o.OutDir != "" {
				flo.Dir = filepath.Join(o.OutDir, fmt.Sprintf("servers-fleet-%d", r))
			}
			return processLauncher(e, flo)
		}
	}
	// the simulator engine runs every evaluation in virtual time
	s.Virtual = c.Engine.Kind == EngineSim
	switch sl, ok := launcher.(*engine.Sim); {
	case ok:
		s.Simulator = sl
	case simErr == nil:
		if s.Simulator, err = engine.NewSim(dep, engine.SimOptions{Logger: o.Logger}); err != nil {
			return plan.Setup{}, err
		}
	}
	s.Fidelity.Mode, s.Fidelity.Note = plan.ResolveFidelity(s.Fidelity.Requested, c.Engine.Kind, s.Virtual, engine.Reconfigurable(launcher))
	if o.Plan {
		if err := planEngine(&s, c.Engine.Kind); err != nil {
			return plan.Setup{}, err
		}
	}
	for _, a := range Assumptions(c) {
		s.Assumptions = append(s.Assumptions, plan.Assumption{Field: a.Path, Value: a.Value, Note: a.Note})
	}
	targets := c.Engine.Compare
	if len(targets) == 0 && o.Compare {
		targets = DefaultCompareTargets
	}
	for _, t := range targets {
		tc := *c
		tc.Engine.GPU, tc.Engine.GPUs, tc.Engine.TensorParallelSize = t.GPU, t.GPUs, t.TensorParallelSize
		// Hardware the user does not have can only be simulated: the
		// target runs on the simulator, whatever the plan's engine.
		tdep, err := resolveSim(tc.Engine, tc.Fleet)
		if err != nil {
			return plan.Setup{}, &Errors{List: []*FieldError{{Path: "engine.compare", Msg: "target " + t.Name + ": sim engine: " + err.Error()}}}
		}
		sl, err := simLauncher(tc.Engine, LauncherOptions{Fleet: tc.Fleet, Sim: &tdep, Logger: o.Logger})
		if err != nil {
			return plan.Setup{}, &Errors{List: []*FieldError{{Path: "engine.compare", Msg: "target " + t.Name + ": " + err.Error()}}}
		}
		ts := tc.capacitySetup(o.OutDir, tdep, nil)
		ts.Launcher, ts.Virtual = sl, true
		ts.Deployment.Kind = EngineSim
		s.Compare = append(s.Compare, plan.Target{Name: t.Name, GPU: t.GPU, GPUs: t.GPUs, TensorParallelSize: t.TensorParallelSize, Setup: ts})
	}
	return s, nil
}

// resolveSim resolves the simulated deployment of e: the model, GPU,
// engine flags and the calibration and correction files. It is config's
// one call of sim.NewDeployment: every phase reads the deployment from the
// Setup, never the files again.
func resolveSim(e Engine, f Fleet) (sim.Deployment, error) {
	spec := e.SimDeployment()
	spec.Fleet = f.Sim()
	return sim.NewDeployment(spec)
}

// planEngine points a plan whose fidelity needs no engine time at the
// simulator of the configured deployment, and refuses a fidelity that
// needs the simulator when the deployment has none.
func planEngine(s *plan.Setup, kind string) error {
	mode := s.Fidelity.Mode
	if s.Simulator == nil && (mode == plan.FidelityMulti || mode == plan.FidelitySimulated && !s.Virtual) {
		what := "plan.fidelity " + mode
		if s.Fidelity.Requested == "" {
			what += " (the default on the " + kind + " engine)"
		}
		return &Errors{List: []*FieldError{{Path: "plan.fidelity", Msg: fmt.Sprintf("%s runs the simulator of the deployment, and it has none: %v; set plan.fidelity: live", what, s.Deployment.SimErr)}}}
	}
	if mode == plan.FidelitySimulated && !s.Virtual {
		// no engine time: every phase runs on the simulator of the
		// configured deployment (Fidelity.Note says so)
		s.Launcher, s.Virtual = s.Simulator, true
	}
	return nil
}

// capacitySetup is the part of the Setup that does not depend on the
// launcher; out resolves a relative study storage, dep and simErr are the
// resolved simulated deployment (resolveSim).
func (c *Config) capacitySetup(out string, dep sim.Deployment, simErr error) capacity.Setup {
	e := c.Engine
	params := make(map[string]any, len(e.Params))
	for k, v := range e.Params {
		params[k] = v
	}
	run := capacity.Load{Users: c.Run.Users, Ramp: c.Run.Ramp.D(), Warmup: c.Run.Warmup.D(), Duration: c.Run.Duration.D(), ThinkTimeScale: c.Run.ThinkTimeScale}
	sweep := run
	if c.Sweep.Duration > 0 {
		sweep.Duration = c.Sweep.Duration.D()
	}
	if c.Sweep.Warmup > 0 {
		sweep.Warmup = c.Sweep.Warmup.D()
	}
	sweep.Ramp = min(sweep.Ramp, sweep.Warmup)
	tuneLoad := capacity.Load{Users: c.Search.Users, Ramp: min(c.Run.Ramp.D(), c.Search.Warmup.D()), Warmup: c.Search.Warmup.D(),
		Duration: c.Search.Duration.D(), ThinkTimeScale: c.Run.ThinkTimeScale}
	// only spoc run and spoc sim run run open-loop: the sweep and the
	// study vary closed-loop users
	run.Arrivals = c.Run.Arrivals.process()
	targets := make([]telemetry.Target, 0, len(c.Telemetry.Targets))
	for _, t := range c.Telemetry.Targets {
		targets = append(targets, telemetry.Target{Name: t.Name, URL: t.URL})
	}
	// which of the server's metrics telemetry reads is the flavor's to
	// say (a generic server's by engine.generic.metrics, or none); the
	// flavor was checked when the configuration was loaded
	fl, _ := e.LaunchFlavor()
	serverMetrics, noServerMetrics := fl.ServerMetrics()
	var pods loadgen.PodLauncher
	if c.Run.Kubernetes != nil {
		pods = c.Run.Kubernetes.podLauncher(e, c.Search.Study)
	}
	spec := c.TuneSpec()
	if out != "" {
		spec.Storage = c.Search.StorageIn(out)
	}
	return capacity.Setup{
		Deployment: capacity.Deployment{
			Kind: e.Kind, Flavor: e.flavorName(), Model: e.Model, ServedModelName: e.ServedModelName, GPU: e.GPU, GPUs: e.GPUs,
			TensorParallelSize: e.TensorParallelSize, WeightFormat: e.WeightFormat, MaxModelLen: e.MaxModelLen,
			Params: params, Sim: dep, SimErr: simErr, SimErrorRate: e.Sim.ErrorRate,
		},
		Workload:        c.workloadSpec(),
		MidSessionStart: c.Run.MidSessionStart,
		SLA:             c.SLA.Result(),
		Client: capacity.Client{
			Endpoint: c.Run.Endpoint, APIKey: apiKey(c.Run.APIKeyEnv), APIKeyPlainHTTP: c.Run.APIKeyPlainHTTP,
			RequestTimeout: c.Run.RequestTimeout.D(), FirstByteTimeout: c.Run.FirstByteTimeout.D(),
			ExactOutputLength: c.Workload.ExactOutputLength, ClientBoundLagP99: c.Run.ClientBoundLagP99.D(),
			HistoryPolicy: c.Run.HistoryPolicy, PromptDriftLimit: c.Run.PromptDriftLimit,
			SessionHeader: c.Fleet.SessionHeader, SessionKey: c.Fleet.SessionKey,
			Clients: c.Run.Clients, Pods: pods,
		},
		Windows: capacity.Windows{Run: run, Tune: tuneLoad, Sweep: sweep},
		Sweep: capacity.SweepPolicy{
			SweepOptions: capacity.SweepOptions{Grid: c.Sweep.Users, Start: c.Sweep.Start, Max: c.Sweep.Max,
				ResolutionUsers: c.Sweep.ResolutionUsers, ResolutionFraction: c.Sweep.ResolutionFraction, Repeats: c.Sweep.Repeats, Seeds: c.Sweep.Seeds,
				Precision: capacity.Precision{Target: float64(c.Sweep.Precision), MinRuns: c.Sweep.MinRuns, MaxRuns: c.Sweep.MaxRuns}},
			TopK: c.Sweep.TopK, Choose: c.Sweep.Choose,
		},
		Search: spec,
		Telemetry: capacity.Telemetry{
			Enabled: c.Telemetry.Enabled, Interval: c.Telemetry.Interval.D(), Targets: targets,
			Prometheus: c.Telemetry.Prometheus, Queries: telemetry.Queries(c.Telemetry.Queries),
			StragglerClockDrop: c.Telemetry.StragglerClockDrop,
			ServerMetrics:      serverMetrics, NoServerMetrics: noServerMetrics,
		},
	}
}

// TuneSpec is the study c describes: its search section, the flags every
// trial gets (Engine.BaseParams), the context limit and the SLA.
func (c *Config) TuneSpec() tune.Spec {
	s := c.Search
	defaults, defaultsName := c.Engine.EngineDefaults()
	return tune.Spec{
		Defaults:              defaults,
		DefaultsName:          defaultsName,
		Space:                 s.Space,
		Objectives:            s.Objectives,
		Sampler:               s.Sampler,
		Population:            s.Population,
		CrossoverProb:         s.CrossoverProb,
		MutationProb:          s.MutationProb,
		Seed:                  s.Seed,
		Parallel:              s.Parallel,
		Trials:                s.Trials,
		StopAfterSameFailures: s.StopAfterSameFailures,
		Storage:               s.Storage,
		Study:                 s.Study,
		Users:                 s.Users,
		BaseParams:            map[string]any(c.Engine.BaseParams(c.Fleet)),
		MaxModelLen:           c.Engine.MaxModelLen,
		SLA:                   c.SLA.Result(),
		Fingerprint:           c.fingerprint(),
	}
}

// fingerprint is what a study's results depend on beyond its space: the
// model and hardware, the context limit, the SLA and the workload.
func (c *Config) fingerprint() map[string]string {
	w, _ := json.Marshal(c.Workload)
	sum := sha256.Sum256(w)
	return map[string]string{
		"model":                c.Engine.Model,
		"gpu":                  c.Engine.GPU,
		"gpus":                 strconv.Itoa(c.Engine.GPUs),
		"tensor_parallel_size": strconv.Itoa(c.Engine.TensorParallelSize),
		"max_model_len":        strconv.Itoa(c.Engine.MaxModelLen),
		"sla":                  slaFingerprint(c.SLA.Result()),
		"workload":             hex.EncodeToString(sum[:6]),
		"tuning_window":        c.Search.Warmup.String() + " warm-up, " + c.Search.Duration.String() + " measured",
	}
}

// slaFingerprint is the SLA in the canonical form studies have stored in
// their fingerprint since the first release: the Go field names as JSON keys
// and Go duration strings. summary.json now spells the SLA in snake_case;
// the fingerprint keeps this frozen form so that existing studies keep their
// names and resume (tune refuses a study whose stored fingerprint differs).
func slaFingerprint(s result.SLA) string {
	type clause struct {
		Percentile float64
		Max        string
	}
	c := func(l result.LatencyClause) clause { return clause{l.Percentile, l.Max.String()} }
	b, _ := json.Marshal(struct {
		TTFT, ITL, TPOT, E2E clause
		MaxErrorRate         float64
		Scope                string
	}{c(s.TTFT), c(s.ITL), c(s.TPOT), c(s.E2E), s.MaxErrorRate, s.Scope})
	return string(b)
}

// checkInputs fails when a file a later phase reads is missing.
func (c *Config) checkInputs() error {
	errs := &Errors{}
	for _, f := range []struct{ field, path string }{
		{"trace.file", c.Trace.File}, {"trace.rules", c.Trace.Rules},
		{"engine.sim.calibration", c.Engine.Sim.Calibration}, {"engine.sim.correction", c.Engine.Sim.Correction}, {"engine.gpu_catalog", c.Engine.GPUCatalog},
		{"workload.corpus", c.Workload.Corpus},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs.Addf(f.field, "%v", err)
		}
	}
	return errs.Err()
}

// Quick settings: enough to exercise every phase of a plan in under half a
// minute on the simulator.
const (
	quickTrials     = 12
	quickPopulation = 6
)

// ApplyQuick shortens c in place for a smoke run (spoc plan --quick). It
// never lengthens what the configuration set: each window becomes the
// shorter of the configured one and the quick one.
func (c *Config) ApplyQuick() {
	c.Search.Trials = min(c.Search.Trials, quickTrials)
	c.Search.Population = min(c.Search.Population, quickPopulation)
	c.Search.Parallel = min(c.Search.Parallel, c.Search.Trials)
	// Windows stay long enough for the cold prefill burst of mid-session
	// starts (every user's history is uncached on its first request) to
	// drain before measuring; in virtual time they cost little.
	c.Search.Warmup = min(c.Search.Warmup, Duration(90*time.Second))
	c.Search.Duration = min(c.Search.Duration, Duration(2*time.Minute))
	c.Run.Ramp = min(c.Run.Ramp, Duration(60*time.Second))
	c.Run.Warmup = min(c.Run.Warmup, Duration(90*time.Second))
	c.Run.Duration = min(c.Run.Duration, Duration(3*time.Minute))
	// A sweep window of 0 uses the (now quick) run window; a configured one
	// is kept when it is shorter still.
	if c.Sweep.Duration != 0 {
		c.Sweep.Duration = min(c.Sweep.Duration, c.Run.Duration)
	}
	if c.Sweep.Warmup != 0 {
		c.Sweep.Warmup = min(c.Sweep.Warmup, c.Run.Warmup)
	}
	c.Sweep.TopK = min(c.Sweep.TopK, 2)
	c.Sweep.Seeds = min(c.Sweep.Seeds, 3)
	c.Sweep.MinRuns = min(c.Sweep.MinRuns, 4)
	c.Sweep.MaxRuns = max(min(c.Sweep.MaxRuns, 8), c.Sweep.MinRuns)
	c.Sweep.ResolutionUsers = max(c.Sweep.ResolutionUsers, 10)
	c.Sweep.ResolutionFraction = max(c.Sweep.ResolutionFraction, 0.05)
}

// workloadSpec is the workload section as the runs see it: a reply's
// reasoning leaves the history only under the final-content history policy.
func (c *Config) workloadSpec() workload.Spec {
	w := c.Workload
	if c.Run.HistoryPolicy == "keep" {
		w.ReasoningShare = 0
	}
	return w
}

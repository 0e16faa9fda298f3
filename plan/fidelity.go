package plan

import (
	"errors"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/sim"
)

// Fidelities: where a plan spends engine time.
const (
	// FidelityLive runs every phase on the configured engine: the
	// exhaustive reference.
	FidelityLive = "live"
	// FidelitySimulated runs every phase on the simulator of the
	// configured deployment; a real engine is not started.
	FidelitySimulated = "simulated"
	// FidelityMulti probes the real engine, calibrates the simulator to it,
	// searches in the calibrated simulator, verifies the best live and
	// sweeps the chosen configuration live around its predicted ceiling.
	FidelityMulti = "multi"
)

// Fidelities lists the accepted plan.fidelity values.
var Fidelities = []string{FidelityLive, FidelitySimulated, FidelityMulti}

// Fidelity is how a plan spends engine time, and how much it may spend.
type Fidelity struct {
	// Mode is the fidelity the plan runs — FidelityLive, FidelitySimulated
	// or FidelityMulti — resolved by config for the configured engine
	// (ResolveFidelity).
	Mode string
	// Requested is plan.fidelity as configured; empty means multi on an
	// engine spoc starts, live on an external server (its flags cannot
	// change: nothing to search) and simulated on the simulator.
	Requested string
	// Note is what the plan says about Mode on this engine ("" when
	// nothing): a fidelity the engine turned into another, or that a
	// simulated plan did not start the engine.
	Note string
	// Budget bounds the engine time of the plan (0: no bound). A budget
	// below what the plan needs at least is refused before anything runs.
	Budget time.Duration
	// Startup is the engine start-up time estimates use; 0 means spoc
	// plan --estimate measures it by starting the engine once.
	Startup time.Duration
	// RunOverhead is the engine time one live run takes beyond its
	// windows on this engine, as measured by the user (plan.run_overhead);
	// 0 means RunOverhead, spoc sim serve's.
	RunOverhead time.Duration
	// VerifyTopK is how many configurations of the calibrated search a
	// multi plan verifies live (0: DefaultVerifyTopK).
	VerifyTopK int
	// VerifyFleet is the replicas of the small live fleet a plan of one
	// replica verifies its fleet sizing with (fleetverify.go): 0 the
	// sized fleet's, at most maxVerifyReplicas; -1 none.
	VerifyFleet int
}

// Multi plan constants: the documented choices of docs/fidelity.md.
const (
	// DefaultVerifyTopK configurations of the calibrated search are
	// verified live unless plan.verify_top_k says otherwise: the
	// simulator's choice and its runner-up, so that live decides between
	// two configurations the corrected simulator ranked close.
	DefaultVerifyTopK = 2
	// MaxVerifyTopK bounds plan.verify_top_k: each verified configuration
	// costs two live runs and a server start.
	MaxVerifyTopK = 8
	// RefitRounds bounds how often verify refits the correction and
	// searches again when live and predicted disagree.
	RefitRounds = 1
)

// verifyTopK is VerifyTopK, or DefaultVerifyTopK when it is 0.
func (f Fidelity) verifyTopK() int {
	if f.VerifyTopK > 0 {
		return f.VerifyTopK
	}
	return DefaultVerifyTopK
}

// ProbeLoads are the configured flags' probe loads, in order, as
// fractions of the simulator's ceiling for them: the first of the
// uncalibrated simulator's (half of it: light batching, the prefill and
// decode cost of few requests), each later one of the ceiling the
// simulator predicts once corrected by the probes before it (the batched
// regime that decides the SLA). The flag probe runs at the last corrected
// ceiling, so that it differs from a fitted probe in the flag alone.
var ProbeLoads = []float64{0.5, 1}

// ResolveFidelity is the fidelity a plan that asks for requested (empty:
// the default) runs on an engine of kind — virtual: the simulator;
// reconfigurable: spoc applies each configuration's flags — and the note
// the plan prints about it ("" when none). On the simulator every fidelity
// is the simulated plan (there is no live phase to spare); a simulated plan
// on a real engine never starts it. config calls it once, resolving the
// Setup.
func ResolveFidelity(requested, kind string, virtual, reconfigurable bool) (mode, note string) {
	switch {
	case virtual && (requested == FidelityLive || requested == FidelityMulti):
		return FidelitySimulated, fmt.Sprintf("plan.fidelity %s on the simulator engine is the simulated plan: every run is simulated anyway.", requested)
	case virtual:
		return FidelitySimulated, ""
	case requested == FidelitySimulated:
		return FidelitySimulated, fmt.Sprintf("plan.fidelity simulated: the %s engine was not started; every number comes from the simulator of the configured deployment.", kind)
	case !reconfigurable && requested == FidelityMulti:
		return FidelityLive, "plan.fidelity multi on an external server is the live plan: spoc cannot change the server's flags, so there is nothing to search in the simulator."
	case !reconfigurable && requested == "":
		return FidelityLive, ""
	case requested == "":
		return FidelityMulti, ""
	}
	return requested, ""
}

// ErrBudget marks a plan refused because its budget cannot cover even the
// least it needs.
var ErrBudget = errors.New("plan.budget")

// FidelityReport is the summary's account of the fidelity: what ran live
// and what was simulated, the probes, the correction and its error, every
// verified point predicted against measured, and engine time per phase
// and per fidelity.
type FidelityReport struct {
	// Mode is the fidelity that ran; Requested what the configuration said
	// (empty: the default).
	Mode      string `json:"mode"`
	Requested string `json:"requested,omitempty"`
	// BudgetSeconds is plan.budget (0: none).
	BudgetSeconds float64 `json:"budget_engine_seconds,omitempty"`
	// Probes are the live runs that pinned the correction.
	Probes []ProbePoint `json:"probes,omitempty"`
	// Correction is the fitted correction of the simulator, with its error
	// on the probes it was fitted to and on the held-back probe.
	Correction *sim.Correction `json:"correction,omitempty"`
	Fit        *FitReport      `json:"fit,omitempty"`
	// PredictedCeiling is the calibrated simulator's ceiling of the chosen
	// configuration; the final sweep is bracketed around it.
	PredictedCeiling int `json:"predicted_ceiling_users,omitempty"`
	// PredictedEstimate is the calibrated simulator's capacity estimate
	// of the chosen configuration, which placed the live refinement.
	PredictedEstimate *capacity.CapacityEstimate `json:"predicted_estimate,omitempty"`
	// Verified are the points run live to check the prediction.
	Verified []VerifyPoint `json:"verified,omitempty"`
	// Rounds is how many times verify refitted and searched again.
	Rounds int `json:"refit_rounds"`
	// VerifyTopK is how many configurations verify ran live; KeptTrial
	// the one live kept (-1: the configured flags; nil before verify).
	VerifyTopK int  `json:"verify_top_k,omitempty"`
	KeptTrial  *int `json:"kept_trial,omitempty"`
	// EngineSeconds is live engine time by phase; LiveEngineSeconds their
	// sum and GPUHours that times the deployment's GPUs.
	EngineSeconds     map[string]float64 `json:"engine_seconds_by_phase,omitempty"`
	EngineStarts      map[string]int     `json:"engine_starts_by_phase,omitempty"`
	LiveEngineSeconds float64            `json:"live_engine_seconds"`
	GPUHours          float64            `json:"gpu_hours"`
	// SimulatedSeconds is the wall time of the phases that ran only in the
	// simulator (no engine time).
	SimulatedSeconds float64 `json:"simulated_wall_seconds"`
	// FinalCeiling and FinalProvenance are the plan's capacity ceiling and
	// where it was measured (a multi plan's is its final live sweep's).
	FinalCeiling    int        `json:"final_ceiling_users"`
	FinalProvenance Provenance `json:"final_ceiling_provenance"`
}

// ProbePoint is one probe: a live run and what the simulator predicted for
// it before and after calibration.
type ProbePoint struct {
	Users  int            `json:"users"`
	Params map[string]any `json:"params"`
	// Why says what the probe pins.
	Why string `json:"why"`
	// HeldBack marks the probe left out of the first fit to measure the
	// fit's error on a run it did not see.
	HeldBack bool `json:"held_back,omitempty"`
	// Attempts is 2 when the first try failed and the retry measured.
	Attempts int       `json:"attempts"`
	Live     Latencies `json:"live"`
	// Uncalibrated and Calibrated are the simulator's numbers for the same
	// run with the built-in cost model and with the correction.
	// The held-back probe's Calibrated is the prediction of the fit that
	// did not see it.
	Uncalibrated Latencies `json:"uncalibrated"`
	Calibrated   Latencies `json:"calibrated"`
	// UncalibratedError and CalibratedError are the RMS relative errors of
	// those against Live over the fit's metrics; null when it could not be
	// computed (a replay failed, nothing comparable), ErrorAbsent says why.
	UncalibratedError *float64   `json:"uncalibrated_rms_relative_error"`
	CalibratedError   *float64   `json:"calibrated_rms_relative_error"`
	ErrorAbsent       string     `json:"error_absent,omitempty"`
	Provenance        Provenance `json:"provenance"`
}

// Latencies are the numbers a probe compares.
type Latencies struct {
	TTFTP50Ms        float64 `json:"ttft_p50_ms"`
	ITLP50Ms         float64 `json:"itl_p50_ms"`
	TTFTP95Ms        float64 `json:"ttft_p95_ms"`
	ITLP95Ms         float64 `json:"itl_p95_ms"`
	OutputThroughput float64 `json:"output_throughput"`
	Pass             bool    `json:"pass"`
	// PrefixCacheHitRate is the share of the successful requests' prompt
	// tokens served from the prefix cache, as the server reported them
	// (usage.prompt_tokens_details.cached_tokens; the simulator reports its
	// own the same way): 0 when no hit was reported.
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	// Settling says the run was still settling when its measured window
	// opened (result.SettlingReport): its numbers are a start-up
	// transient's, not the steady state's.
	Settling bool `json:"settling,omitempty"`
}

// FitReport is the correction fit's error: the root mean square of the
// relative error of the fitted latencies (TTFT and ITL, p50 and p95), on
// the probes the first fit saw, on the held-back probe, and of the built-in
// cost model before any fit. The latencies are those of fitMetrics.
type FitReport struct {
	Metrics []string `json:"metrics"`
	// UncalibratedError and FittedError are null when they could not be
	// computed (a replay in the simulator failed, nothing comparable);
	// ErrorsAbsent says why for every absent error and run left out.
	UncalibratedError *float64 `json:"uncalibrated_rms_relative_error"`
	FittedError       *float64 `json:"fitted_rms_relative_error"`
	ErrorsAbsent      string   `json:"errors_absent,omitempty"`
	// HeldBackError is nil when there was no held-back probe or it
	// measured nothing comparable.
	HeldBackError *float64 `json:"held_back_rms_relative_error,omitempty"`
	// HeldBackCorrection is the correction of the first fit (without the
	// held-back probe), whose error HeldBackError is.
	HeldBackCorrection *sim.Correction `json:"held_back_fit_correction,omitempty"`
	// Terms are the final fit's terms: value and whether the runs
	// identified it.
	Terms []FitTerm `json:"terms,omitempty"`
	// Evaluations is the number of simulated replays the fits took.
	Evaluations int `json:"evaluations"`
}

// VerifyPoint is one configuration run live at one load the calibrated
// simulator had judged.
type VerifyPoint struct {
	Round int `json:"round"`
	// Trial is the study trial of the configuration (-1: the configured
	// flags).
	Trial     int            `json:"trial"`
	Users     int            `json:"users"`
	Params    map[string]any `json:"params"`
	Predicted Latencies      `json:"predicted"`
	Measured  Latencies      `json:"measured"`
	// Agree is set when live and predicted give the same SLA verdict.
	Agree      bool       `json:"agree"`
	Provenance Provenance `json:"provenance"`
}

// RunOverhead is the engine time one live run takes beyond its windows
// (prefix-cache reset, the requests in flight at the end of the window,
// the summary), measured on spoc sim serve as a process (docs/fidelity.md):
// on a real vLLM it is an assumption, which plan.run_overhead replaces.
const RunOverhead = 500 * time.Millisecond

// RunOverheadAssumed says where RunOverhead comes from when no measurement
// of the engine replaced it.
const RunOverheadAssumed = "assumed: measured on spoc sim serve as a process, not on this engine (set plan.run_overhead to a measurement)"

// runOverhead is the per-run overhead plans and estimates count on this
// engine, and where it comes from.
func (f Fidelity) runOverhead() (time.Duration, string) {
	if f.RunOverhead > 0 {
		return f.RunOverhead, "configured (plan.run_overhead)"
	}
	return RunOverhead, RunOverheadAssumed
}

// minimumEngineTime is the least engine time a plan of mode needs: the
// probes of a multi plan (every configured probe load and the flag probe,
// on two servers, with the sweep's windows), or the first run of a live
// plan's baseline (the tuning windows). A start-up
// time that is not configured counts as 0, so the minimum is a lower bound.
func minimumEngineTime(s Setup, mode string) (time.Duration, string) {
	w := s.Windows.Sweep // probes and the final sweep run with these
	overhead, _ := s.Fidelity.runOverhead()
	run := max(w.Ramp, w.Warmup) + w.Duration + overhead
	switch mode {
	case FidelityMulti:
		n := len(ProbeLoads) + 1
		return time.Duration(n)*run + 2*s.Fidelity.Startup, fmt.Sprintf("%d probes of %s on 2 servers", n, run)
	case FidelityLive:
		t := s.Windows.Tune
		return max(t.Ramp, t.Warmup) + t.Duration + overhead + s.Fidelity.Startup, "the baseline's first run"
	}
	return 0, ""
}

// ErrUnresolved marks a Setup whose fidelity config did not resolve for
// Run (config.SetupOptions.Plan).
var ErrUnresolved = errors.New("plan: the Setup is not resolved for a plan")

// prepareFidelity states the plan's fidelity, resolved by config, in
// sum.Fidelity and its notes, and refuses a budget below the plan's minimum
// before anything runs.
func prepareFidelity(s Setup, sum *Summary) error {
	f := s.Fidelity
	switch {
	case f.Mode == "":
		return fmt.Errorf("%w: no fidelity (config resolves it)", ErrUnresolved)
	case f.Mode == FidelitySimulated && !s.Virtual:
		// a simulated plan must not start the engine
		return fmt.Errorf("%w: a simulated plan on the %s engine evaluates on the simulator of the deployment (config.SetupOptions.Plan)", ErrUnresolved, s.Deployment.Kind)
	}
	if f.Note != "" {
		sum.Notes = append(sum.Notes, f.Note)
	}
	sum.Fidelity = &FidelityReport{Mode: f.Mode, Requested: f.Requested, BudgetSeconds: f.Budget.Seconds()}
	if f.Budget > 0 {
		if least, what := minimumEngineTime(s, f.Mode); least > f.Budget {
			return fmt.Errorf("%w %s is too small for a %s plan: it needs at least %s of engine time (%s); raise plan.budget or see spoc plan --estimate",
				ErrBudget, f.Budget, f.Mode, least.Round(time.Second), what)
		}
	}
	return nil
}

// finishFidelity totals engine time per phase once the phases ran.
func finishFidelity(sum *Summary, gpus int) {
	f := sum.Fidelity
	if f == nil {
		return
	}
	f.EngineSeconds, f.EngineStarts = map[string]float64{}, map[string]int{}
	for _, ph := range sum.Phases {
		// a phase that only stopped the last server (a few milliseconds)
		// is a simulator phase
		if ph.EngineSeconds >= 0.5 {
			f.EngineSeconds[ph.Name] += ph.EngineSeconds
			f.EngineStarts[ph.Name] += ph.EngineStarts
			f.LiveEngineSeconds += ph.EngineSeconds
		} else {
			f.SimulatedSeconds += ph.Seconds
		}
	}
	f.GPUHours = f.LiveEngineSeconds * float64(max(gpus, 1)) / 3600
	f.FinalCeiling, f.FinalProvenance = sum.Capacity.Users, sum.Capacity.Provenance
}

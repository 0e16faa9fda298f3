package plan

import (
	"fmt"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/trace/roofline"
	"github.com/spoc-project/spoc/workload"
)

// Summary is everything a capacity plan found: Run returns it, spoc plan
// writes it as summary.json, and the report package renders it and reads
// nothing else. Sections without data are nil or empty, and the renderers say
// they were not collected. The JSON names are the summary.json format:
// renaming one breaks every summary.json already written.
type Summary struct {
	Title       string    `json:"title"`
	Generated   time.Time `json:"generated"`
	SpocVersion string    `json:"spoc_version"`
	// Quick is set for a smoke-test plan (spoc plan --quick): shorter windows,
	// fewer trials; its numbers are indicative only.
	Quick bool `json:"quick,omitempty"`

	Engine   Engine               `json:"engine"`
	SLA      result.SLA           `json:"sla"`
	Workload *workload.Inspection `json:"workload,omitempty"`
	Capacity Capacity             `json:"capacity"`
	// Sweep is the full sweep of the chosen configuration, one point per
	// user count in increasing order.
	Sweep []SweepPoint `json:"sweep,omitempty"`
	// Candidates are the front members given a short sweep to choose from.
	Candidates []Candidate `json:"candidates,omitempty"`
	Search     *Search     `json:"search,omitempty"`
	// Trials is the number of finished trials of the study.
	Trials int `json:"trials"`
	// Pareto is the feasible Pareto front of the study (all trials are in
	// Search.Trials).
	Pareto []Member `json:"pareto"`
	// Client is the client-validity evidence of the run at the ceiling.
	Client Client `json:"client"`
	// Telemetry is the engine and GPU telemetry of the run at the ceiling.
	Telemetry *telemetry.Signals `json:"telemetry,omitempty"`
	// Kernels is the trace analysis, when a trace was configured.
	Kernels *Kernels `json:"kernels,omitempty"`
	// Compare holds the hardware comparison (spoc plan --compare).
	Compare []CompareRow `json:"compare,omitempty"`
	// TunedVsDefault compares the chosen configuration's ceiling with the
	// configured flags', both with their intervals (plan/ceiling.go).
	TunedVsDefault *TunedVsDefault `json:"tuned_vs_default,omitempty"`
	// Cost sizes every hardware option for plan.target_users: deployments,
	// GPUs and dollars (nil when no user count was asked).
	Cost *Cost `json:"cost,omitempty"`
	// Day is the simulated day (the day section): one row per autoscaling
	// policy with its SLA attainment and GPU-hours.
	Day *DaySummary `json:"day,omitempty"`
	// Peak is the capacity at the peak's profile mix, when plan.peak_shares
	// set one; the cost section is sized from it.
	Peak *PeakMix `json:"peak,omitempty"`
	// Envelope says which simulated operating points lie outside what the
	// simulator's calibration measured (nil for live plans).
	Envelope *Envelope `json:"envelope,omitempty"`
	// Assumptions lists every default that is an assumption, with its value.
	Assumptions []Assumption `json:"assumptions"`
	// Fidelity says what ran live and what was simulated, and what the
	// engine time went to (fidelity.go).
	Fidelity *FidelityReport `json:"fidelity,omitempty"`
	// Phases records how long each phase took.
	Phases []Phase `json:"phases,omitempty"`
	// Notes are things the reader must know (not collected, degraded, …).
	Notes []string `json:"notes,omitempty"`
}

// Engine describes the deployment under test.
type Engine struct {
	Kind               string `json:"kind"`
	Model              string `json:"model"`
	GPU                string `json:"gpu"`
	GPUs               int    `json:"gpus"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
	WeightFormat       string `json:"weight_format"`
	MaxModelLen        int    `json:"max_model_len"`
	// Calibration names the cost-model calibration the simulator used and
	// its validation error; empty for real engines.
	Calibration string `json:"calibration,omitempty"`
}

// Capacity is the answer.
type Capacity struct {
	// Users is the capacity: Estimate's users rounded down when the sweep
	// estimated it (sweep.precision), else the walk's Ceiling.
	Users int `json:"users"`
	// Estimate is the capacity estimated from every run near the knee
	// (capacity.EstimatorMethod): the user count at which the binding
	// clause's expected share of samples over its limit reaches the share
	// the clause allows, with its confidence interval (how well this plan
	// measured it), the precision reached and the spread of one run's
	// verdict over workload seeds (what headroom must cover). Nil when
	// NoEstimate says why. Refinement says what the precision target
	// spent and whether it was met.
	Estimate   *capacity.CapacityEstimate `json:"estimate,omitempty"`
	NoEstimate string                     `json:"no_estimate,omitempty"`
	Refinement *capacity.Refinement       `json:"refinement,omitempty"`
	// Runs counts the runs of the capacity sweep (the walk's levels and
	// the refinement's runs); EngineSeconds is their windows' engine time
	// (simulated time for a virtual sweep; with the per-run overhead for
	// a live one).
	Runs          int     `json:"runs"`
	EngineSeconds float64 `json:"engine_seconds"`
	// Ceiling is the walk's ceiling: the largest user count that met the
	// SLA on workload.seed, the number CeilingInterval goes with.
	Ceiling int `json:"ceiling"`
	// CeilingInterval is where the ceiling of a sweep with another
	// workload seed lands (95 %), with its method and per-seed ceilings;
	// nil when NoInterval says why none was measured.
	CeilingInterval *capacity.Interval `json:"ceiling_interval,omitempty"`
	NoInterval      string             `json:"no_interval,omitempty"`
	// BindingMargin is the binding clause's value at the ceiling and at
	// the first failing count against its limit.
	BindingMargin *capacity.Margin `json:"binding_margin,omitempty"`
	// Provenance is where the sweep that found it ran.
	Provenance Provenance `json:"provenance"`
	// Unconfirmed is set when the walk went above its ceiling on levels
	// that met the SLA on too few samples to be judged; UnconfirmedUsers
	// is the largest of them. The ceiling is always a judged count.
	Unconfirmed      bool `json:"unconfirmed,omitempty"`
	UnconfirmedUsers int  `json:"unconfirmed_users,omitempty"`
	// FirstFailingUsers is the smallest failing count above it (0: none
	// failed up to the sweep's maximum).
	FirstFailingUsers int `json:"first_failing_users"`
	// FailedClause is the SLA clause that failed first at FirstFailingUsers.
	FailedClause string `json:"failed_clause"`
	// Config is the chosen engine configuration (the flavor's flag
	// names: vLLM's, SGLang's, or a generic server's parameter names).
	Config map[string]any `json:"config"`
	// ServeCommand is Config as a ready command line in the engine
	// flavor's own form (vllm serve, SGLang's launch_server, a generic
	// server's command template); empty for a server spoc did not start,
	// whose flags it does not know: ServerFlags then says so, with what
	// the server reveals.
	ServeCommand    string  `json:"serve_command"`
	ServerFlags     string  `json:"server_flags,omitempty"`
	ResolutionUsers int     `json:"resolution_users"`
	KneeUsers       int     `json:"knee_users"`
	UsersPerGPU     float64 `json:"users_per_gpu"`
	Repeats         int     `json:"repeats"`
	// ThroughputSpread is the largest relative spread between repeats.
	ThroughputSpread float64 `json:"throughput_spread"`
	// ChosenTrial is the study trial the configuration came from (-1: the
	// configured engine.params).
	ChosenTrial int    `json:"chosen_trial"`
	ChosenBy    string `json:"chosen_by"`
}

// SweepPoint is one user count of a sweep.
type SweepPoint struct {
	Users int `json:"users"`
	// Provenance is where this level ran.
	Provenance   Provenance `json:"provenance"`
	Pass         bool       `json:"pass"`
	FailedClause string     `json:"failed_clause,omitempty"`
	// Insufficient: no run at this count failed, but one had too few
	// samples to judge a clause (UnjudgedClause): the level is neither a
	// pass nor a fail. FewSamplesPass says whether its measured values met
	// the SLA all the same.
	Insufficient   bool   `json:"insufficient_samples,omitempty"`
	FewSamplesPass bool   `json:"few_samples_pass,omitempty"`
	UnjudgedClause string `json:"unjudged_clause,omitempty"`
	// WarmCache says why the level's run started with an earlier run's
	// prefix cache (capacity.Evaluation.WarmCache); empty: it started cold.
	WarmCache string `json:"warm_cache,omitempty"`
	// Settling says the level's run was still settling when its measured
	// window opened (result.SettlingReport): its first half held
	// SettlingRatio of its second half's requests, under result.SettlingRatio
	// (settling_ratio is absent when it is 0: no request in the first half).
	Settling      bool    `json:"settling,omitempty"`
	SettlingRatio float64 `json:"settling_ratio,omitempty"`
	Requests      int64   `json:"requests"`
	ErrorRate     float64 `json:"error_rate"`
	// OutputThroughput and TotalThroughput are tokens/s.
	OutputThroughput float64 `json:"output_throughput"`
	TotalThroughput  float64 `json:"total_throughput"`
	TTFTP50Ms        float64 `json:"ttft_p50_ms"`
	TTFTP95Ms        float64 `json:"ttft_p95_ms"`
	ITLP95Ms         float64 `json:"itl_p95_ms"`
	TPOTP95Ms        float64 `json:"tpot_p95_ms"`
	// Profiles are the per-profile latencies at this count.
	Profiles []ProfilePoint `json:"profiles,omitempty"`
	// Engine-side state over the measured window.
	KVCacheUsageMean   float64 `json:"kv_cache_usage_mean"`
	KVCacheUsageMax    float64 `json:"kv_cache_usage_max"`
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	SMActiveMean       float64 `json:"sm_active_mean"`
	WaitingMean        float64 `json:"waiting_mean"`
	Preemptions        float64 `json:"preemptions"`
	DispatchLagP99Ms   float64 `json:"dispatch_lag_p99_ms"`
	// EngineTelemetry and GPUTelemetry say whether the engine's and the
	// GPUs' signals above were collected at all: without them the fields
	// are unmeasured, not zero.
	EngineTelemetry bool `json:"engine_telemetry"`
	GPUTelemetry    bool `json:"gpu_telemetry"`
}

// ProfilePoint is one profile's latencies at one user count.
type ProfilePoint struct {
	Name      string  `json:"name"`
	Requests  int64   `json:"requests"`
	TTFTP95Ms float64 `json:"ttft_p95_ms"`
	ITLP95Ms  float64 `json:"itl_p95_ms"`
	// OutputThroughput is this profile's output tokens/s.
	OutputThroughput float64 `json:"output_throughput"`
	// Drift compares the prompts the server reported with the workload's
	// targets (live runs; zero in simulated ones, where they are equal).
	Drift result.Drift `json:"drift"`
}

// Candidate is a front member's short-sweep result.
type Candidate struct {
	Trial   int            `json:"trial"`
	Params  map[string]any `json:"params"`
	Ceiling int            `json:"ceiling"`
	// FailedClause is what failed first above its ceiling.
	FailedClause string `json:"failed_clause,omitempty"`
	// FullCeiling (and FullFailedClause) are in summaries of plans that
	// ranked candidates on the tuning windows and broke ties with full
	// sweeps; candidates are now swept with the sweep's windows, and these
	// stay empty.
	FullCeiling      int    `json:"full_ceiling,omitempty"`
	FullFailedClause string `json:"full_failed_clause,omitempty"`
	Chosen           bool   `json:"chosen"`
	// StudyThroughput is the candidate's output tokens/s in the study (0:
	// engine.params, not a study trial): candidates are ranked by it
	// before their sweeps, and a tie on the ceiling keeps the earlier one.
	StudyThroughput float64 `json:"study_output_throughput,omitempty"`
	// TieBreak says how a tie on the ceiling with the chosen candidate was
	// broken, on the chosen candidate and on each it tied with; empty
	// when the candidate tied with none.
	TieBreak string `json:"tie_break,omitempty"`
	// Provenance is where the candidate's short sweep ran.
	Provenance Provenance `json:"provenance"`
}

// Search is the study: objectives, every trial, hypervolume by generation
// and parameter influence.
type Search struct {
	Study      string      `json:"study"`
	Sampler    string      `json:"sampler"`
	Users      int         `json:"users"`
	Objectives []Objective `json:"objectives"`
	Trials     []Member    `json:"trials"`
	Complete   int         `json:"complete"`
	Infeasible int         `json:"infeasible"`
	Failed     int         `json:"failed"`
	// Parallel is how many trials ran at most at once (search.parallel), when
	// more than one.
	Parallel int `json:"parallel,omitempty"`
	// Hypervolume is the front's hypervolume after each generation, with
	// the reference point used (in the oriented, normalised space).
	Hypervolume []GenerationHV `json:"hypervolume,omitempty"`
	// Influence is the rank correlation of each parameter with each
	// objective over complete trials.
	Influence []Influence `json:"influence,omitempty"`
	// Params are the searched parameters with their documentation.
	Params []search.ParamSpec `json:"params"`
}

// Objective is one optimised metric.
type Objective struct {
	Metric    string `json:"metric"`
	Direction string `json:"direction"`
	Unit      string `json:"unit"`
}

// Member is one trial.
type Member struct {
	Number     int            `json:"number"`
	Generation int            `json:"generation"`
	State      string         `json:"state"`
	Params     map[string]any `json:"params"`
	// Values are in the order of Search.Objectives (latencies in seconds).
	Values      []float64 `json:"values,omitempty"`
	Constraints []float64 `json:"constraints,omitempty"`
	Feasible    bool      `json:"feasible"`
	OnFront     bool      `json:"on_front"`
	Reason      string    `json:"reason,omitempty"`
	// Provenance is where the trial ran (empty for a trial that never ran).
	Provenance *Provenance `json:"provenance,omitempty"`
}

// GenerationHV is the hypervolume of the front after one generation.
type GenerationHV struct {
	Generation  int     `json:"generation"`
	Trials      int     `json:"trials"`
	Hypervolume float64 `json:"hypervolume"`
}

// Influence is one parameter's rank correlation with one objective.
type Influence struct {
	Param       string  `json:"param"`
	Objective   string  `json:"objective"`
	Correlation float64 `json:"spearman"`
}

// Client is the evidence that the measurements were not client-bound.
type Client struct {
	Virtual          bool     `json:"virtual"`
	DispatchLagP99Ms float64  `json:"dispatch_lag_p99_ms"`
	ClientBound      bool     `json:"client_bound"`
	Reasons          []string `json:"reasons,omitempty"`
}

// Kernels is the kernel-level breakdown and its roofline comparison.
type Kernels struct {
	File      string           `json:"file"`
	Breakdown *trace.Breakdown `json:"breakdown"`
	// Mix is the batch the roofline predictions priced: the steady state at
	// the ceiling.
	Mix roofline.BatchMix `json:"batch_mix"`
	// Roofline compares the measured split with the cost model's under each
	// weight-format assumption (W4A16, FP4).
	Roofline []roofline.Comparison `json:"roofline,omitempty"`
}

// CompareRow is one hardware target of a comparison.
type CompareRow struct {
	Name               string  `json:"name"`
	GPU                string  `json:"gpu"`
	GPUs               int     `json:"gpus"`
	TensorParallelSize int     `json:"tensor_parallel_size"`
	Users              int     `json:"users"`
	FirstFailingUsers  int     `json:"first_failing_users"`
	FailedClause       string  `json:"failed_clause"`
	UsersPerGPU        float64 `json:"users_per_gpu"`
	// Ratio is Users over the first target's Users.
	Ratio float64 `json:"ratio"`
	// ResolutionUsers is the sweep's resolution at the ceiling, the width
	// of the ceiling's interval in the cost section when it has no
	// CeilingInterval.
	ResolutionUsers int `json:"resolution_users,omitempty"`
	// CeilingInterval is the ceiling's interval over workload seeds.
	CeilingInterval *capacity.Interval `json:"ceiling_interval,omitempty"`
	// Estimate is the target's capacity estimate (Users is it rounded
	// down); nil when the sweep made none.
	Estimate *capacity.CapacityEstimate `json:"estimate,omitempty"`
	// Ceiling is the walk's ceiling (the level throughput was read at).
	Ceiling int `json:"ceiling,omitempty"`
	// OutputThroughput is the output tokens/s at the ceiling (mean of its
	// repeats).
	OutputThroughput float64 `json:"output_throughput,omitempty"`
	// Provenance is always simulated: hardware the user does not have.
	Provenance Provenance `json:"provenance"`
	// Unconfirmed: the ceiling met the SLA on too few samples to be judged.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// Assumption is one default that was not a published fact.
type Assumption struct {
	Field string `json:"field"`
	// Value is the value the plan used: for a setting spoc resolves itself
	// (search.users: 0), the value it chose, and Automatic says how.
	Value     string `json:"value"`
	Automatic string `json:"automatic,omitempty"`
	Note      string `json:"note"`
}

// Phase is one step of the plan and its wall time.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"`
	// EngineSeconds is how long live servers were up during the phase
	// (start-up included); EngineStarts how many were started. Both are 0
	// for phases that ran on the simulator in virtual time.
	EngineSeconds float64 `json:"engine_seconds"`
	EngineStarts  int     `json:"engine_starts"`
}

// Provenance says where a number came from: live or simulated, on which
// engine, launched how, reached where, which version.
type Provenance = capacity.Provenance

// HasEngineTelemetry reports whether the point's engine signals (KV cache,
// prefix hits, queue, preemptions) were measured; summaries written before
// the flag existed count as measured when a signal is non-zero.
func (p SweepPoint) HasEngineTelemetry() bool {
	return p.EngineTelemetry || p.KVCacheUsageMax > 0 || p.PrefixCacheHitRate > 0 || p.WaitingMean > 0 || p.Preemptions > 0
}

// HasGPUTelemetry reports whether the point's GPU signals were measured.
func (p SweepPoint) HasGPUTelemetry() bool { return p.GPUTelemetry || p.SMActiveMean > 0 }

// Verdict says in words what the sweep concluded at this count: pass, fail
// with the first failing clause, or unjudged (too few samples), which is
// neither and must never read as a failure; a run still settling when its
// window opened says so after the verdict.
func (s SweepPoint) Verdict() string {
	v := s.verdict()
	if s.Settling {
		v += fmt.Sprintf(" (still settling: the window's first half held %.0f %% of its second's requests)", 100*s.SettlingRatio)
	}
	if s.WarmCache != "" {
		v += " (warm cache: " + s.WarmCache + ")"
	}
	return v
}

func (s SweepPoint) verdict() string {
	switch {
	case s.Pass:
		return "pass"
	case s.Insufficient:
		v := "unjudged: too few samples"
		if s.UnjudgedClause != "" {
			v += " for " + s.UnjudgedClause
		}
		if s.FewSamplesPass {
			return v + "; the values measured met the SLA"
		}
		return v + "; the values measured did not meet the SLA"
	}
	return "fail: " + s.FailedClause
}

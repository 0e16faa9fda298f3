package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/workload"
)

// Load is one point of load: users and the run windows.
type Load struct {
	Users          int
	Ramp           time.Duration
	Warmup         time.Duration
	Duration       time.Duration
	ThinkTimeScale float64
	// SeedOffset is added to workload.seed for this run: repeat r of a
	// sweep level runs with offset r, so repeats measure different users,
	// sessions and arrival times instead of replaying one run (see
	// docs/capacity.md, "Seeds"). The simulator's own random draws take
	// the same seed.
	SeedOffset uint64
	// Arrivals, when set, makes the run open-loop: sessions arrive by this
	// process (workload.Arrivals, seeded with the run's workload seed) and
	// Users only labels the run; the sessions in progress are the run's
	// outcome (Evaluation.Sessions).
	Arrivals *workload.Arrivals
	// Autoscale, when set, runs a simulated deployment's replicas under a
	// scaling policy (sim.Autoscale); live runs refuse it.
	Autoscale *sim.Autoscale
}

// arrivals is load's arrival process with the run's seed: repeats with
// another seed offset draw other arrival times.
func (e *Evaluator) arrivals(load Load) *workload.Arrivals {
	if load.Arrivals == nil {
		return nil
	}
	a := *load.Arrivals
	a.Seed = e.setup.Workload.Seed + load.SeedOffset
	return &a
}

// Outputs are optional writers for one evaluation's raw data.
type Outputs struct {
	// Records receives every request as a JSON line.
	Records io.Writer
	// Sink, when set, receives every record too (simulated runs): an
	// analysis that reads the records as they come, such as a day's
	// attainment (result.Attainment).
	Sink result.Sink
	// Telemetry receives every scrape as a JSON line (live engines only).
	Telemetry io.Writer
	// Progress, when set, receives the live client's counters about once a
	// second while a run over HTTP goes on.
	Progress func(loadgen.Progress)
}

// Evaluation is one configuration measured at one load.
type Evaluation struct {
	Users  int            `json:"users"`
	Params map[string]any `json:"params"`
	// Virtual is set when the run happened in the simulator's virtual time.
	Virtual bool `json:"virtual"`
	// Provenance says where the numbers come from.
	Provenance Provenance         `json:"provenance"`
	Summary    *result.Result     `json:"summary"`
	Verdict    result.Verdict     `json:"-"`
	Pass       bool               `json:"pass"`
	Failed     string             `json:"failed_clause,omitempty"`
	Signals    *telemetry.Signals `json:"telemetry,omitempty"`
	// NoServerMetrics says why a live run read none of the server's own
	// metrics (Telemetry.NoServerMetrics): its engine signals are
	// unmeasured, not zero.
	NoServerMetrics string `json:"no_server_metrics,omitempty"`
	// Sim describes the simulated deployment (virtual runs only).
	Sim *SimInfo `json:"sim,omitempty"`
	// Wall is how long the evaluation took on this machine.
	Wall time.Duration `json:"wall_ns"`
	// Interrupted is set on the partial evaluation returned with ctx's
	// error when a live run was stopped (Ctrl-C); Scheduled counts the
	// requests it had scheduled.
	Interrupted bool  `json:"interrupted,omitempty"`
	Scheduled   int64 `json:"scheduled,omitempty"`
	// Sessions is an open-loop run's sessions: how many arrived and how
	// many were in progress at once (nil for closed-loop users).
	Sessions *workload.SessionStats `json:"sessions,omitempty"`
	// Scale is an autoscaled simulated run's fleet over time.
	Scale *sim.ScaleStats `json:"scale,omitempty"`
	// WarmCache says why the run started with the prefix cache an earlier
	// run on the same server left (the server refused the reset): its
	// prompts hit that run's cached prefixes, so TTFT and throughput may
	// read better than from a cold start. Empty: a cold start (a new
	// server, or a reset that succeeded).
	WarmCache string `json:"warm_cache,omitempty"`
}

// SimInfo is what the simulator knows that a real server would not say.
type SimInfo struct {
	Replicas       int     `json:"replicas"`
	KVTokens       int     `json:"kv_tokens_per_replica"`
	MeanKVUsage    float64 `json:"mean_kv_cache_usage"`
	PeakKVUsage    float64 `json:"peak_kv_cache_usage"`
	MeanSMActive   float64 `json:"mean_sm_active"`
	PrefixHitRate  float64 `json:"prefix_cache_hit_rate"`
	Preemptions    int64   `json:"preemptions"`
	AttentionShare float64 `json:"attention_share"`
	MoEShare       float64 `json:"moe_share"`
	DenseShare     float64 `json:"dense_gemm_share"`
	CommShare      float64 `json:"communication_share"`
	OverheadShare  float64 `json:"overhead_share"`
	OtherShare     float64 `json:"other_share"`
	// Engine sums the replicas' counters (steps, preemptions, prefix
	// queries and hits) over the whole run.
	Engine sim.EngineStats `json:"engine"`
	Series *sim.Series     `json:"-"`
}

// Repeat reduces an evaluation to what the sweep needs.
func (ev *Evaluation) Repeat() Repeat {
	r := Repeat{Pass: ev.Pass, Insufficient: ev.Verdict.Outcome() == result.VerdictInsufficient,
		FewSamplesPass: ev.Verdict.FewSamplesPass(), FailedClause: ev.Failed, Detail: ev}
	if ev.Summary != nil {
		o := ev.Summary.Overall
		r.OutputThroughput = o.OutputTokensPerSecond
		r.TTFTP95 = o.TTFT.P95 / 1000
		r.ITLP95 = o.ITL.P95 / 1000
		if c := ev.Summary.Client; c.Bound {
			// the load generator fell behind its schedule: the run measured
			// the client as well as the server, so it is judged neither
			// way (issue 30, item 7) — a walk does not go above it, and the
			// level says why it was not judged
			r.Pass, r.Insufficient, r.FewSamplesPass = false, true, false
			r.FailedClause = ClientBoundClause(c)
		}
	}
	return r
}

// ClientBoundClause is the unjudged reason of a client-bound run.
func ClientBoundClause(c result.ClientReport) string {
	why := fmt.Sprintf("dispatch lag p99 %.0f ms over %.0f ms", c.DispatchLagP99Ms, c.LagLimitMs)
	if len(c.Reasons) > 0 {
		why = strings.Join(c.Reasons, "; ")
	}
	return "client-bound (" + why + "): the load generator, not the server, limited the run"
}

// Evaluator runs one configuration at one load on the configured engine:
// a virtual Setup (Setup.Virtual) runs it in the simulator's virtual time
// (virtual.go), any other serves it over HTTP (live.go). Live servers are
// reused (servers.go): a server is started once per distinct flag set and
// kept while evaluations ask for the same flags (its prefix cache reset
// between runs), restarted only when the flags change or it died. Close
// stops the last one.
type Evaluator struct {
	setup    Setup
	gen      workload.Workload
	launcher engine.Launcher
	// virtual is the simulator of a Setup that evaluates in virtual time
	// (Setup.Virtual); nil evaluates on servers.
	virtual engine.Virtual
	// seeded holds the workloads of other seeds (Load.SeedOffset > 0),
	// built on first use.
	seedMu sync.Mutex
	seeded map[uint64]workload.Workload
	logger *slog.Logger

	// mu serialises live evaluations: a launcher runs one server at a time.
	mu      sync.Mutex
	cur     engine.Server
	curKey  string
	curFrom time.Time
	// curVersion is what the current server said on GET /version.
	curVersion string
	usage      EngineUsage
	// warnedReset is set once a server said it cannot reset its cache;
	// curWarm is why the current server's next run starts warm ("" when it
	// starts cold).
	warnedReset bool
	curWarm     string
	// dry counts what virtual evaluations would cost live (dryrun.go).
	dry dryCount
	// watch, when set, receives every live evaluation's status (WatchRuns).
	watch atomic.Pointer[func(RunStatus)]
	// parent is the Evaluator this one was forked from (a parallel
	// study's worker): Close adds this one's engine usage to it.
	parent *Evaluator
}

// ErrNoEngine is a programming error: an Evaluator needs the launcher the
// configuration names; spoc never substitutes the simulator for it.
var ErrNoEngine = errors.New("evaluator: no engine launcher given")

// NewEvaluator builds the workload of s once. s.Launcher is the engine
// every evaluation runs on; nil is an error (ErrNoEngine), and so is a
// virtual Setup whose launcher is not the simulator.
func NewEvaluator(s Setup, logger *slog.Logger) (*Evaluator, error) {
	if s.Launcher == nil {
		return nil, ErrNoEngine
	}
	var virtual engine.Virtual
	if s.Virtual {
		v, ok := s.Launcher.(engine.Virtual)
		if !ok {
			return nil, fmt.Errorf("%w: a virtual Setup needs the simulator's launcher, not %T", ErrNoEngine, s.Launcher)
		}
		virtual = v
	}
	gen, err := workload.OpenForRun(s.Workload, s.Deployment.MaxModelLen, s.MidSessionStart)
	if err != nil {
		return nil, fmt.Errorf("build workload: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{setup: s, gen: gen, launcher: s.Launcher, virtual: virtual, logger: logger}, nil
}

// Workload is the session source shared by every evaluation.
func (e *Evaluator) Workload() workload.Workload { return e.gen }

// workloadSpecFor is what workloadFor opens for load: the spec with its
// seed offset and whether users start mid-session (what a client shard
// rebuilds the same workload from).
func (e *Evaluator) workloadSpecFor(load Load) (spec workload.Spec, midSession bool) {
	spec = e.setup.Workload
	spec.Seed += load.SeedOffset
	fresh := load.Arrivals != nil && e.setup.MidSessionStart
	return spec, e.setup.MidSessionStart && !fresh
}

// workloadFor is the workload of load's run: workload.seed + its seed
// offset, and for an open-loop run (Arrivals) without mid-session starts,
// since an arriving session begins at its first turn.
func (e *Evaluator) workloadFor(load Load) (workload.Workload, error) {
	offset := load.SeedOffset
	fresh := load.Arrivals != nil && e.setup.MidSessionStart
	if offset == 0 && !fresh {
		return e.gen, nil
	}
	key := offset
	if fresh {
		key |= 1 << 63
	}
	e.seedMu.Lock()
	defer e.seedMu.Unlock()
	if w, ok := e.seeded[key]; ok {
		return w, nil
	}
	spec := e.setup.Workload
	spec.Seed += offset
	w, err := workload.OpenForRun(spec, e.setup.Deployment.MaxModelLen, e.setup.MidSessionStart && !fresh)
	if err != nil {
		return nil, fmt.Errorf("build workload with seed %d: %w", spec.Seed, err)
	}
	if e.seeded == nil {
		e.seeded = map[uint64]workload.Workload{}
	}
	e.seeded[key] = w
	return w, nil
}

// Setup is the resolved configuration the evaluator was built with.
func (e *Evaluator) Setup() Setup { return e.setup }

// Launcher is the engine every evaluation runs on.
func (e *Evaluator) Launcher() engine.Launcher { return e.launcher }

// Virtual reports whether evaluations run in the simulator's virtual time.
func (e *Evaluator) Virtual() bool { return e.virtual != nil }

// Evaluate runs params at load and judges the run against the SLA. An
// engine configuration that cannot run (weights or KV cache do not fit, the
// server crashes or runs out of memory) returns an error wrapping
// search.ErrInfeasible.
func (e *Evaluator) Evaluate(ctx context.Context, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	if load.Users < 1 && load.Arrivals == nil {
		return nil, fmt.Errorf("evaluate: users must be at least 1, got %d", load.Users)
	}
	start := time.Now()
	var ev *Evaluation
	var err error
	if e.virtual != nil {
		var dep sim.Deployment
		if dep, err = e.virtual.VirtualDeployment(engine.Params(params)); err == nil {
			e.dry.add(params, load)
			ev, err = e.evaluateVirtual(ctx, dep, params, load, out)
		}
	} else {
		ev, err = e.evaluateLive(ctx, params, load, out)
	}
	if err != nil && ev != nil && ev.Interrupted {
		// what was measured before Ctrl-C travels with the error (spoc
		// run prints it); it is no verdict
		ev.Wall = time.Since(start)
		return ev, err
	}
	if err != nil {
		// the one place an engine failure caused by the flags becomes
		// search's infeasible: a study records the trial INFEASIBLE and a
		// sweep skips the candidate
		if errors.Is(err, engine.ErrInfeasible) && !errors.Is(err, search.ErrInfeasible) {
			err = fmt.Errorf("%w: %w", search.ErrInfeasible, err)
		}
		return nil, err
	}
	ev.Wall = time.Since(start)
	return ev, nil
}

// provenance is where an evaluation's numbers come from; endpoint is the
// live server's (empty for virtual runs).
func (e *Evaluator) provenance(endpoint string) Provenance {
	p := launcherProvenance(e.launcher, e.Virtual())
	p.Endpoint = endpoint
	if endpoint != "" {
		p.Version = e.curVersion
	}
	return p
}

// Deployment is the simulated deployment of params: the simulator
// launcher's, or, for a real engine, the configuration priced by the cost
// model (for roofline predictions).
func (e *Evaluator) Deployment(params map[string]any) (sim.Deployment, error) {
	if e.virtual != nil {
		return e.virtual.VirtualDeployment(engine.Params(params))
	}
	if err := e.setup.Deployment.SimErr; err != nil {
		return sim.Deployment{}, err
	}
	dep := e.setup.Deployment.Sim // a copy: the Setup's stays as resolved
	err := dep.ApplyParams(params)
	return dep, err
}

// IsInfeasible reports whether err means the configuration cannot run.
func IsInfeasible(err error) bool { return errors.Is(err, search.ErrInfeasible) }

// phase is the random phase each user starts at within the ramp: one
// typical think time of the workload at the run's scale (docs/capacity.md,
// "Users out of step"), so that constant think times and a short ramp do
// not keep every user in step. A phase longer than the ramp extends the
// start-up to it, so it is at most half the warm-up: the last users start
// well before the measured window (the settling check would otherwise
// find it still filling). Both executors apply it the same way.
func (e *Evaluator) phase(load Load) time.Duration {
	scale := load.ThinkTimeScale
	if scale == 0 {
		return 0
	}
	think := time.Duration(float64(e.setup.Workload.TypicalThinkTime()) * scale)
	return max(min(think, load.Warmup/2), 0)
}

// phaseSeed draws each user's phase from the run's workload seed.
func (e *Evaluator) phaseSeed(load Load) uint64 { return e.setup.Workload.Seed + load.SeedOffset }

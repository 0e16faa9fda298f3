package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/report"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
	"github.com/spoc-project/spoc/workload"
)

// PlanOptions configure Plan.
type PlanOptions struct {
	// OutDir receives summary.json, report.html, summary.md, the study, the
	// sweep's records and the telemetry at the ceiling.
	OutDir string
	// Quick is a smoke run: fewer trials, shorter windows.
	Quick bool
	// Compare sweeps the chosen configuration on every engine.compare target
	// (4× H100 and 2× H200 when none are configured).
	Compare bool
	// Engine runs the trials; nil is the simulator in virtual time.
	Engine engine.Engine
	// Progress receives one line per step of every phase.
	Progress io.Writer
	Logger   *slog.Logger
	// Version is recorded in the summary.
	Version string
	// Render writes the report files from the summary; nil writes only
	// summary.json.
	Render func(dir string, d *report.Data) error
}

// Quick settings: enough to exercise every phase in under half a minute.
const (
	quickTrials     = 12
	quickPopulation = 6
)

// ApplyQuick shortens cfg in place for a smoke run.
func ApplyQuick(cfg *config.Config) {
	cfg.Search.Trials = min(cfg.Search.Trials, quickTrials)
	cfg.Search.Population = min(cfg.Search.Population, quickPopulation)
	// Windows stay long enough for the cold prefill burst of mid-session
	// starts (every user's history is uncached on its first request) to
	// drain before measuring; in virtual time they cost little.
	cfg.Search.Warmup = config.Duration(90 * time.Second)
	cfg.Search.Duration = config.Duration(2 * time.Minute)
	cfg.Run.Ramp = config.Duration(60 * time.Second)
	cfg.Run.Warmup = config.Duration(90 * time.Second)
	cfg.Run.Duration = config.Duration(3 * time.Minute)
	cfg.Sweep.Duration, cfg.Sweep.Warmup = 0, 0
	cfg.Sweep.TopK = min(cfg.Sweep.TopK, 2)
	cfg.Sweep.ResolutionUsers = max(cfg.Sweep.ResolutionUsers, 10)
	cfg.Sweep.ResolutionFraction = max(cfg.Sweep.ResolutionFraction, 0.05)
}

// SweepLoad is the load of one sweep level: the sweep's windows, or run's.
func SweepLoad(cfg *config.Config, users int) Load {
	l := RunLoad(cfg, users)
	if cfg.Sweep.Duration > 0 {
		l.Duration = cfg.Sweep.Duration.D()
	}
	if cfg.Sweep.Warmup > 0 {
		l.Warmup = cfg.Sweep.Warmup.D()
	}
	l.Ramp = min(l.Ramp, l.Warmup)
	return l
}

// SweepConfig sweeps params to the capacity ceiling. Level evaluations are
// passed to keep (for records and telemetry) as they finish.
func SweepConfig(ctx context.Context, ev *Evaluator, params map[string]any, load func(users int) Load, opts SweepOptions, records func(users int) (io.WriteCloser, error)) (*SweepResult, error) {
	return Sweep(ctx, func(ctx context.Context, users, repeat int) (Repeat, error) {
		var out Outputs
		var w io.WriteCloser
		if records != nil && repeat == 0 {
			var err error
			if w, err = records(users); err != nil {
				return Repeat{}, err
			}
			out.Records = w
		}
		r, err := ev.Evaluate(ctx, params, load(users), out)
		if w != nil {
			if a, ok := w.(interface{ Abort() }); ok && err != nil {
				a.Abort() // an interrupted level leaves no records file
			} else if cerr := w.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
		if err != nil {
			return Repeat{}, err
		}
		return r.Repeat(), nil
	}, opts)
}

// SweepOptionsFrom reads the sweep section.
func SweepOptionsFrom(cfg *config.Config) SweepOptions {
	return SweepOptions{Grid: cfg.Sweep.Users, Start: cfg.Sweep.Start, Max: cfg.Sweep.Max,
		ResolutionUsers: cfg.Sweep.ResolutionUsers, ResolutionFraction: cfg.Sweep.ResolutionFraction, Repeats: cfg.Sweep.Repeats}
}

// planner carries one Plan's state.
type planner struct {
	cfg  *config.Config
	o    PlanOptions
	ev   *Evaluator
	data *report.Data
	// baseline is the configured engine flags' short sweep.
	baseline *SweepResult
}

func (p *planner) logf(format string, args ...any) {
	if p.o.Progress != nil {
		fmt.Fprintf(p.o.Progress, format+"\n", args...)
	}
}

func (p *planner) phase(name string, fn func() (string, error)) error {
	p.logf("== %s", name)
	start := time.Now()
	detail, err := fn()
	secs := time.Since(start).Seconds()
	p.data.Phases = append(p.data.Phases, report.Phase{Name: name, Seconds: secs, Detail: detail})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p.logf("   %s done in %.1fs%s", name, secs, ifNotEmpty(": ", detail))
	return nil
}

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// Plan runs the whole methodology: inspect the workload, tune the engine
// flags, choose a configuration from the Pareto front by short sweeps, sweep
// it to the capacity ceiling, analyse a trace when one is configured, compare
// hardware when asked, and write the summary and report into OutDir. The
// returned data is also written as OutDir/summary.json (atomically).
func Plan(ctx context.Context, cfg *config.Config, o PlanOptions) (*report.Data, error) {
	if o.OutDir == "" {
		return nil, errors.New("plan: no output folder")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Quick {
		ApplyQuick(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkInputs(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	ev, err := NewEvaluator(cfg, o.Engine, o.Logger)
	if err != nil {
		return nil, err
	}
	p := &planner{cfg: cfg, o: o, ev: ev, data: &report.Data{
		Title: cfg.Report.Title, Generated: time.Now().UTC(), SpocVersion: o.Version, Quick: o.Quick,
		Engine: report.Engine{Kind: cfg.Engine.Kind, Model: cfg.Engine.Model, GPU: cfg.Engine.GPU, GPUs: cfg.Engine.GPUs,
			TensorParallelSize: cfg.Engine.TensorParallelSize, WeightFormat: cfg.Engine.WeightFormat, MaxModelLen: cfg.Engine.MaxModelLen},
		SLA: cfg.SLA.Result(),
	}}
	for _, a := range config.Assumptions(cfg) {
		p.data.Assumptions = append(p.data.Assumptions, report.Assumption{Field: a.Path, Value: a.Value, Note: a.Note})
	}
	if cfg.Engine.Kind == config.EngineSim {
		p.data.Engine.Calibration = simCalibration(cfg)
	}
	steps := []struct {
		name string
		fn   func(context.Context) (string, error)
	}{
		{"workload", p.inspect},
		{"baseline", p.baselineSweep},
		{"tune", p.tune},
		{"choose", p.choose},
		{"sweep", p.sweep},
		{"trace", p.trace},
		{"compare", p.compare},
	}
	for _, s := range steps {
		if err := p.phase(s.name, func() (string, error) { return s.fn(ctx) }); err != nil {
			// keep what was found so far readable, then report the error
			_ = p.write()
			return p.data, err
		}
	}
	if err := p.write(); err != nil {
		return p.data, err
	}
	return p.data, nil
}

// checkInputs fails before the first phase when a file the plan reads in a
// later phase is missing, rather than after minutes of tuning.
func checkInputs(cfg *config.Config) error {
	errs := &config.Errors{}
	for _, f := range []struct{ field, path string }{
		{"trace.file", cfg.Trace.File}, {"trace.rules", cfg.Trace.Rules},
		{"engine.sim.calibration", cfg.Engine.Sim.Calibration}, {"engine.gpu_catalog", cfg.Engine.GPUCatalog},
		{"workload.corpus", cfg.Workload.Corpus},
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

func (p *planner) inspect(ctx context.Context) (string, error) {
	n := 2000
	if p.o.Quick {
		n = 500
	}
	// Inspect the workload as generated: mid-session starts would show
	// joined sessions' contexts as start contexts.
	src, err := workload.Open(p.cfg.Workload, p.cfg.Engine.MaxModelLen)
	if err != nil {
		return "", err
	}
	insp, err := workload.Inspect(ctx, src, workload.InspectOptions{Sessions: n, Seed: p.cfg.Workload.Seed})
	if err != nil {
		return "", err
	}
	p.data.Workload = insp
	parts := make([]string, 0, len(insp.Profiles))
	for _, pr := range insp.Profiles {
		parts = append(parts, fmt.Sprintf("%s %.0f%% start p50 %d", pr.Name, 100*pr.Share, pr.ContextStartP50))
	}
	return fmt.Sprintf("%d sessions; %s; ideal prefix-cache hit rate %.1f%%", insp.Sessions, strings.Join(parts, ", "), 100*insp.Prefix.IdealHitRate), nil
}

func (p *planner) tune(ctx context.Context) (string, error) {
	cfg := p.cfg
	cfg.Search.Storage = cfg.Search.StorageIn(p.o.OutDir)
	eng := p.o.Engine
	if eng == nil {
		var err error
		eng, err = engine.FromConfig(cfg.Engine, engine.Options{NamePrefix: "spoc-" + cfg.Search.Study, Logger: p.o.Logger})
		if err != nil {
			return "", err
		}
	}
	p.logf("   study %q in %s: %d trials of %d users, %s each", cfg.Search.Study, cfg.Search.Storage, cfg.Search.Trials, cfg.Search.Users, cfg.Search.Duration)
	res, err := tune.Run(ctx, TuneSpec(cfg), tune.Options{
		Engine: eng, Evaluate: p.ev.TuneEvaluator(), Capacity: p.ev.CapacityFunc(), Logger: p.o.Logger,
		Progress: func(pr tune.Progress) {
			if p.o.Progress != nil {
				fmt.Fprint(p.o.Progress, "   ")
				_ = tune.WriteProgress(p.o.Progress, pr)
			}
		},
	})
	if err != nil {
		return "", err
	}
	p.data.Search = searchSection(cfg, res)
	p.data.Trials = len(res.Trials)
	for _, m := range p.data.Search.Trials {
		if m.OnFront {
			p.data.Pareto = append(p.data.Pareto, m)
		}
	}
	return fmt.Sprintf("%d trials (%d complete, %d infeasible, %d failed), %d on the feasible front",
		len(res.Trials), p.data.Search.Complete, p.data.Search.Infeasible, p.data.Search.Failed, len(p.data.Pareto)), nil
}

// shortOptions are the sweep options of candidates' short sweeps: one
// repeat at the sweep's resolution. A coarser one (10 users) tied every
// candidate with the baseline on the reference case, hiding a tuned
// configuration whose full sweep served 168 users against the baseline's 156
// (measured before the simulator modelled async scheduling's lookahead).
func (p *planner) shortOptions() SweepOptions { return shortOptions(p.cfg) }

func shortOptions(cfg *config.Config) SweepOptions {
	opts := SweepOptionsFrom(cfg)
	opts.Repeats = 1
	return opts
}

// BaselineSweep is the short sweep of the configured engine flags: the
// tuning windows, one repeat, the sweep's resolution. Its ceiling is
// the study's load when search.users is 0 (auto).
func BaselineSweep(ctx context.Context, ev *Evaluator) (*SweepResult, error) {
	cfg := ev.Config()
	return SweepConfig(ctx, ev, map[string]any{}, func(users int) Load {
		l := TuneLoad(cfg)
		l.Users = users
		return l
	}, shortOptions(cfg), nil)
}

// baselineSweep gives the configured engine flags a short sweep. Its
// ceiling is the baseline every tuned candidate must beat and, when
// search.users is 0 (auto), the load the study tunes at: there the SLA
// binds, so the front separates configurations that serve more users from
// those that serve fewer.
func (p *planner) baselineSweep(ctx context.Context) (string, error) {
	res, err := BaselineSweep(ctx, p.ev)
	if err != nil {
		return "", err
	}
	p.baseline = res
	msg := fmt.Sprintf("engine.params ceiling %d users (short windows)", res.Ceiling)
	if p.cfg.Search.Users == 0 {
		p.cfg.Search.Users = max(res.Ceiling, 1)
		msg += fmt.Sprintf("; the study tunes at %d users", p.cfg.Search.Users)
	}
	return msg, nil
}

// shortLoad is the load of a candidate's short sweep: the tuning windows.
func (p *planner) shortLoad(users int) Load {
	l := TuneLoad(p.cfg)
	l.Users = users
	return l
}

func (p *planner) choose(ctx context.Context) (string, error) {
	cfg := p.cfg
	type cand struct {
		trial  int
		params map[string]any
		tput   float64
	}
	var cands []cand
	for _, m := range p.data.Pareto {
		c := cand{trial: m.Number, params: m.Params}
		if len(m.Values) > 0 {
			c.tput = m.Values[0]
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].tput > cands[j].tput })
	if len(cands) > cfg.Sweep.TopK {
		cands = cands[:cfg.Sweep.TopK]
	}
	// The configured engine flags are always a candidate, and the first, so
	// that a tuned configuration must beat them (a tie keeps the flags the
	// user already runs); their short sweep is the baseline phase's.
	cands = append([]cand{{trial: -1, params: map[string]any{}}}, cands...)
	best, bestTput := -1, 0.0
	var ran []map[string]any // params of each entry of p.data.Candidates
	for _, c := range cands {
		res, err := p.baseline, error(nil)
		if c.trial >= 0 || res == nil {
			res, err = SweepConfig(ctx, p.ev, c.params, p.shortLoad, p.shortOptions(), nil)
		}
		if err != nil {
			if IsInfeasible(err) {
				p.logf("   candidate %s: infeasible: %v", trialName(c.trial), err)
				continue
			}
			return "", err
		}
		rc := report.Candidate{Trial: c.trial, Params: withBase(cfg, c.params), Ceiling: res.Ceiling, FailedClause: res.FailedClause}
		p.data.Candidates = append(p.data.Candidates, rc)
		ran = append(ran, c.params)
		p.logf("   candidate %s: ceiling %d users (%s)", trialName(c.trial), res.Ceiling, describeParams(c.params))
		tput := ceilingThroughput(res)
		if best < 0 || better(cfg.Sweep.Choose, rc, p.data.Candidates[best], tput, bestTput) {
			best, bestTput = len(p.data.Candidates)-1, tput
		}
	}
	if best < 0 {
		return "", errors.New("no candidate configuration could run")
	}
	how := fmt.Sprintf("short-sweep ceiling %d users", p.data.Candidates[best].Ceiling)
	if tied := tiedAtTop(cfg.Sweep.Choose, p.data.Candidates); len(tied) > 1 {
		if cfg.Engine.Kind != config.EngineSim {
			// Full sweeps of every tied candidate on a real deployment
			// would multiply the plan's hours; say so instead.
			names := make([]string, 0, len(tied))
			for _, i := range tied {
				names = append(names, trialName(p.data.Candidates[i].Trial))
			}
			p.logf("   %d candidates tied at %d users on the short sweep (%s); keeping %s — compare them with full sweeps: spoc sweep --trial N",
				len(tied), p.data.Candidates[best].Ceiling, strings.Join(names, ", "), trialName(p.data.Candidates[best].Trial))
		} else {
			w, err := breakTie(p.data.Candidates, tied, func(i int) (int, string, error) {
				res, err := SweepConfig(ctx, p.ev, ran[i], func(u int) Load { return SweepLoad(cfg, u) }, SweepOptionsFrom(cfg), nil)
				if err != nil {
					return 0, "", err
				}
				p.logf("   tie-break: %s: full-sweep ceiling %d users", trialName(p.data.Candidates[i].Trial), res.Ceiling)
				return res.Ceiling, res.FailedClause, nil
			})
			if err != nil {
				return "", err
			}
			best = w
			how = fmt.Sprintf("%d candidates tied at %d users on the short sweep; full-sweep ceiling %d users",
				len(tied), p.data.Candidates[best].Ceiling, p.data.Candidates[best].FullCeiling)
		}
	}
	p.data.Candidates[best].Chosen = true
	ch := p.data.Candidates[best]
	p.data.Capacity.Config = ch.Params
	p.data.Capacity.ChosenTrial = ch.Trial
	p.data.Capacity.ChosenBy = cfg.Sweep.Choose
	return fmt.Sprintf("chose %s (%s)", trialName(ch.Trial), how), nil
}

// tiedAtTop returns the candidates sharing the highest short-sweep ceiling
// under the highest-ceiling rule (none under max-throughput, whose measure
// rarely ties), in candidate order.
func tiedAtTop(rule string, cands []report.Candidate) []int {
	if rule == "max-throughput" || len(cands) == 0 {
		return nil
	}
	top := cands[0].Ceiling
	for _, c := range cands {
		top = max(top, c.Ceiling)
	}
	var tied []int
	for i, c := range cands {
		if c.Ceiling == top {
			tied = append(tied, i)
		}
	}
	return tied
}

// breakTie separates candidates tied on their short sweeps by full sweeps
// (the sweep's own windows, which short tuning windows cannot replace: on
// the reference case four candidates tied at 175 users short, and their
// full sweeps gave 156, 162, 159 and 159). It records each full-sweep
// ceiling and returns the winner; a tie again keeps the earlier candidate
// (the baseline first). A candidate whose full sweep is infeasible drops
// out; when all do, that is an error.
func breakTie(cands []report.Candidate, tied []int, full func(i int) (ceiling int, failed string, err error)) (int, error) {
	best := -1
	for _, i := range tied {
		ceiling, failed, err := full(i)
		if err != nil {
			if IsInfeasible(err) {
				continue
			}
			return -1, err
		}
		cands[i].FullCeiling, cands[i].FullFailedClause = ceiling, failed
		if best < 0 || ceiling > cands[best].FullCeiling {
			best = i
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("every candidate tied at %d users on the short sweep was infeasible in its full sweep", cands[tied[0]].Ceiling)
	}
	return best, nil
}

// better reports whether a beats b under the choice rule; ties on the
// ceiling go to the earlier candidate (the baseline, then higher study
// throughput).
func better(rule string, a, b report.Candidate, aTput, bTput float64) bool {
	if rule == "max-throughput" {
		return aTput > bTput
	}
	return a.Ceiling > b.Ceiling
}

// ceilingThroughput is the output throughput a sweep measured at its
// ceiling: the most tokens/s the configuration served within the SLA.
func ceilingThroughput(res *SweepResult) float64 {
	for _, l := range res.Levels {
		if l.Users == res.Ceiling {
			return meanThroughput(l)
		}
	}
	return 0
}

func trialName(n int) string {
	if n < 0 {
		return "engine.params (baseline)"
	}
	return fmt.Sprintf("trial #%d", n)
}

func describeParams(m map[string]any) string {
	if len(m) == 0 {
		return "configured flags"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

// withBase is params over the configured engine flags: the full
// configuration a user would deploy.
func withBase(cfg *config.Config, params map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range cfg.Engine.Params {
		out[k] = v
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}

func (p *planner) sweep(ctx context.Context) (string, error) {
	cfg := p.cfg
	params := p.data.Capacity.Config
	recDir := filepath.Join(p.o.OutDir, "records")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return "", err
	}
	levels := map[int]*Evaluation{}
	opts := SweepOptionsFrom(cfg)
	opts.Progress = func(l Level, phase string) {
		r := l.Repeats[0]
		verdict := "pass"
		if !l.Pass {
			verdict = "FAIL " + l.FailedClause
		}
		p.logf("   %-6s %5d users: %7.0f tok/s  TTFT p95 %6.0f ms  ITL p95 %5.1f ms  %s", phase, l.Users, r.OutputThroughput, r.TTFTP95*1000, r.ITLP95*1000, verdict)
		if ev, ok := r.Detail.(*Evaluation); ok {
			levels[l.Users] = ev
		}
	}
	res, err := SweepConfig(ctx, p.ev, params, func(u int) Load { return SweepLoad(cfg, u) }, opts, func(users int) (io.WriteCloser, error) {
		return CreateAtomic(filepath.Join(recDir, fmt.Sprintf("users-%05d.jsonl", users)))
	})
	if err != nil {
		return "", err
	}
	c := &p.data.Capacity
	c.Users, c.FirstFailingUsers, c.FailedClause = res.Ceiling, res.FirstFailing, res.FailedClause
	c.ResolutionUsers, c.KneeUsers, c.Repeats, c.ThroughputSpread = res.Resolution, res.Knee, opts.Repeats, res.Spread
	c.UsersPerGPU = float64(res.Ceiling) / float64(cfg.Engine.GPUs)
	c.ServeCommand = serveCommand(cfg, c.Config)
	for _, l := range res.Levels {
		ev := levels[l.Users]
		if ev == nil {
			continue
		}
		p.data.Sweep = append(p.data.Sweep, sweepPoint(l, ev))
	}
	if ev := levels[res.Ceiling]; ev != nil {
		p.data.Telemetry = ev.Signals
		p.data.Client = report.Client{Virtual: ev.Virtual, DispatchLagP99Ms: ev.Summary.Client.DispatchLagP99Ms,
			ClientBound: ev.Summary.Client.Bound, Reasons: ev.Summary.Client.Reasons}
	}
	if res.Ceiling == 0 {
		p.data.Notes = append(p.data.Notes, fmt.Sprintf("No user count met the SLA: even %d users failed (%s).", res.FirstFailing, res.FailedClause))
	}
	if res.FirstFailing == 0 {
		p.data.Notes = append(p.data.Notes, fmt.Sprintf("Every user count up to sweep.max = %d met the SLA; the ceiling is at least that.", cfg.Sweep.Max))
	}
	return fmt.Sprintf("capacity ceiling %d users (first failing %d: %s)", res.Ceiling, res.FirstFailing, res.FailedClause), nil
}

func sweepPoint(l Level, ev *Evaluation) report.SweepPoint {
	o := ev.Summary.Overall
	sp := report.SweepPoint{Users: l.Users, Pass: l.Pass, FailedClause: l.FailedClause, Requests: o.Requests, ErrorRate: o.ErrorRate,
		OutputThroughput: o.OutputTokensPerSecond, TotalThroughput: o.TotalTokensPerSecond,
		TTFTP50Ms: o.TTFT.P50, TTFTP95Ms: o.TTFT.P95, ITLP95Ms: o.ITL.P95, TPOTP95Ms: o.TPOT.P95, DispatchLagP99Ms: ev.Summary.Client.DispatchLagP99Ms}
	for _, pr := range ev.Summary.Profiles {
		sp.Profiles = append(sp.Profiles, report.ProfilePoint{Name: pr.Name, Requests: pr.Requests, TTFTP95Ms: pr.TTFT.P95, ITLP95Ms: pr.ITL.P95, OutputThroughput: pr.OutputTokensPerSecond})
	}
	if s := ev.Signals; s != nil {
		sp.KVCacheUsageMean, sp.KVCacheUsageMax = s.Engine.KVCacheUsage.Mean, s.Engine.KVCacheUsage.Max
		sp.PrefixCacheHitRate, sp.WaitingMean, sp.Preemptions = s.Engine.PrefixCacheHitRate, s.Engine.Waiting.Mean, s.Engine.Preemptions
		var sm float64
		for _, g := range s.GPUs {
			sm += g.SMActive.Mean
		}
		if len(s.GPUs) > 0 {
			sp.SMActiveMean = sm / float64(len(s.GPUs))
		}
	}
	return sp
}

// serveCommand renders the chosen configuration as a vllm serve command.
func serveCommand(cfg *config.Config, params map[string]any) string {
	model := cfg.Engine.ServedModelName
	if model == "" {
		model = cfg.Engine.Model
		if model == "gpt-oss-120b" || model == "gpt-oss-20b" {
			model = "openai/" + model
		}
	}
	args := []string{"vllm", "serve", model, "--tensor-parallel-size", fmt.Sprint(cfg.Engine.TensorParallelSize)}
	if dp := cfg.Engine.GPUs / max(cfg.Engine.TensorParallelSize, 1); dp > 1 {
		args = append(args, "--data-parallel-size", fmt.Sprint(dp))
	}
	args = append(args, "--max-model-len", fmt.Sprint(cfg.Engine.MaxModelLen))
	flags, err := engine.Flags(search.Params(params))
	if err == nil {
		args = append(args, flags...)
	}
	return strings.Join(args, " ")
}

func (p *planner) write() error {
	data, err := json.MarshalIndent(p.data, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(p.o.OutDir, "summary.json"), append(data, '\n')); err != nil {
		return err
	}
	if p.o.Render != nil {
		return p.o.Render(p.o.OutDir, p.data)
	}
	return nil
}

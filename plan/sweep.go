package plan

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/vllm"
)

// levels returns a sweep's progress callback: one counted step per level,
// at most opts.MaxLevels of them.
func (p *planner) levels(opts capacity.SweepOptions) func(capacity.Level, string) {
	done, most := 0, opts.MaxLevels()
	return func(l capacity.Level, phase string) {
		done++
		for i := range l.Repeats {
			p.stepf(done, max(most, done), true, "%s", capacity.LevelLine(phase, l, i))
		}
	}
}

// sweep sweeps the chosen configuration on ev to its capacity ceiling with
// the sweep's windows and repeats (opts: the sweep policy, or a multi plan's
// grid around its prediction), keeping each level's records in
// OutDir/records and the telemetry at the ceiling, then measures the
// ceiling's interval over sweep.seeds workload seeds.
func (p *planner) sweep(ctx context.Context, ev *capacity.Evaluator, opts capacity.SweepOptions) (string, error) {
	params := p.sum.Capacity.Config
	recDir := filepath.Join(p.s.OutDir, stagingRecords)
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return "", err
	}
	levels := map[int]*capacity.Evaluation{}
	opts.Progress = p.levels(opts)
	detail := opts.Progress
	opts.Progress = func(l capacity.Level, phase string) {
		detail(l, phase)
		if ev, ok := l.Repeats[0].Detail.(*capacity.Evaluation); ok {
			levels[l.Users] = ev
		}
	}
	opts.SeedProgress, opts.RunProgress = p.seedProgress, p.runProgress
	res, err := capacity.SweepConfig(ctx, ev, params, p.s.Windows.Sweep.At, opts, func(users int) (io.WriteCloser, error) {
		// compressed: the records of a default plan's sweep are ~80 MB as
		// plain lines and ~4 MB gzipped; every reader of records
		// (result.Reader, so spoc summarize) reads both forms
		f, err := atomicfile.Create(filepath.Join(recDir, fmt.Sprintf("users-%05d.jsonl%s", users, result.GzipSuffix)))
		if err != nil {
			return nil, err
		}
		return result.NewGzipFile(f), nil
	})
	if err != nil {
		return "", err
	}
	p.final = res
	c := &p.sum.Capacity
	c.Users, c.FirstFailingUsers, c.FailedClause = capacityUsers(res), res.FirstFailing, res.FailedClause
	c.Estimate, c.NoEstimate, c.Refinement = res.Estimate, res.NoEstimate, res.Refinement
	c.Runs, c.EngineSeconds = res.RunsMade, res.EngineSeconds
	if r := res.Refinement; r != nil && !r.Reached && res.Estimate != nil {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("The capacity's precision target (±%.0f %%) was not reached: %s after %d runs on fresh workload seeds, precision %s. Raise sweep.max_runs (or plan.budget) to measure it further.",
			100*r.Target, r.Stopped, r.Runs, PrecisionText(res.Estimate)))
	}
	if res.NoEstimate != "" && opts.Precision.Target > 0 {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("No capacity estimate: %s; the capacity stated is the walk's ceiling on workload.seed.", res.NoEstimate))
	}
	c.Ceiling, c.CeilingInterval, c.NoInterval, c.BindingMargin = res.Ceiling, res.Interval, res.NoInterval, res.Margin
	c.Unconfirmed, c.UnconfirmedUsers = res.Unconfirmed, res.UnconfirmedUsers
	if res.Unconfirmed {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Unconfirmed: %d users met the SLA on too few samples to be judged (a clause's percentile needs more requests in the window), so the walk's ceiling is the largest count judged on enough samples, %d. Lengthen sweep.duration (or run.duration) to judge the counts above it.", res.UnconfirmedUsers, res.Ceiling))
	}
	c.ResolutionUsers, c.KneeUsers, c.Repeats, c.ThroughputSpread = res.Resolution, res.Knee, opts.Repeats, res.Spread
	c.UsersPerGPU = float64(c.Users) / float64(p.s.Deployment.GPUs)
	c.Provenance = res.Provenance()
	c.ServeCommand, c.ServerFlags = p.serveCommand(ctx, c.Config)
	for _, l := range res.Levels {
		ev := levels[l.Users]
		if ev == nil {
			continue
		}
		p.sum.Sweep = append(p.sum.Sweep, sweepPoint(l, ev))
	}
	if note := settlingNote(res, levels); note != "" {
		p.sum.Notes = append(p.sum.Notes, note)
	}
	if ev := levels[res.Ceiling]; ev != nil && ev.Summary.Drift.Flagged {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Prompt drift at the ceiling: %s. The prompts the server measured differ from the workload's targets by more than %.0f %% on average, so the plan's contexts are not what ran (docs/loadgen.md, prompt drift).",
			strings.Join(ev.Summary.Drift.Reasons, "; "), 100*ev.Summary.Drift.Limit))
	}
	if ev := levels[res.Ceiling]; ev != nil && ev.NoServerMetrics != "" {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Telemetry: %s. spoc does not know what a generic server's metric names mean, so it read none: the sweep's KV-cache, prefix-hit and queue columns are unmeasured (–), not zero. Map the server's names by role in engine.generic.metrics (docs/engines.md) to read them.", noServerMetricsText(ev.NoServerMetrics)))
	}
	if ev := levels[res.Ceiling]; ev != nil {
		p.sum.Telemetry = ev.Signals
		p.sum.Client = Client{Virtual: ev.Virtual, DispatchLagP99Ms: ev.Summary.Client.DispatchLagP99Ms,
			ClientBound: ev.Summary.Client.Bound, Reasons: ev.Summary.Client.Reasons}
	}
	if res.Ceiling == 0 {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("No user count met the SLA: even %d users failed (%s).", res.FirstFailing, res.FailedClause))
	}
	if res.FirstFailing == 0 {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Every user count up to sweep.max = %d met the SLA; the ceiling is at least that.", p.s.Sweep.Max))
	}
	return fmt.Sprintf("capacity %s (walk: ceiling %d, first failing %d: %s)", capacityText(res), res.Ceiling, res.FirstFailing, res.FailedClause), nil
}

// noServerMetricsText is a reason as a sentence starts it.
func noServerMetricsText(reason string) string {
	if reason == "" {
		return ""
	}
	return strings.ToUpper(reason[:1]) + reason[1:]
}

// runProgress logs one refinement run and the estimate after it.
func (p *planner) runProgress(k capacity.KneeRun, est *capacity.CapacityEstimate) {
	verdict := "ok"
	switch {
	case k.Excluded != "":
		verdict = "left out: " + k.Excluded
	case !k.Pass:
		verdict = "✗"
	}
	line := fmt.Sprintf("   refine %5d users (workload seed +%d): %s", k.Users, k.Seed, verdict)
	if est != nil {
		line += "; estimate " + EstimateText(est)
	}
	p.logf("%s", line)
}

// settlingNote says which of the two levels that decide the ceiling (the
// ceiling and the first failing count) ran a window that was still
// settling, and what that means for the ceiling: "" when neither did.
func settlingNote(res *capacity.SweepResult, levels map[int]*capacity.Evaluation) string {
	var parts []string
	for _, l := range []struct {
		users int
		what  string
	}{{res.Ceiling, "the ceiling"}, {res.FirstFailing, "the first failing count"}} {
		if ev := levels[l.users]; l.users > 0 && ev != nil && ev.Summary.Settling.Flagged {
			st := ev.Summary.Settling
			parts = append(parts, fmt.Sprintf("%d users (%s): %d requests in the window's first half, %d in its second, mean TTFT %.0f ms then %.0f ms",
				l.users, l.what, st.FirstHalf.Requests, st.SecondHalf.Requests, st.FirstHalf.TTFTMeanMs, st.SecondHalf.TTFTMeanMs))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Still settling when the measured window opened: %s. A run's first half holding under %.0f %% of its second half's requests means the warm-up did not cover its start-up (an empty prefix cache, every user's first prompt a full prefill, users in step after the ramp), so that level's percentiles overstate the steady state's and the ceiling may be low. Lengthen sweep.warmup (or run.warmup) and run again.",
		strings.Join(parts, "; "), 100*result.SettlingRatio)
}

// seedProgress logs one interval seed's ceiling.
func (p *planner) seedProgress(sc capacity.SeedCeiling) {
	p.logf("   seed   %5d users: ceiling of workload seed +%d (first failing %d; %d levels)", sc.Ceiling, sc.Seed, sc.FirstFailing, sc.Runs)
}

func sweepPoint(l capacity.Level, ev *capacity.Evaluation) SweepPoint {
	o := ev.Summary.Overall
	sp := SweepPoint{Users: l.Users, Provenance: ev.Provenance, Pass: l.Pass, FailedClause: l.FailedClause, Requests: o.Requests, ErrorRate: o.ErrorRate,
		OutputThroughput: o.OutputTokensPerSecond, TotalThroughput: o.TotalTokensPerSecond,
		TTFTP50Ms: o.TTFT.P50, TTFTP95Ms: o.TTFT.P95, ITLP95Ms: o.ITL.P95, TPOTP95Ms: o.TPOT.P95, DispatchLagP99Ms: ev.Summary.Client.DispatchLagP99Ms}
	if st := ev.Summary.Settling; st.Flagged {
		sp.Settling, sp.SettlingRatio = true, st.Ratio
	}
	sp.WarmCache = ev.WarmCache
	if l.Insufficient {
		sp.Insufficient, sp.FewSamplesPass = true, l.FewSamplesPass
		for _, r := range l.Repeats {
			if r.Insufficient && r.FailedClause != "" {
				sp.UnjudgedClause = r.FailedClause
				break
			}
		}
	}
	for _, pr := range ev.Summary.Profiles {
		sp.Profiles = append(sp.Profiles, ProfilePoint{Name: pr.Name, Requests: pr.Requests, TTFTP95Ms: pr.TTFT.P95, ITLP95Ms: pr.ITL.P95, OutputThroughput: pr.OutputTokensPerSecond,
			Drift: pr.Drift})
	}
	if s := ev.Signals; s != nil {
		sp.EngineTelemetry = s.Engine.KVCacheUsage.Samples > 0 || s.Engine.Running.Samples > 0
		sp.GPUTelemetry = len(s.GPUs) > 0
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

// serveCommand is the command that serves the chosen configuration, in
// the engine flavor's own form (engine.Flavor.CommandLine): for a process
// engine, the configured command template with the flags (what spoc
// itself ran, with <port> for the port); for Kubernetes with flavor
// generic, the container's args after the image's entrypoint; otherwise
// the flavor's program (vllm serve, SGLang's launch_server) with the
// deployment's shape and the flags. For a server spoc did not start
// (external) there is no such command: spoc set none of its flags, and
// engine.params describe a configuration, not that server. It returns no
// command then, and flags says so with what the server itself reveals
// (capacity.ServerFacts).
func (p *planner) serveCommand(ctx context.Context, params map[string]any) (cmd, flags string) {
	switch l := p.s.Launcher.(type) {
	case *engine.Process:
		if cmd, err := l.DryRun(engine.Params(params)); err == nil {
			return cmd, ""
		}
	case *engine.Kubernetes:
		if l.Flavor().Program == nil {
			cmd, err := l.ContainerCommand(engine.Params(params))
			if err != nil {
				return "", fmt.Sprintf("not rendered: %v", err)
			}
			return cmd, ""
		}
	case *engine.External:
		flags = "unknown: spoc did not start the server at " + l.Describe() + " and set none of its flags; the measured ceiling is of whatever it runs (engine.params are not its flags)"
		if srv, err := l.Start(ctx, nil); err == nil {
			if facts := capacity.ServerFacts(ctx, srv.Endpoint()); len(facts) > 0 {
				flags += ". The server reports: " + strings.Join(facts, "; ")
			}
		}
		return "", flags
	}
	cmd, err := serveCommand(p.s.Deployment, params)
	if err != nil {
		return "", fmt.Sprintf("not rendered: %v", err)
	}
	return cmd, ""
}

// serveCommand renders the chosen configuration with the flavor's program
// (vllm serve, SGLang's launch_server): the deployment's shape in the
// flavor's names, then the flags.
func serveCommand(d capacity.Deployment, params map[string]any) (string, error) {
	fl, ok := engine.Named(d.Flavor)
	if !ok {
		return "", fmt.Errorf("flavor %s: %w", d.Flavor, engine.ErrNoProgram)
	}
	model := d.Model
	if model == "gpt-oss-120b" || model == "gpt-oss-20b" {
		model = "openai/" + model
	}
	shape := fl.ShapeParams(engine.Shape{TensorParallel: d.TensorParallelSize, ContextLength: d.MaxModelLen,
		ServedModelName: d.ServedModelName})
	if dp := d.Replicas(); dp > 1 {
		shape = engine.Params(vllm.Merge(shape, fl.ShapeParams(engine.Shape{DataParallel: dp})))
	}
	return fl.CommandLine(model, shape, engine.Params(params))
}

// baselineRecordsName is a live baseline level's records file in the
// staging records folder.
func baselineRecordsName(users int) string {
	return fmt.Sprintf("baseline-users-%05d.jsonl%s", users, result.GzipSuffix)
}

// baselineRecords creates a live baseline level's records file.
func (p *planner) baselineRecords(users int) (io.WriteCloser, error) {
	dir := filepath.Join(p.s.OutDir, stagingRecords)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(filepath.Join(dir, baselineRecordsName(users)))
	if err != nil {
		return nil, err
	}
	return result.NewGzipFile(f), nil
}

// measureOnce returns opts with the live baseline's levels as measured
// (Known) when the plan keeps engine.params: the baseline walked the same
// flags with the same windows, workload seed and a cold prefix cache for
// each run, so the capacity sweep's first walk would repeat it. Their
// records become the sweep's. Virtual runs are cheap and run again,
// except in a dry run, which counts what the live plan would run: there
// every baseline level is known, as the live baseline's records make it.
func (p *planner) measureOnce(ev *capacity.Evaluator, st *searchState, opts capacity.SweepOptions) (capacity.SweepOptions, error) {
	if (ev.Virtual() && !p.dryRun) || st.baseline == nil || p.sum.Capacity.ChosenTrial >= 0 {
		return opts, nil
	}
	if p.dryRun {
		known := map[int]capacity.Repeat{}
		for _, l := range st.baseline.Levels {
			if len(l.Repeats) > 0 {
				known[l.Users] = l.Repeats[0]
			}
		}
		if len(known) > 0 {
			opts.Known = known
		}
		return opts, nil
	}
	dir := filepath.Join(p.s.OutDir, stagingRecords)
	known := map[int]capacity.Repeat{}
	warm := 0 // runs that started on an earlier run's cache (the server refused the reset)
	for _, l := range st.baseline.Levels {
		if len(l.Repeats) == 0 {
			continue
		}
		from := filepath.Join(dir, baselineRecordsName(l.Users))
		if _, err := os.Stat(from); err != nil {
			continue // no records: run the level again
		}
		if err := os.Rename(from, filepath.Join(dir, fmt.Sprintf("users-%05d.jsonl%s", l.Users, result.GzipSuffix))); err != nil {
			return opts, err
		}
		known[l.Users] = l.Repeats[0]
		if e, ok := l.Repeats[0].Detail.(*capacity.Evaluation); ok && e.WarmCache != "" {
			warm++
		}
	}
	if len(known) > 0 {
		opts.Known = known
		cache := "each run on a cold prefix cache"
		if warm > 0 {
			cache = fmt.Sprintf("%d of the %d runs on the prefix cache an earlier run left, as the sweep's own would have: the server refused the cache reset", warm, len(known))
		}
		p.logf("   measured once: the baseline's %d levels of engine.params are the sweep's (same flags, windows and workload seed; %s)", len(known), cache)
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Measured once: the capacity sweep took the baseline's %d levels of engine.params as measured instead of running them again (same flags, windows and workload seed; %s).", len(known), cache))
	}
	return opts, nil
}

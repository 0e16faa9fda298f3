package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/tune"
)

// searchState is what the phases of one search — baseline, tune, choose
// (and default, after the sweep) — hand each other. A live or simulated
// plan runs one search on its evaluator; a multi plan runs one per round
// on the calibrated simulator, each from a new state.
type searchState struct {
	// study is the name the study's is built from (search.study, or the
	// multi plan's round name).
	study string
	// tuneUsers is the load the study runs at: search.users, or the
	// baseline's ceiling when that is 0 (auto).
	tuneUsers int
	// baseline is the configured engine flags' candidate sweep (the
	// sweep's windows, one seed).
	baseline *capacity.SweepResult
	// bestTuned is the study's candidate with the highest ceiling: when
	// the plan keeps engine.params, the default phase compares it with
	// them on the same seeds.
	bestTuned *tunedCandidate
}

// newSearch is the state of a search for study at the configured load.
func (p *planner) newSearch(study string) *searchState {
	return &searchState{study: study, tuneUsers: p.s.Search.Users}
}

// baselineSweep gives the configured engine flags a candidate sweep. Its
// ceiling is the baseline every tuned candidate must beat and, when
// search.users is 0 (auto), the load the study tunes at: there the SLA
// binds, so the front separates configurations that serve more users from
// those that serve fewer.
func (p *planner) baselineSweep(ctx context.Context, ev *capacity.Evaluator, st *searchState) (string, error) {
	progress := p.levels(capacity.CandidateSweepOptions(p.s.Setup))
	var res *capacity.SweepResult
	var err error
	if ev.Virtual() {
		res, err = capacity.BaselineSweep(ctx, ev, progress)
	} else {
		// a live baseline keeps its records: when the plan keeps
		// engine.params, its levels are the capacity sweep's first walk
		// (measureOnce)
		res, err = capacity.BaselineSweepRecords(ctx, ev, progress, p.baselineRecords)
	}
	if err != nil {
		return "", err
	}
	st.baseline = res
	msg := fmt.Sprintf("engine.params ceiling %d users (a walk on one seed with the sweep's windows; the capacity stated later is estimated on fresh seeds)", res.Ceiling)
	if st.tuneUsers == 0 {
		st.tuneUsers = res.AimUsers()
		msg += fmt.Sprintf("; the study tunes at %d users", st.tuneUsers)
		if st.tuneUsers > res.Ceiling && res.Unconfirmed {
			msg += " (the largest count that met the SLA on too few samples to be judged)"
		}
	}
	return msg, nil
}

// tune runs the study of st on ev at st's load.
func (p *planner) tune(ctx context.Context, ev *capacity.Evaluator, st *searchState) (string, error) {
	if !engine.Reconfigurable(ev.Launcher()) || p.fixedFlags {
		// A server spoc does not start keeps its own flags: there is
		// nothing to search, and the plan measures that server as it runs.
		p.sum.Notes = append(p.sum.Notes, "The engine is an external server: spoc cannot change its flags, so no parameter search ran and the capacity is that of the server's own configuration.")
		return "skipped: an external server's flags cannot change", nil
	}
	spec := p.s.Search
	spec.Users = st.tuneUsers
	// A plan's study is named for its load and setup (fingerprint): a plan
	// re-run with the same configuration continues its study, one with
	// another load (the baseline found another ceiling), windows or
	// hardware starts its own instead of refusing to continue the earlier.
	spec.Study = fmt.Sprintf("%s-%dusers-%s", st.study, spec.Users, fingerprintID(spec.Fingerprint))
	load := p.s.Windows.Tune.At(spec.Users)
	at := ""
	if spec.Parallel > 1 {
		at = fmt.Sprintf(", up to %d at once (search.parallel)", spec.Parallel)
	}
	window := fmt.Sprintf("a %s window each", load.Duration)
	if ev.Virtual() {
		window += " in virtual time"
	}
	p.logf("   study %q in %s: %d trials of %d users, %s%s", spec.Study, spec.Storage, spec.Trials, spec.Users, window, at)
	var artifacts string
	if !ev.Virtual() {
		// a live trial cannot be redone: keep its records and telemetry
		artifacts = filepath.Join(p.s.OutDir, "trials")
	}
	// search.parallel: each trial running at once has its own evaluator
	// (and server on a live engine)
	res, err := ev.Study(ctx, spec, capacity.TuneOptions{
		Logger: p.o.Logger, ArtifactsRoot: artifacts, Notify: func(line string) { p.logf("   %s", line) },
		Progress: func(pr tune.Progress) {
			p.stepf(pr.Finished, pr.Total, false, "%s", tune.ProgressLine(pr))
		},
	})
	if err != nil {
		return "", err
	}
	p.sum.Search = searchSection(spec, res)
	if spec.Parallel > 1 {
		p.sum.Search.Parallel = spec.Parallel
	}
	p.sum.Trials = len(res.Trials)
	for _, m := range p.sum.Search.Trials {
		if m.OnFront {
			p.sum.Pareto = append(p.sum.Pareto, m)
		}
	}
	if note := noFrontNote(st, load, p.s.Windows.Sweep, len(p.sum.Pareto)); note != "" {
		p.sum.Notes = append(p.sum.Notes, note)
	}
	return fmt.Sprintf("%d trials (%d complete, %d infeasible, %d failed), %d on the feasible front",
		len(res.Trials), p.sum.Search.Complete, p.sum.Search.Infeasible, p.sum.Search.Failed, len(p.sum.Pareto)), nil
}

// noFrontNote explains a study with no feasible trial at a load the
// baseline walk met the SLA at with the configured flags, when the study's
// windows are shorter than the sweep's ("" otherwise). On the quick plan's
// reference case the same flags, users and seed give TTFT p95 4.36 s in a
// 2-minute window and 1.52 s in a 3-minute one after the same 90 s warm-up.
func noFrontNote(st *searchState, tune, sweep capacity.Load, front int) string {
	if front > 0 || st.baseline == nil || st.tuneUsers > st.baseline.Ceiling {
		return ""
	}
	if tune.Warmup >= sweep.Warmup && tune.Duration >= sweep.Duration {
		return ""
	}
	return fmt.Sprintf("No trial of the study met the SLA at %d users in its windows (%s warm-up, %s measured), though the configured flags met it at %d users in the baseline walk's (%s, %s): "+
		"a shorter window gives more weight to the minutes right after the warm-up, while the prefill burst of sessions that start mid-way (each one's history uncached) still drains. The plan keeps engine.params; "+
		"set search.warmup and search.duration to the sweep's to search at its fidelity, at more engine time per trial.",
		st.tuneUsers, tune.Warmup, tune.Duration, st.tuneUsers, sweep.Warmup, sweep.Duration)
}

// fingerprintID is a short stable digest of a study fingerprint.
func fingerprintID(fp map[string]string) string {
	keys := make([]string, 0, len(fp))
	for k := range fp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, fp[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:4])
}

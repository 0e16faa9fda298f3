package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// FleetVerify is a small live fleet checked against the fleet simulation
// that sized the buyer's fleet: on a plan of one replica, Replicas of the
// chosen configuration behind the configured router (the HAProxy spoc
// starts in front of a process fleet), run live at the simulated fleet's
// ceiling and at its first failing count. The simulated walk is the same
// one SizeFleet's runs are (the sweep's windows, the multi plan's
// correction when there is one); the live runs are two, not a sweep, so
// they check the prediction on each side of it within plan.budget.
type FleetVerify struct {
	Replicas int    `json:"replicas"`
	Router   string `json:"router"`
	// PredictedCeiling and PredictedFirstFailing are the simulated fleet's
	// walk (one seed, the sweep's windows).
	PredictedCeiling      int `json:"predicted_ceiling_users"`
	PredictedFirstFailing int `json:"predicted_first_failing_users"`
	// Runs are the live runs, at PredictedCeiling then at
	// PredictedFirstFailing.
	Runs []FleetVerifyRun `json:"runs"`
	// Agree is set when at least one load ran, and at every load run both
	// the simulated and the live run were judged (enough samples, at least
	// one request completed) with the same verdict.
	Agree bool `json:"agree"`
	// EngineSeconds is the live fleet's wall time (servers up), added to
	// the plan's live engine time.
	EngineSeconds float64 `json:"engine_seconds"`
	// Skipped, when set, says why no fleet was verified (the runs are
	// then empty).
	Skipped string `json:"skipped,omitempty"`
	// Error, when set, is why the verification stopped (a replica or the
	// router that failed): the plan's own answer stands, the fleet size is
	// not verified, and Runs holds the loads run before it.
	Error string `json:"error,omitempty"`
}

// FleetVerifyRun is one live run of the verification fleet beside its
// simulated prediction at the same load.
type FleetVerifyRun struct {
	Users int `json:"users"`
	// Aim says which count of the simulated walk Users is: "ceiling",
	// "unconfirmed" (the largest count the walk passed on too few samples
	// to judge, above its judged ceiling) or "first failing".
	Aim           string `json:"aim"`
	PredictedPass bool   `json:"predicted_pass"`
	// PredictedUnjudged is set when the simulated run had too few samples
	// to judge a clause: it predicts nothing to confirm.
	PredictedUnjudged bool `json:"predicted_unjudged,omitempty"`
	// PredictedFailed is the simulated run's first failing clause.
	PredictedFailed string    `json:"predicted_failed_clause,omitempty"`
	Predicted       Latencies `json:"predicted"`
	LivePass        bool      `json:"live_pass"`
	LiveUnjudged    bool      `json:"live_unjudged,omitempty"`
	// LiveRequests and PredictedRequests are the live and the simulated
	// run's requests completed (result.Stats.OK) in the window; a live run
	// that completed none is unjudged, and a run's prefix-cache hit rate
	// is over its completed requests only.
	LiveRequests      int64      `json:"live_requests"`
	PredictedRequests int64      `json:"predicted_requests"`
	LiveFailed        string     `json:"live_failed_clause,omitempty"`
	Measured          Latencies  `json:"measured"`
	Records           string     `json:"records"`
	Provenance        Provenance `json:"provenance"`
}

// maxVerifyReplicas is the largest fleet a plan verifies live: two or
// three replicas say whether the router behaves as simulated, at a fraction
// of the engine time of the fleet the target needs.
const maxVerifyReplicas = 3

// verifyFleet runs the small live fleet of fs's router (FleetVerify) when
// the plan can start one: a live plan of one replica whose sized fleet has
// at least two replicas, or none (no size met the target), with
// Setup.FleetLauncher and engine time left in the budget. It records why it did not otherwise.
func (p *planner) verifyFleet(ctx context.Context, fs *FleetSize, corr *sim.Correction) error {
	err := p.runFleetVerify(ctx, fs, corr)
	if err == nil || ctx.Err() != nil || fs.Verified == nil {
		return err
	}
	// the plan measured its answer; a fleet that failed to verify is said
	// (summary, report, stdout), not a reason to lose that answer
	v := fs.Verified
	v.Error, v.Agree = err.Error(), false
	p.logf("   fleet NOT verified: %v", err)
	return nil
}

// verifyReplicas is the size of the live check for a sized fleet of sized
// replicas (0: no size met the target) and plan.verify_fleet, or 0 for no
// check. A fleet of one needs no router; no size meeting the target is the
// strongest claim the simulated router makes, so it is checked too.
func verifyReplicas(sized, verifyFleet int) int {
	switch {
	case verifyFleet < 0 || sized == 1:
		return 0
	case verifyFleet > 0:
		return verifyFleet
	case sized == 0:
		return maxVerifyReplicas
	}
	return min(sized, maxVerifyReplicas)
}

// runFleetVerify is verifyFleet's work; an error after fs.Verified is set
// is the verification's, recorded there.
func (p *planner) runFleetVerify(ctx context.Context, fs *FleetSize, corr *sim.Correction) error {
	r := verifyReplicas(fs.Replicas, p.s.Fidelity.VerifyFleet)
	if p.s.Virtual || p.s.FleetLauncher == nil || r == 0 {
		return nil
	}
	tp := max(p.s.Deployment.Sim.TensorParallelSize, 1)
	if p.s.Deployment.GPUs/tp > 1 {
		// the plan's own sweep measured the configured fleet
		return nil
	}
	v := &FleetVerify{Replicas: r, Router: fs.Router}
	fs.Verified = v
	w := p.s.Windows.Sweep
	need := 2 * (w.Warmup + w.Duration + time.Minute)
	if b := p.s.Fidelity.Budget; b > 0 {
		if left := b - time.Duration(p.ev.Usage().Seconds*float64(time.Second)); left < need {
			v.Skipped = fmt.Sprintf("plan.budget: %s of engine time left, and two runs of a %d-replica fleet take about %s", left.Round(time.Second), r, need.Round(time.Second))
			p.logf("   fleet not verified live: %s", v.Skipped)
			return nil
		}
	}
	base := p.s.Deployment.Sim
	if corr != nil {
		base.Correction = *corr
	}
	simEv, err := fleetEvaluator(p.s.Setup, base, r, p.o.Logger)
	if err != nil {
		return err
	}
	params := p.sum.Capacity.Config
	walk, err := capacity.SweepConfig(ctx, simEv, params, w.At, capacity.CandidateSweepOptions(p.s.Setup), nil)
	if err != nil {
		return fmt.Errorf("simulated sweep of %d replicas: %w", r, err)
	}
	v.PredictedCeiling, v.PredictedFirstFailing = walk.Ceiling, walk.FirstFailing
	p.logf("   fleet: %d replicas behind %s, simulated: ceiling %d users, first failing %d; verifying live", r, fs.Router, walk.Ceiling, walk.FirstFailing)
	launcher, err := p.s.FleetLauncher(r)
	if err != nil {
		return err
	}
	ls := p.s.Setup
	ls.Launcher, ls.Virtual = launcher, false
	ls.Deployment.GPUs = r * tp
	ls.Deployment.Sim.GPUs = r * tp
	liveEv, err := capacity.NewEvaluator(ls, p.o.Logger)
	if err != nil {
		return err
	}
	p.watchRuns(liveEv)
	defer func() {
		_ = liveEv.Close(context.WithoutCancel(ctx))
		v.EngineSeconds = liveEv.Usage().Seconds
		if p.sum.Fidelity != nil {
			p.sum.Fidelity.LiveEngineSeconds += v.EngineSeconds
			p.sum.Fidelity.GPUHours += v.EngineSeconds * float64(r*tp) / 3600
		}
	}()
	dir := filepath.Join(p.s.OutDir, "fleet-verify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// the ceiling, or the unconfirmed count when the walk passed one on
	// too few samples above it (SweepResult.AimUsers), then the first
	// failing one
	aim := "ceiling"
	if walk.AimUsers() != walk.Ceiling {
		aim = "unconfirmed"
	}
	for i, u := range []int{walk.AimUsers(), walk.FirstFailing} {
		if u <= 0 || len(v.Runs) > 0 && u == v.Runs[0].Users {
			continue
		}
		if i == 1 {
			aim = "first failing"
		}
		load := w.At(u)
		pred, err := simEv.Evaluate(ctx, params, load, capacity.Outputs{})
		if err != nil {
			return fmt.Errorf("simulated %d users: %w", u, err)
		}
		rec := filepath.Join("fleet-verify", fmt.Sprintf("fleet-%d-%dusers.jsonl", r, u))
		live, err := evaluateTo(ctx, liveEv, params, load, filepath.Join(p.s.OutDir, rec))
		if err != nil {
			return fmt.Errorf("%d replicas live at %d users: %w", r, u, err)
		}
		run := FleetVerifyRun{Users: u, Aim: aim, PredictedPass: pred.Pass, PredictedFailed: pred.Failed, Predicted: latencies(pred), LivePass: live.Pass,
			LiveFailed: live.Failed, Measured: latencies(live), Records: rec, Provenance: live.Provenance}
		if live.Summary != nil {
			run.LiveRequests = live.Summary.Overall.OK
		}
		if pred.Summary != nil {
			run.PredictedRequests = pred.Summary.Overall.OK
		}
		// a run with too few samples to judge a clause, on either side,
		// confirms nothing; nor does a live run that completed no request
		run.PredictedUnjudged = pred.Verdict.Outcome() == result.VerdictInsufficient
		run.LiveUnjudged = live.Verdict.Outcome() == result.VerdictInsufficient || run.LiveRequests == 0
		v.Runs = append(v.Runs, run)
		p.logf("   fleet verify %d replicas %3d users (simulated %s): predicted %s, live %s (requests completed %d live, %d simulated; prefix-cache hit rate %.0f%% live, %.0f%% simulated)",
			r, u, aim, verifyWord(pred), verifyWord(live), run.LiveRequests, run.PredictedRequests, 100*run.Measured.PrefixCacheHitRate, 100*run.Predicted.PrefixCacheHitRate)
	}
	v.Agree = fleetAgrees(v.Runs)
	return nil
}

// verifyWord is an evaluation's verdict with what decided it: the failing
// clause, or the TTFT and ITL p95 of a pass.
func verifyWord(ev *capacity.Evaluation) string {
	w := evaluationWord(ev)
	if !ev.Pass && ev.Failed != "" && ev.Verdict.Outcome() != result.VerdictInsufficient {
		return w + ": " + ev.Failed
	}
	l := latencies(ev)
	return fmt.Sprintf("%s (TTFT p95 %.0f ms, ITL p95 %.1f ms)", w, l.TTFTP95Ms, l.ITLP95Ms)
}

// fleetAgrees reports whether runs confirm the simulated fleet: at least
// one, each judged on both sides with the same verdict.
func fleetAgrees(runs []FleetVerifyRun) bool {
	for _, r := range runs {
		if r.PredictedUnjudged || r.LiveUnjudged || r.LivePass != r.PredictedPass {
			return false
		}
	}
	return len(runs) > 0
}

// checkFleetLauncher checks, before the plan spends engine time, the
// launcher of the small fleet the plan will verify (FleetVerify): a
// missing HAProxy found after an hour of live runs would lose nothing but
// the check, yet says nothing until then.
func checkFleetLauncher(s Setup) error {
	if s.Virtual || s.FleetLauncher == nil || s.Fidelity.VerifyFleet < 0 || s.Demand.Users <= 0 {
		return nil
	}
	l, err := s.FleetLauncher(max(s.Fidelity.VerifyFleet, 2))
	if err != nil {
		return fmt.Errorf("the fleet this plan verifies (plan.verify_fleet: -1 turns it off): %w", err)
	}
	if err := engine.Check(l); err != nil {
		return fmt.Errorf("the fleet this plan verifies (plan.verify_fleet: -1 turns it off): %w", err)
	}
	return nil
}

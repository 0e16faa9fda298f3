package plan

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/words"
	"github.com/spoc-project/spoc/sim"
)

// FleetSize is the fleet the cost section sizes by simulating it, not by
// division: R replicas of the chosen configuration (one tensor-parallel
// group each) behind the configured router (fleet.router), all on one
// virtual clock, at plan.target_users with the sweep's windows. For a
// stateful workload the router decides the fleet's capacity
// (docs/fleet.md): a scattering router loses sessions' prefix caches and
// a fleet of the divided size may fail where one of the same size behind
// session affinity passes.
type FleetSize struct {
	Router      string `json:"router"`
	TargetUsers int    `json:"target_users"`
	// GPUsPerReplica is the tensor-parallel size.
	GPUsPerReplica int `json:"gpus_per_replica"`
	// Replicas is the smallest R whose fleet met the SLA at the target; 0
	// when none up to MaxReplicas did.
	Replicas    int `json:"replicas"`
	MaxReplicas int `json:"max_replicas"`
	// DivisionReplicas is what the division says: the target over one
	// replica's ceiling at the headroom, rounded up.
	DivisionReplicas int `json:"division_replicas"`
	// Runs are every fleet simulated, in ascending R: R passing and R − 1
	// failing among them.
	Runs []FleetSizeRun `json:"runs"`
	// Correction is the multi plan's fitted correction of the simulator,
	// applied to every fleet simulated (their provenance then reads
	// simulated-calibrated); absent when the fleet ran the built-in cost
	// model.
	Correction *sim.Correction `json:"correction,omitempty"`
	Provenance Provenance      `json:"provenance"`
	// Verified is the small live fleet a plan on one replica ran behind
	// the same router (fleetverify.go); nil when none could be started.
	Verified *FleetVerify `json:"verified,omitempty"`
}

// FleetSizeRun is one simulated fleet at the target.
type FleetSizeRun struct {
	Replicas     int    `json:"replicas"`
	Pass         bool   `json:"pass"`
	FailedClause string `json:"failed_clause,omitempty"`
	// PrefixHitRate is the fleet's prefix-cache hit rate over the run.
	PrefixHitRate float64 `json:"prefix_cache_hit_rate"`
	provenance    Provenance
}

// maxFleetReplicas bounds the search: a fleet this large that still fails
// says the router, not the size, is what fails.
const maxFleetReplicas = 64

// SizeFleet finds the smallest fleet of s's deployment's replicas that
// meets the SLA at d.Users under s's router, simulating each size with
// params (the chosen configuration) on the sweep's windows. division is
// the replicas the division says (the cost rows' deployments, in
// replicas). It starts at the division,
// walks up by doubling (to at most 4 × the division, and maxFleetReplicas)
// or down, and bisects, assuming a larger fleet never serves fewer users;
// the size below the answer is always simulated, so the summary shows it
// failing. It needs the deployment's simulator (s.Deployment.SimErr says
// why there is none). corr, when not nil, is a correction fitted to live
// runs of one replica (a multi plan's calibration): each fleet is
// simulated with it, so the fleet's size follows the measured replica,
// not the built-in cost model.
func SizeFleet(ctx context.Context, s capacity.Setup, params map[string]any, d Demand, division int, corr *sim.Correction, logger *slog.Logger) (*FleetSize, error) {
	if s.Deployment.SimErr != nil {
		return nil, fmt.Errorf("size the fleet: the deployment has no simulator: %w", s.Deployment.SimErr)
	}
	base := s.Deployment.Sim
	tp := max(base.TensorParallelSize, 1)
	out := &FleetSize{Router: base.Fleet.Policy(), TargetUsers: d.Users, GPUsPerReplica: tp, DivisionReplicas: division}
	if corr != nil {
		if err := corr.Normal().Validate(); err != nil {
			return nil, fmt.Errorf("size the fleet: correction: %w", err)
		}
		c := *corr
		base.Correction, out.Correction = c, &c
	}
	start := max(division, 1)
	out.MaxReplicas = min(max(4*start, 8), maxFleetReplicas)
	runs := map[int]FleetSizeRun{}
	run := func(r int) (bool, error) {
		if got, ok := runs[r]; ok {
			return got.Pass, nil
		}
		fr, err := simulateFleet(ctx, s, base, r, params, d.Users, logger)
		if err != nil {
			return false, fmt.Errorf("size the fleet: %d replicas: %w", r, err)
		}
		runs[r] = fr
		return fr.Pass, nil
	}
	// lo fails (0: no fleet), hi passes (0: none found yet)
	lo, hi := 0, 0
	pass, err := run(start)
	if err != nil {
		return nil, err
	}
	if pass {
		hi = start
	} else {
		lo = start
		for r := min(2*start, out.MaxReplicas); ; r = min(2*r, out.MaxReplicas) {
			ok, err := run(r)
			if err != nil {
				return nil, err
			}
			if ok {
				hi = r
				break
			}
			lo = r
			if r == out.MaxReplicas {
				break
			}
		}
	}
	for hi > 0 && hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := run(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	out.Replicas = hi
	for r := 1; r <= out.MaxReplicas; r++ {
		if fr, ok := runs[r]; ok {
			out.Runs = append(out.Runs, fr)
			out.Provenance = fr.provenance
		}
	}
	return out, nil
}

// fleetEvaluator is a virtual evaluator of r replicas of base behind its
// router, on one clock; with a correction in base its runs say they are
// simulated-calibrated.
func fleetEvaluator(s capacity.Setup, base sim.Deployment, r int, logger *slog.Logger) (*capacity.Evaluator, error) {
	dep := base
	dep.GPUs = r * max(base.TensorParallelSize, 1)
	l, err := engine.NewSim(dep, engine.SimOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	var launcher engine.Launcher = l
	if !dep.Correction.IsIdentity() {
		// the calibrated simulator's launcher, so every run says it is
		// simulated-calibrated
		launcher = &correctedSim{Sim: l, c: dep.Correction, fitted: true}
	}
	fs := s
	fs.Launcher, fs.Virtual = launcher, true
	fs.Deployment.Kind, fs.Deployment.GPUs, fs.Deployment.Sim = "sim", dep.GPUs, dep
	return capacity.NewEvaluator(fs, logger)
}

// simulateFleet runs r replicas of base behind its router at users.
func simulateFleet(ctx context.Context, s capacity.Setup, base sim.Deployment, r int, params map[string]any, users int, logger *slog.Logger) (FleetSizeRun, error) {
	ev, err := fleetEvaluator(s, base, r, logger)
	if err != nil {
		return FleetSizeRun{}, err
	}
	res, err := ev.Evaluate(ctx, params, s.Windows.Sweep.At(users), capacity.Outputs{})
	if err != nil {
		return FleetSizeRun{}, err
	}
	fr := FleetSizeRun{Replicas: r, Pass: res.Pass, FailedClause: res.Failed, provenance: res.Provenance}
	if res.Sim != nil {
		fr.PrefixHitRate = res.Sim.PrefixHitRate
	}
	return fr, nil
}

// sizeFleet adds the simulated fleet to the cost section: the chosen
// configuration's replicas behind the configured router at the target.
func (p *planner) sizeFleet(ctx context.Context) error {
	c := p.sum.Cost
	if c == nil || len(c.Rows) == 0 {
		return nil
	}
	if p.s.Deployment.SimErr != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("fleet not simulated: the deployment has no simulator (%v); the deployments above are the division's", p.s.Deployment.SimErr))
		return nil
	}
	row := c.Rows[0]
	replicasPer, err := sim.ReplicasOf(row.GPUsPerDeployment, row.TensorParallelSize)
	if err != nil {
		return err
	}
	division := deployments(p.s.Demand.Users, row.CeilingUsers, p.s.Demand.Headroom) * replicasPer
	setup := p.s.Setup
	if len(c.PeakShares) > 0 {
		// the peak is what the fleet must serve, at its mix
		setup.Workload = withShares(setup.Workload, c.PeakShares)
	}
	var corr *sim.Correction
	if p.m != nil && p.m.csim.Calibrated() {
		// a multi plan: the fleet is the measured replica's, not the
		// built-in cost model's
		c := p.m.csim.correction()
		corr = &c
	}
	fs, err := SizeFleet(ctx, setup, p.sum.Capacity.Config, p.s.Demand, division, corr, p.o.Logger)
	if err != nil {
		return err
	}
	c.Fleet = fs
	if fs.Replicas == 0 {
		p.logf("   fleet: no fleet of up to %d replicas behind %s meets the SLA at %d users (the division says %d)", fs.MaxReplicas, fs.Router, fs.TargetUsers, fs.DivisionReplicas)
	} else {
		p.logf("   fleet: %d replicas behind %s meet the SLA at %d users, %d fail (the division says %d)", fs.Replicas, fs.Router, fs.TargetUsers, fs.Replicas-1, fs.DivisionReplicas)
	}
	return p.verifyFleet(ctx, fs, corr)
}

// Lines are the fleet's sizing and its live check for a terminal: what
// the simulated fleet needs at the target against the division, then
// whether a small live fleet confirmed it.
func (f *FleetSize) Lines() []string {
	if f == nil {
		return nil
	}
	var out []string
	if f.Replicas == 0 {
		out = append(out, fmt.Sprintf("fleet: no fleet of up to %d replicas behind %s meets the SLA at %d users, where the division says %d: the router, not the size, is what fails (docs/fleet.md; %s)",
			f.MaxReplicas, f.Router, f.TargetUsers, f.DivisionReplicas, f.Provenance.Source))
	} else {
		out = append(out, fmt.Sprintf("fleet: %s of %s behind %s meet the SLA at %d users, %d do not (the division says %d; %s)",
			words.Plural(f.Replicas, "replica"), words.Plural(f.GPUsPerReplica, "GPU"), f.Router, f.TargetUsers, f.Replicas-1, f.DivisionReplicas, f.Provenance.Source))
	}
	v := f.Verified
	switch {
	case v == nil:
	case v.Skipped != "":
		out = append(out, "fleet not verified live: "+v.Skipped)
	case v.Error != "":
		out = append(out, fmt.Sprintf("fleet NOT verified: %d replicas live failed: %s", v.Replicas, v.Error))
	default:
		word := "agrees with"
		if !v.Agree {
			word = "does NOT confirm"
		}
		runs := make([]string, 0, len(v.Runs))
		for _, r := range v.Runs {
			runs = append(runs, fmt.Sprintf("%d users predicted %s, live %s", r.Users, runWord(r.PredictedPass, r.PredictedUnjudged), runWord(r.LivePass, r.LiveUnjudged)))
		}
		out = append(out, fmt.Sprintf("fleet check: %d replicas live behind %s %s the simulation (%s)", v.Replicas, v.Router, word, strings.Join(runs, "; ")))
	}
	return out
}

// runWord is a judged run's verdictWord, or "unjudged".
func runWord(pass, unjudged bool) string {
	if unjudged {
		return "unjudged"
	}
	return verdictWord(pass)
}

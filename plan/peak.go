package plan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/workload"
)

// PeakMix is the capacity at the peak's profile mix (plan.peak_shares),
// when it differs from the workload's weights: the chosen configuration
// swept again on the plan's engine, and every compare target (simulated)
// at that mix. The cost section sizes deployments from these ceilings,
// since the peak is what they must serve.
type PeakMix struct {
	// Shares is the peak's share of users by profile name.
	Shares map[string]float64 `json:"shares"`
	// Chosen is the chosen configuration's ceiling at the peak mix.
	Chosen CompareRow `json:"chosen"`
	// Compare are the compare targets at the peak mix, in the order of
	// Summary.Compare.
	Compare []CompareRow `json:"compare,omitempty"`
}

// withShares returns spec with its profiles' weights replaced by shares (a
// profile shares leaves out gets weight 0).
func withShares(spec workload.Spec, shares map[string]float64) workload.Spec {
	profiles := make([]workload.Profile, len(spec.Profiles))
	for i, pr := range spec.Profiles {
		pr.Weight = shares[pr.Name]
		profiles[i] = pr
	}
	spec.Profiles = profiles
	return spec
}

// sharesText prints shares as "P0 50%, P1 30%, P2 20%" in profile order.
func sharesText(shares map[string]float64) string {
	names := make([]string, 0, len(shares))
	for n := range shares {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.0f%%", n, 100*shares[n])
	}
	return strings.Join(parts, ", ")
}

// peak sweeps the chosen configuration and every compare target at the
// peak mix. It runs last: the plan's evaluator is closed first, so that a
// live engine serves one server at a time.
func (p *planner) peak(ctx context.Context) (string, error) {
	shares := p.s.Demand.PeakShares
	if err := p.ev.Close(ctx); err != nil {
		return "", fmt.Errorf("stop the engine before the peak-mix sweep: %w", err)
	}
	mix := &PeakMix{Shares: shares}
	sweep := func(name, gpu string, gpus, tp int, s capacity.Setup) (CompareRow, error) {
		s.Workload = withShares(s.Workload, shares)
		ev, err := capacity.NewEvaluator(s, p.o.Logger)
		if err != nil {
			return CompareRow{}, fmt.Errorf("%s: %w", name, err)
		}
		defer ev.Close(ctx)
		p.watchRuns(ev)
		opts := s.Sweep.SweepOptions
		opts.Progress = p.levels(opts)
		res, err := capacity.SweepConfig(ctx, ev, p.sum.Capacity.Config, s.Windows.Sweep.At, opts, nil)
		if err != nil {
			return CompareRow{}, fmt.Errorf("%s: %w", name, err)
		}
		row := compareRow(name, gpu, gpus, tp, res)
		p.logf("%s at the peak mix: capacity %s (first failing %d: %s)", name, capacityText(res), res.FirstFailing, res.FailedClause)
		return row, nil
	}
	d := p.s.Deployment
	var err error
	if mix.Chosen, err = sweep(fmt.Sprintf("chosen: %d× %s", d.GPUs, d.GPU), d.GPU, d.GPUs, d.TensorParallelSize, p.s.Setup); err != nil {
		return "", err
	}
	for _, t := range p.s.Compare {
		row, err := sweep(t.Name, t.GPU, t.GPUs, t.TensorParallelSize, t.Setup)
		if err != nil {
			return "", err
		}
		mix.Compare = append(mix.Compare, row)
	}
	p.sum.Peak = mix
	return fmt.Sprintf("at the peak mix (%s) the chosen configuration serves %d users (%d at the workload's mix)",
		sharesText(shares), mix.Chosen.Users, p.sum.Capacity.Users), nil
}

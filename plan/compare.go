package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/capacity"
)

// compare sweeps the chosen configuration on each hardware target, the
// simulator pricing every target, and states each ceiling relative to the
// first target's.
func (p *planner) compare(ctx context.Context) (string, error) {
	if len(p.s.Compare) == 0 {
		return "not requested", nil
	}
	var parts []string
	for n, t := range p.s.Compare {
		// Hardware the user does not have can only be simulated: the
		// target's Setup has a simulator launcher, and the row says so.
		ev, err := capacity.NewEvaluator(t.Setup, p.o.Logger)
		if err != nil {
			return "", fmt.Errorf("target %s: %w", t.Name, err)
		}
		p.logf("   target %s (%d× %s, TP %d)", t.Name, t.GPUs, t.GPU, t.TensorParallelSize)
		res, err := capacity.SweepConfig(ctx, ev, p.sum.Capacity.Config, t.Setup.Windows.Sweep.At, t.Setup.Sweep.SweepOptions, nil)
		if err != nil {
			return "", fmt.Errorf("target %s: %w", t.Name, err)
		}
		if res.Unconfirmed {
			p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Target %s: its ceiling of %d users met the SLA on too few samples to be judged (largest judged: %d).", t.Name, res.Ceiling, res.JudgedCeiling))
		}
		row := CompareRow{Name: t.Name, GPU: t.GPU, GPUs: t.GPUs, TensorParallelSize: t.TensorParallelSize,
			Users: res.Ceiling, FirstFailingUsers: res.FirstFailing, FailedClause: res.FailedClause,
			UsersPerGPU: float64(res.Ceiling) / float64(t.GPUs), Provenance: res.Provenance(),
			ResolutionUsers: res.Resolution, OutputThroughput: levelThroughput(res.Levels, res.Ceiling), Unconfirmed: res.Unconfirmed,
			CeilingInterval: res.Interval}
		if len(p.sum.Compare) > 0 && p.sum.Compare[0].Users > 0 {
			row.Ratio = float64(res.Ceiling) / float64(p.sum.Compare[0].Users)
		} else if len(p.sum.Compare) == 0 {
			row.Ratio = 1
		}
		p.sum.Compare = append(p.sum.Compare, row)
		p.stepf(n+1, len(p.s.Compare), false, "target %s: ceiling %s (%.1f per GPU), first failing %d: %s", t.Name, ceilingText(res.Ceiling, res.Interval), row.UsersPerGPU, res.FirstFailing, res.FailedClause)
		parts = append(parts, fmt.Sprintf("%s %d users", t.Name, res.Ceiling))
	}
	if n := len(p.sum.Compare); n >= 2 && p.sum.Compare[n-1].Users > 0 {
		parts = append(parts, fmt.Sprintf("ratio %s/%s = %.2f", p.sum.Compare[0].Name, p.sum.Compare[n-1].Name,
			float64(p.sum.Compare[0].Users)/float64(p.sum.Compare[n-1].Users)))
	}
	return strings.Join(parts, ", "), nil
}

// levelThroughput is the mean output tokens/s of the repeats of the level at
// users (0 when the sweep has no such level).
func levelThroughput(levels []capacity.Level, users int) float64 {
	for _, l := range levels {
		if l.Users != users || len(l.Repeats) == 0 {
			continue
		}
		var sum float64
		for _, r := range l.Repeats {
			sum += r.OutputThroughput
		}
		return sum / float64(len(l.Repeats))
	}
	return 0
}

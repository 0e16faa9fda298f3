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
			p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Target %s: %d users met the SLA on too few samples to be judged; its walk's ceiling is the largest judged count, %d.", t.Name, res.UnconfirmedUsers, res.Ceiling))
		}
		row := compareRow(t.Name, t.GPU, t.GPUs, t.TensorParallelSize, res)
		if len(p.sum.Compare) > 0 && p.sum.Compare[0].Users > 0 {
			row.Ratio = float64(row.Users) / float64(p.sum.Compare[0].Users)
		} else if len(p.sum.Compare) == 0 {
			row.Ratio = 1
		}
		p.sum.Compare = append(p.sum.Compare, row)
		p.stepf(n+1, len(p.s.Compare), false, "target %s: capacity %s (%.1f per GPU), first failing %d: %s", t.Name, capacityText(res), row.UsersPerGPU, res.FirstFailing, res.FailedClause)
		parts = append(parts, fmt.Sprintf("%s %d users", t.Name, row.Users))
	}
	if n := len(p.sum.Compare); n >= 2 && p.sum.Compare[n-1].Users > 0 {
		parts = append(parts, fmt.Sprintf("ratio %s/%s = %.2f", p.sum.Compare[0].Name, p.sum.Compare[n-1].Name,
			float64(p.sum.Compare[0].Users)/float64(p.sum.Compare[n-1].Users)))
	}
	return strings.Join(parts, ", "), nil
}

// compareRow is a hardware option's row from its sweep: its capacity (the
// estimate rounded down, else the walk's ceiling) per GPU, the throughput
// at the walk's ceiling.
func compareRow(name, gpu string, gpus, tp int, res *capacity.SweepResult) CompareRow {
	users := capacityUsers(res)
	return CompareRow{Name: name, GPU: gpu, GPUs: gpus, TensorParallelSize: tp,
		Users: users, FirstFailingUsers: res.FirstFailing, FailedClause: res.FailedClause,
		UsersPerGPU: float64(users) / float64(gpus), Provenance: res.Provenance(),
		ResolutionUsers: res.Resolution, OutputThroughput: levelThroughput(res.Levels, res.Ceiling), Unconfirmed: res.Unconfirmed,
		CeilingInterval: res.Interval, Estimate: res.Estimate, Ceiling: res.Ceiling}
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

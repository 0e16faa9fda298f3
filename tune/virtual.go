package tune

import (
	"context"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// VirtualEvaluator evaluates trials of a simulator engine (engine.Virtual)
// entirely in virtual time: the study's users replay src's session scripts
// against the simulated deployment for search.warmup + search.duration,
// with run.ramp and run.think_time_scale, and the summary is judged against
// the SLA. No server, socket or wall-clock wait is involved, so a trial of
// minutes of load takes about a second. Any other engine is an error: it
// needs the HTTP load runner (capacity.Evaluate).
func VirtualEvaluator(cfg *config.Config, src workload.Source) Evaluator {
	return func(ctx context.Context, eng engine.Engine, p search.Params) (*result.Result, error) {
		v, ok := eng.(engine.Virtual)
		if !ok {
			return nil, fmt.Errorf("tune: the %s engine does not run in virtual time; it needs the HTTP load runner", kindOf(eng))
		}
		d, err := v.VirtualDeployment(p)
		if err != nil {
			return nil, err
		}
		run := "trial"
		if tc := search.CurrentTrial(ctx); tc != nil {
			run = fmt.Sprintf("trial-%05d", tc.Number)
		}
		opts := sim.Options{
			Deployment:     d,
			Users:          cfg.Search.Users,
			Ramp:           cfg.Run.Ramp.D(),
			Warmup:         cfg.Search.Warmup.D(),
			Duration:       cfg.Search.Duration.D(),
			ThinkTimeScale: cfg.Run.ThinkTimeScale,
			RunID:          run,
			ErrorRate:      cfg.Engine.Sim.ErrorRate,
			Seed:           cfg.Workload.Seed,
			SeriesInterval: -1,
		}
		epoch := time.Unix(0, 0).UTC()
		summary := result.NewSummary(cfg.SLA, result.Window{Start: epoch.Add(opts.Warmup), End: epoch.Add(opts.Warmup + opts.Duration)})
		if _, err := sim.RunVirtual(ctx, opts, src, summary); err != nil {
			return nil, fmt.Errorf("virtual run: %w", err)
		}
		return summary.Result(), nil
	}
}

func kindOf(e engine.Engine) string {
	if n, ok := e.(engine.Namer); ok {
		return n.Kind()
	}
	return fmt.Sprintf("%T", e)
}

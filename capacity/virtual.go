package capacity

import (
	"context"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
)

// evaluateVirtual runs params at load on dep, the simulator's deployment
// for them, in virtual time (sim.RunVirtual): no server, no wall clock; the
// simulator's own counters stand for the telemetry of a live run.
func (e *Evaluator) evaluateVirtual(ctx context.Context, dep sim.Deployment, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	gen, err := e.workloadFor(load)
	if err != nil {
		return nil, err
	}
	epoch := time.Unix(0, 0).UTC()
	window := result.Window{Start: epoch.Add(load.Warmup), End: epoch.Add(load.Warmup + load.Duration)}
	sum := result.NewSummary(e.setup.SLA, window, result.WithClientBoundLag(e.setup.Client.ClientBoundLagP99), result.WithPromptDriftLimit(e.setup.Client.PromptDriftLimit))
	sinks := []result.Sink{sum}
	if out.Sink != nil {
		sinks = append(sinks, out.Sink)
	}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	stats, err := sim.RunVirtual(ctx, sim.Options{
		Deployment: dep, Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration,
		ThinkTimeScale: load.ThinkTimeScale, Start: epoch, RunID: fmt.Sprintf("sim-%d", load.Users),
		ErrorRate: e.setup.Deployment.SimErrorRate, Seed: e.setup.Workload.Seed + load.SeedOffset,
		Phase: e.phase(load), PhaseSeed: e.phaseSeed(load), Arrivals: e.arrivals(load),
		Autoscale: load.Autoscale,
	}, gen, result.Tee(sinks...))
	if w != nil {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write records: %w", cerr)
		}
	}
	if err != nil {
		if stats == nil && ctx.Err() == nil {
			// the deployment could not be built: weights or KV cache do not fit
			return nil, fmt.Errorf("%w: %w", search.ErrInfeasible, err)
		}
		return nil, err
	}
	res := sum.Result()
	ev := &Evaluation{Users: load.Users, Params: params, Virtual: true, Provenance: e.provenance(""), Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First()}
	sig := SimSignals(stats, dep, e.setup.Telemetry.StragglerClockDrop)
	ev.Signals = &sig
	ev.Sessions, ev.Scale = stats.Sessions, stats.Scale
	share := stats.Share()
	ev.Sim = &SimInfo{
		Replicas: stats.Replicas, KVTokens: stats.KVTokens, MeanKVUsage: stats.MeanKVUsage, PeakKVUsage: stats.PeakKVUsage,
		MeanSMActive: stats.MeanSMActive, Preemptions: stats.Engine.Preemptions,
		AttentionShare: share.Attention, MoEShare: share.MoE, DenseShare: share.DenseGEMM, CommShare: share.Communication,
		OverheadShare: share.Overhead, OtherShare: share.Other, Engine: stats.Engine, Series: &stats.Series,
	}
	if q := stats.Engine.PrefixQueries; q > 0 {
		ev.Sim.PrefixHitRate = float64(stats.Engine.PrefixHits) / float64(q)
	}
	return ev, nil
}

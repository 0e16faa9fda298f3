package tune

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/vllm"
)

// ErrNoRequests marks a run in which no request completed: its latency
// percentiles are meaningless, and a configuration that serves nothing is
// infeasible. It wraps search.ErrInfeasible.
var ErrNoRequests = fmt.Errorf("no request completed in the measured window: %w", search.ErrInfeasible)

// Objective is the objective Run evaluates spec's trials with: o.Evaluate
// runs the trial's flags (with the dimensions Prune dropped) at the
// study's load, o.Capacity answers the capacity objective, the SLA
// clauses become constraints. Only o.Evaluate and o.Capacity are used.
// spoc search objective serves it to other optimisers (bench/).
func (p *Plan) Objective(spec Spec, o Options) search.Objective {
	return (&evaluation{spec: spec, o: o, plan: p}).objective
}

// evaluation is the study's objective.
type evaluation struct {
	spec Spec
	o    Options
	plan *Plan
	same *sameFailures
}

// objective evaluates one trial and turns the summary into objective and
// constraint values. The evaluator owns the servers (it reuses one while
// the flags stay the same); the objective records why a trial failed.
func (e *evaluation) objective(ctx context.Context, tc *search.TrialContext) (values, constraints []float64, err error) {
	defer func() {
		if ctx.Err() == nil {
			e.same.record(err)
		}
		if err != nil {
			tc.SetUserAttr("error", err.Error())
			var f *engine.Failure
			if errors.As(err, &f) {
				tc.SetUserAttr("failure_reason", string(f.Reason))
			}
		}
	}()
	if len(e.plan.Fixed) > 0 {
		// Dimensions dropped from the space still reach the server.
		tc.Params = search.Params(vllm.Merge(e.plan.Fixed, tc.Params))
	}
	res, err := e.o.Evaluate(ctx, tc)
	if err != nil {
		return nil, nil, err
	}
	if res.Overall.OK == 0 {
		// Requests in flight when the window ended mean the flags could
		// not serve this load within it; when replies are simply longer
		// than the window, the window is what must change.
		return nil, nil, fmt.Errorf("%w (%s; if one reply takes longer than the window, lengthen search.duration)", ErrNoRequests, res.SLA.First())
	}
	metrics := Metrics(res)
	for _, ob := range e.plan.Objectives {
		if ob.Metric == MetricCapacity {
			users, err := e.o.Capacity(ctx, tc)
			if err != nil {
				return nil, nil, fmt.Errorf("capacity search: %w", err)
			}
			metrics[MetricCapacity] = float64(users)
			break
		}
	}
	values = make([]float64, len(e.plan.Objectives))
	for i, ob := range e.plan.Objectives {
		v, ok := metrics[ob.Metric]
		if !ok {
			return nil, nil, fmt.Errorf("objective %q: no such metric", ob.Metric)
		}
		values[i] = v
	}
	constraints, names := Constraints(res, e.spec.SLA)
	tc.SetUserAttr("metrics", metrics)
	tc.SetUserAttr("constraint_names", names)
	tc.SetUserAttr("sla", res.SLA.String())
	tc.SetUserAttr("requests", res.Overall.Requests)
	tc.SetUserAttr(AttrUsers, e.spec.Users)
	if len(e.spec.Fingerprint) > 0 {
		tc.SetUserAttr(AttrFingerprint, e.spec.Fingerprint)
	}
	return values, constraints, nil
}

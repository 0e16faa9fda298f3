package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Autoscale runs a fleet's replicas under a scaling policy instead of all
// of them all the time. The deployment's replicas are the most the policy
// may run; every SyncPeriod the policy sees the fleet (ScaleSignal) and
// says how many it wants. A replica it adds serves Startup later (the
// engine starts cold: empty prefix cache); one it removes leaves the router
// at once, finishes the requests it holds (drains) and then stops. A
// session whose next turn comes after its replica left is routed anew.
// GPU time counts from a replica's start to its stop, start-up and draining
// included.
type Autoscale struct {
	Policy Scaler
	// MinReplicas and MaxReplicas bound the policy's answer; MaxReplicas 0
	// means the deployment's replicas, and is at most that.
	MinReplicas, MaxReplicas int
	// InitialReplicas serve from the start (warm); 0 means MinReplicas.
	InitialReplicas int
	// Startup is from the decision to a serving replica.
	Startup time.Duration
	// SyncPeriod is how often the policy decides; 0 means 15 s (the
	// Kubernetes HPA's --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
}

// DefaultSyncPeriod is Autoscale's default sync period.
const DefaultSyncPeriod = 15 * time.Second

// ScaleSignal is what a policy sees at a sync.
type ScaleSignal struct {
	// Now is the run's clock in seconds.
	Now float64
	// Serving replicas take requests; Starting ones will; Draining ones
	// finish what they hold.
	Serving, Starting, Draining int
	// Sessions is how many sessions are in progress (begun, not ended).
	Sessions int
	// Waiting and Running are the serving replicas' requests, summed
	// (vllm:num_requests_waiting and vllm:num_requests_running).
	Waiting, Running int
	// KVUsage is the serving replicas' mean KV-cache usage in [0, 1]
	// (vllm:kv_cache_usage_perc).
	KVUsage float64
}

// Scaler is an autoscaling policy: the replicas it wants now.
type Scaler interface {
	Desired(s ScaleSignal) int
}

// Static always wants N replicas: the fleet sized for the peak.
type Static struct{ N int }

// Desired is N.
func (p Static) Desired(ScaleSignal) int { return p.N }

// TargetTracking keeps sessions per replica at a target: the replicas are
// ceil(sessions in progress / UsersPerReplica) — the plan's measured
// ceiling per replica times a headroom — and, as with the HPA's
// stabilisation window and a target-tracking policy's scale-in cooldown,
// fall only to the highest answer of the last DownStabilization (0: 300 s;
// negative: none). Without it, sessions in progress that hover around a
// multiple of the target (a plateau's Poisson noise) drain a replica and
// start it again within a minute, and every such flap moves sessions off
// and back onto an empty prefix cache: a longer start-up, which filters
// the flaps, then attained more than instant replicas (docs/day.md,
// "Start-up time"). A TargetTracking value is stateful; use one per run.
type TargetTracking struct {
	UsersPerReplica   float64
	DownStabilization time.Duration

	down downStabilizer
}

// Desired is ceil(Sessions / UsersPerReplica), stabilised downwards.
func (p *TargetTracking) Desired(s ScaleSignal) int {
	want := int(math.Ceil(float64(s.Sessions) / p.UsersPerReplica))
	return p.down.apply(s.Now, want, s.Serving+s.Starting, p.DownStabilization)
}

// downStabilizer is the HPA's scale-down stabilisation: a proposal below
// the current replicas is raised to the highest proposal of the window.
type downStabilizer struct{ history []proposal }

type proposal struct {
	at float64
	n  int
}

// DefaultDownStabilization is the scale-down stabilisation window of the
// HPA and of target tracking (the HPA's
// behavior.scaleDown.stabilizationWindowSeconds default).
const DefaultDownStabilization = 300 * time.Second

// apply records want at now and returns the replicas to run: want, or when
// it is below current, the highest proposal of the window (at most
// current). window 0 means DefaultDownStabilization; negative, none.
func (d *downStabilizer) apply(now float64, want, current int, window time.Duration) int {
	switch {
	case window == 0:
		window = DefaultDownStabilization
	case window < 0:
		window = 0
	}
	d.history = append(d.history, proposal{at: now, n: want})
	keep := d.history[:0]
	stable := want
	for _, h := range d.history {
		if now-h.at <= window.Seconds() {
			keep = append(keep, h)
			stable = max(stable, h.n)
		}
	}
	d.history = keep
	if want < current {
		want = min(stable, current)
	}
	return want
}

// HPA metrics (HPA.Metric): a per-pod average the HPA targets.
const (
	// MetricRequestsWaiting is vllm:num_requests_waiting per serving replica.
	MetricRequestsWaiting = "num_requests_waiting"
	// MetricKVCacheUsage is vllm:kv_cache_usage_perc (0-1) per serving replica.
	MetricKVCacheUsage = "kv_cache_usage"
)

// HPAMetrics lists the metrics HPA can target.
var HPAMetrics = []string{MetricRequestsWaiting, MetricKVCacheUsage}

// HPA is the Kubernetes HorizontalPodAutoscaler's algorithm (autoscaling/v2,
// kube-controller-manager defaults) on a vLLM metric averaged over the
// ready pods:
//
//   - ratio = average / Target; within Tolerance of 1 (default 0.1) the
//     replicas stay, otherwise the proposal is ceil(ratio × ready pods);
//     pods still starting have no metric and are not counted, which holds
//     back a scale-up while they start, as the HPA's treatment of unready
//     pods does.
//   - Scale-up is limited per sync to the larger of 4 pods and 100 % of
//     the current replicas (the default scaleUp policies), with no
//     stabilisation window by default.
//   - Scale-down takes the highest proposal of the last
//     DownStabilization (default 300 s): the replicas fall only once the
//     load has been low for the whole window.
//
// An HPA value is stateful (the proposals it remembers); use one per run.
type HPA struct {
	Metric string
	// Target is the per-pod average the HPA aims at (waiting requests, or
	// KV usage in [0, 1]).
	Target float64
	// Tolerance 0 means 0.1; negative means none.
	Tolerance float64
	// DownStabilization 0 means 300 s; negative means none.
	DownStabilization time.Duration

	down downStabilizer
}

// Validate reports a metric HPA does not know or an impossible target.
func (p *HPA) Validate() error {
	switch p.Metric {
	case MetricRequestsWaiting, MetricKVCacheUsage:
	default:
		return fmt.Errorf("hpa: unknown metric %q (%s or %s)", p.Metric, MetricRequestsWaiting, MetricKVCacheUsage)
	}
	if !(p.Target > 0) || (p.Metric == MetricKVCacheUsage && p.Target > 1) {
		return fmt.Errorf("hpa: target %v must be positive (and at most 1 for %s)", p.Target, MetricKVCacheUsage)
	}
	return nil
}

// Desired applies the HPA's algorithm to s.
func (p *HPA) Desired(s ScaleSignal) int {
	current := s.Serving + s.Starting // the scale target's replicas
	tol := p.Tolerance
	switch {
	case tol == 0:
		tol = 0.1
	case tol < 0:
		tol = 0
	}
	want := current
	if s.Serving > 0 {
		var avg float64
		switch p.Metric {
		case MetricKVCacheUsage:
			avg = s.KVUsage
		default:
			avg = float64(s.Waiting) / float64(s.Serving)
		}
		if ratio := avg / p.Target; math.Abs(ratio-1) > tol {
			want = int(math.Ceil(ratio * float64(s.Serving)))
			if ratio > 1 && want <= current {
				want = current // unready pods hold a scale-up back, never reverse it
			}
			if ratio < 1 && want > current {
				want = current
			}
		}
	}
	// scale-up rate: max(4 pods, 100 %) per period
	if limit := current + max(4, current); want > limit {
		want = limit
	}
	return p.down.apply(s.Now, want, current, p.DownStabilization)
}

// validate checks a's bounds against the deployment's replicas.
func (a *Autoscale) validate(replicas int) error {
	if a.Policy == nil {
		return errors.New("autoscale: no policy")
	}
	if v, ok := a.Policy.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("autoscale: %w", err)
		}
	}
	if t, ok := a.Policy.(*TargetTracking); ok && !(t.UsersPerReplica > 0) {
		return fmt.Errorf("autoscale: target tracking needs positive users per replica, got %v", t.UsersPerReplica)
	}
	maxR := a.maxReplicas(replicas)
	switch {
	case a.MaxReplicas > replicas:
		return fmt.Errorf("autoscale: max replicas %d exceeds the deployment's %d", a.MaxReplicas, replicas)
	case a.MinReplicas < 1:
		return fmt.Errorf("autoscale: min replicas must be at least 1, got %d", a.MinReplicas)
	case a.MinReplicas > maxR:
		return fmt.Errorf("autoscale: min replicas %d exceeds max replicas %d", a.MinReplicas, maxR)
	case a.InitialReplicas < 0 || a.InitialReplicas > maxR:
		return fmt.Errorf("autoscale: initial replicas %d not in [0, %d]", a.InitialReplicas, maxR)
	case a.Startup < 0 || a.SyncPeriod < 0:
		return errors.New("autoscale: start-up time and sync period must not be negative")
	}
	return nil
}

func (a *Autoscale) maxReplicas(replicas int) int {
	if a.MaxReplicas == 0 {
		return replicas
	}
	return a.MaxReplicas
}

package config

import (
	"math"
	"sort"

	"github.com/spoc-project/spoc/plan"
)

// Plan turns the ceiling into the buyer's answer: how many deployments,
// GPUs and dollars serve a peak user count.
type Plan struct {
	TargetUsers     int                `yaml:"target_users" doc:"Concurrent users expected at peak; the report then shows the deployments, GPUs and cost that serve them. 0: not asked."`
	Headroom        float64            `yaml:"headroom" doc:"Fraction of the capacity ceiling a deployment is run at, in (0, 1]: 0.8 sizes for 80 % of the ceiling, leaving the rest for bursts and for the ceiling's uncertainty."`
	PeakShares      map[string]float64 `yaml:"peak_shares,omitempty" doc:"Share of the peak's users by workload profile name when the peak's mix differs from the workload's weights, e.g. {P0: 0.5, P1: 0.3, P2: 0.2} (shares in [0, 1] summing to 1). The plan then sweeps the chosen configuration, and every compare target, again at this mix, and the cost section sizes deployments from those ceilings. Empty: the peak has the workload's mix."`
	GPUPricePerHour map[string]float64 `yaml:"gpu_price_per_hour,omitempty" doc:"Price in dollars per GPU-hour by GPU type (the names of engine.gpu and engine.compare), e.g. {H100-SXM: 2.50, H200-SXM: 3.50} (examples only: spoc has no built-in prices). A GPU type left out has no cost computed, not a cost of zero."`
	Fidelity        string             `yaml:"fidelity,omitempty" doc:"Where the plan spends engine time: live (every phase on the engine), simulated (every phase on the simulator of the deployment) or multi (live probes, calibrated simulator search, live verification and final sweep; docs/fidelity.md). Empty: multi on an engine spoc starts, live on an external server (its flags cannot change), simulated on the simulator."`
	Budget          Duration           `yaml:"budget,omitempty" doc:"Engine time the plan may use, e.g. 2h (0: unbounded). A budget below the plan's minimum is refused before anything runs; spoc plan --estimate prints what each fidelity would take."`
	EngineStartup   Duration           `yaml:"engine_startup,omitempty" doc:"Start-up time of one engine server for spoc plan --estimate (0: --estimate measures it by starting the engine once)."`
	RunOverhead     Duration           `yaml:"run_overhead,omitempty" doc:"Engine time one live run takes beyond its windows on your engine (prefix-cache reset, requests in flight at the window's end), for --estimate and plan.budget; 0: the 0.5 s measured on spoc sim serve, an assumption on a real vLLM. Measure it as a live plan's engine seconds less its runs' windows, over its runs."`
	VerifyTopK      int                `yaml:"verify_top_k,omitempty" doc:"How many configurations of a multi plan's calibrated search are run live at and around their predicted ceilings; live keeps the one that passed the most users (docs/fidelity.md). 0: 2."`
	VerifyFleet     int                `yaml:"verify_fleet,omitempty" doc:"Replicas of the small live fleet a plan of one replica on the process engine runs behind fleet.router (HAProxy) at the simulated fleet's ceiling and first failing count, to check the fleet it sizes for target_users (docs/fleet.md). 0: the sized fleet's replicas, at most 3 (3 when no size meets the target); -1: not verified."`
}

// DefaultHeadroom is the fraction of the ceiling a deployment is sized to
// run at unless plan.headroom says otherwise: 80 % leaves a fifth of the
// ceiling for bursts and for the ceiling's uncertainty.
const DefaultHeadroom = 0.8

// DefaultPlan asks no user count and knows no prices.
func DefaultPlan() Plan { return Plan{Headroom: DefaultHeadroom} }

// validatePeak checks plan.peak_shares against the workload's profiles.
func (pl *Plan) validatePeak(p string, profiles []string, errs *Errors) {
	if len(pl.PeakShares) == 0 {
		return
	}
	if pl.TargetUsers == 0 {
		errs.Addf(p+".peak_shares", "sizes the peak of plan.target_users, which is 0: set target_users or remove peak_shares")
	}
	known := map[string]bool{}
	for _, name := range profiles {
		known[name] = true
	}
	names := make([]string, 0, len(pl.PeakShares))
	for name := range pl.PeakShares {
		names = append(names, name)
	}
	sort.Strings(names)
	sum := 0.0
	for _, name := range names {
		v := pl.PeakShares[name]
		switch {
		case !known[name]:
			errs.Addf(p+".peak_shares."+name, "is not a workload profile (profiles: %v)", profiles)
		case !(v >= 0 && v <= 1):
			errs.Addf(p+".peak_shares."+name, "must be a share in [0, 1], got %g", v)
		}
		sum += v
	}
	if math.Abs(sum-1) > 1e-6 {
		errs.Addf(p+".peak_shares", "shares must sum to 1, got %g", sum)
	}
}

func (pl *Plan) validate(p string, errs *Errors) {
	if pl.TargetUsers < 0 {
		errs.Addf(p+".target_users", "must not be negative, got %d", pl.TargetUsers)
	}
	if pl.Fidelity != "" && !oneOf(pl.Fidelity, plan.Fidelities) {
		errs.Addf(p+".fidelity", "unknown fidelity %q (one of %s)", pl.Fidelity, quoteList(plan.Fidelities))
	}
	if pl.Budget < 0 {
		errs.Addf(p+".budget", "must not be negative, got %s", pl.Budget.D())
	}
	if pl.RunOverhead < 0 {
		errs.Addf(p+".run_overhead", "must not be negative, got %s", pl.RunOverhead.D())
	}
	if pl.VerifyFleet < -1 || pl.VerifyFleet == 1 {
		errs.Addf(p+".verify_fleet", "must be -1 (off), 0 (auto) or at least 2 replicas, got %d", pl.VerifyFleet)
	}
	if pl.EngineStartup < 0 {
		errs.Addf(p+".engine_startup", "must not be negative, got %s", pl.EngineStartup.D())
	}
	if pl.VerifyTopK < 0 || pl.VerifyTopK > plan.MaxVerifyTopK {
		errs.Addf(p+".verify_top_k", "must be in [0, %d] (0: %d), got %d", plan.MaxVerifyTopK, plan.DefaultVerifyTopK, pl.VerifyTopK)
	}
	if !(pl.Headroom > 0 && pl.Headroom <= 1) {
		errs.Addf(p+".headroom", "must be in (0, 1], got %g", pl.Headroom)
	}
	gpus := make([]string, 0, len(pl.GPUPricePerHour))
	for g := range pl.GPUPricePerHour {
		gpus = append(gpus, g)
	}
	sort.Strings(gpus) // errors in a stable order
	for _, g := range gpus {
		// a price of 0 would make tokens per dollar infinite; an unknown
		// price is left out instead
		if v := pl.GPUPricePerHour[g]; !(v > 0) || math.IsInf(v, 0) {
			errs.Addf(p+".gpu_price_per_hour."+g, "must be a positive number of dollars per GPU-hour (leave the GPU out when its price is unknown), got %g", v)
		}
	}
}

// demand resolves the section for plan.Setup.
func (pl *Plan) demand() plan.Demand {
	d := plan.Demand{Users: pl.TargetUsers, Headroom: pl.Headroom}
	if len(pl.PeakShares) > 0 {
		d.PeakShares = make(map[string]float64, len(pl.PeakShares))
		for name, v := range pl.PeakShares {
			d.PeakShares[name] = v
		}
	}
	if len(pl.GPUPricePerHour) > 0 {
		d.PricePerGPUHour = make(map[string]float64, len(pl.GPUPricePerHour))
		for g, v := range pl.GPUPricePerHour {
			d.PricePerGPUHour[g] = v
		}
	}
	return d
}

// fidelity resolves the fidelity keys for plan.Setup.
func (pl *Plan) fidelity() plan.Fidelity {
	return plan.Fidelity{Requested: pl.Fidelity, Budget: pl.Budget.D(), Startup: pl.EngineStartup.D(), RunOverhead: pl.RunOverhead.D(), VerifyTopK: pl.VerifyTopK, VerifyFleet: pl.VerifyFleet}
}

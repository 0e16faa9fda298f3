package plan

import (
	"errors"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
)

// Setup is a resolved plan: the capacity Setup every phase evaluates with,
// plus what only a plan does (a kernel trace, hardware comparison, the
// report's title and the assumptions to show). config builds it
// (Config.Setup, with SetupOptions.Plan for the Setup Run runs); Run never
// changes it.
type Setup struct {
	// Setup is what every phase evaluates on: for a simulated plan on a
	// real engine its launcher is Simulator, in virtual time.
	capacity.Setup
	// Simulator is the simulator of the configured deployment, in virtual
	// time: the engine of a simulated plan, of a multi plan's calibrated
	// search and of EstimateEngineTime's dry runs (the Setup's launcher on
	// the sim engine). It is nil when the deployment has no simulated
	// counterpart (Deployment.SimErr says why).
	Simulator *engine.Sim
	// OutDir is the plan's output folder: the study (when its storage is
	// relative), the servers' folders, the trials' and the sweep's records.
	// Run writes no report file there; the CLI writes report's renderings.
	OutDir string
	// Title heads the report.
	Title string
	// Trace is the kernel trace to analyse (File empty: none).
	Trace Trace
	// Compare are the hardware targets of the compare phase, each with its
	// own simulated Setup: hardware the user does not have can only be
	// simulated, and the summary says so.
	Compare []Target
	// Assumptions are the defaults that are assumptions, shown in the report.
	Assumptions []Assumption
	// CalibrationFile is the cost-model calibration the simulator uses
	// (empty: the built-in one).
	CalibrationFile string
	// Quick marks a smoke run (shorter windows, fewer trials), so the
	// summary says its numbers are indicative only.
	Quick bool
	// Fidelity is where the plan spends engine time (fidelity.go).
	Fidelity Fidelity
	// Demand is the peak user count and the prices the cost section
	// sizes deployments for (Users 0: not asked).
	Demand Demand
	// Day, when set, is load over time the plan simulates on the chosen
	// configuration's replicas under autoscaling policies (SimulateDay).
	Day *Day
	// FleetLauncher, when set, starts a live fleet of the given number of
	// the deployment's replicas behind the configured router (a process
	// engine fronted by HAProxy): a plan on one replica that sizes a
	// fleet (plan.target_users) verifies a small one live with it
	// (fleetverify.go). Nil where the engine cannot start one.
	FleetLauncher func(replicas int) (engine.Launcher, error)
}

// Demand is the buyer's question: how many deployments, GPUs and dollars
// serve Users at peak when each deployment runs at Headroom of its ceiling.
type Demand struct {
	// Users is the peak concurrent user count (0: no cost section).
	Users int
	// Headroom is the fraction of the ceiling a deployment is run at, in
	// (0, 1].
	Headroom float64
	// PricePerGPUHour is dollars per GPU-hour by GPU type; a type that is
	// absent has no cost computed.
	PricePerGPUHour map[string]float64
	// PeakShares, when set, is the peak's share of users by workload
	// profile name where it differs from the workload's weights: the plan
	// sweeps the chosen configuration (and every compare target) again at
	// that mix, and the cost section sizes from those ceilings.
	PeakShares map[string]float64
}

// Trace is the Nsight Systems export to analyse.
type Trace struct {
	// File is an nsys SQLite export or a stats CSV.
	File string
	// Window is START:END in seconds from the trace start; empty: all.
	Window string
	// NVTX restricts the analysis to one NVTX range.
	NVTX string
	// Rules is a YAML file of categorisation rules replacing the built-in
	// ones.
	Rules string
}

// Target is one hardware option of the compare phase.
type Target struct {
	Name               string
	GPU                string
	GPUs               int
	TensorParallelSize int
	// Setup is the plan's Setup on this hardware, with a simulator launcher.
	Setup capacity.Setup
}

// simulator is s.Simulator, or why s has none.
func (s Setup) simulator() (*engine.Sim, error) {
	switch {
	case s.Simulator != nil:
		return s.Simulator, nil
	case s.Deployment.SimErr != nil:
		return nil, s.Deployment.SimErr
	}
	return nil, errors.New("the Setup has no simulator of the deployment (config resolves it)")
}

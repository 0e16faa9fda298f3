package plan_test

import (
	"context"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/sim"
)

// sizeDefaultFleet sizes the reference deployment's fleet for 1000 users
// under router, the division taken from its plan's ceiling (165 users).
func sizeDefaultFleet(t *testing.T, router string) *plan.FleetSize {
	t.Helper()
	cfg := config.Default()
	cfg.Fleet.Router = router
	cfg.Plan.TargetUsers = 1000
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	division := 8 // ceil(1000 / (165 users × plan.headroom 0.8))
	params := cfg.Engine.Params
	fs, err := plan.SizeFleet(context.Background(), s.Setup, params, s.Demand, division, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fs.Runs {
		t.Logf("%s: %d replicas at %d users: pass %v %s (hit rate %.1f %%)", router, r.Replicas, fs.TargetUsers, r.Pass, r.FailedClause, 100*r.PrefixHitRate)
	}
	return fs
}

// plan.target_users 1000 on the reference deployment behind session
// affinity: the simulated fleet of R replicas meets the SLA at the target
// and R − 1 does not, both simulated.
func TestFleetSizedBySimulationPassesAtRFailsBelow(t *testing.T) {
	testtool.Long(t, "simulates fleets of 1000 users: about 15 s")
	fs := sizeDefaultFleet(t, "session-affinity")
	if fs.Replicas < 2 || fs.Replicas > fs.MaxReplicas {
		t.Fatalf("fleet of %d replicas (max %d): want a size found", fs.Replicas, fs.MaxReplicas)
	}
	got := map[int]plan.FleetSizeRun{}
	for _, r := range fs.Runs {
		got[r.Replicas] = r
	}
	at, below := got[fs.Replicas], got[fs.Replicas-1]
	if !at.Pass || below.Replicas != fs.Replicas-1 || below.Pass || below.FailedClause == "" {
		t.Errorf("R = %d: run %+v; R - 1: run %+v; want R passing and R - 1 simulated and failing", fs.Replicas, at, below)
	}
	if fs.Provenance.Source != "simulated" {
		t.Errorf("provenance %+v", fs.Provenance)
	}
}

// A multi plan's correction reaches the fleet: each simulated fleet runs
// the corrected cost model (its runs say simulated-calibrated), and a
// replica measured slower than the built-in model needs more replicas for
// the same users.
func TestFleetSizedWithTheCalibrationOfAMultiPlan(t *testing.T) {
	testtool.Long(t, "simulates three fleets of 150 users: about 4 s")
	cfg := config.Default()
	cfg.Fleet.Router = "session-affinity"
	cfg.Plan.TargetUsers = 150
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size := func(corr *sim.Correction) *plan.FleetSize {
		fs, err := plan.SizeFleet(context.Background(), s.Setup, cfg.Engine.Params, s.Demand, 1, corr, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Runs {
			t.Logf("correction %+v: %d replicas at %d users: pass %v %s", corr, r.Replicas, fs.TargetUsers, r.Pass, r.FailedClause)
		}
		return fs
	}
	plain := size(nil)
	slow := size(&sim.Correction{Compute: 3, Memory: 3})
	if plain.Correction != nil || plain.Provenance.Source != "simulated" {
		t.Errorf("uncorrected fleet: correction %+v, provenance %+v", plain.Correction, plain.Provenance)
	}
	if slow.Correction == nil || slow.Correction.Compute != 3 || slow.Provenance.Source != "simulated-calibrated" {
		t.Errorf("corrected fleet: correction %+v, provenance %+v; want the correction and simulated-calibrated", slow.Correction, slow.Provenance)
	}
	if plain.Replicas == 0 || slow.Replicas <= plain.Replicas {
		t.Errorf("a replica three times as slow needs %d replicas for %d users, the built-in one %d: want more", slow.Replicas, slow.TargetUsers, plain.Replicas)
	}
	if _, err := plan.SizeFleet(context.Background(), s.Setup, cfg.Engine.Params, s.Demand, 1, &sim.Correction{Compute: -1, Memory: 1}, nil); err == nil {
		t.Error("a negative compute correction sized a fleet")
	}
}

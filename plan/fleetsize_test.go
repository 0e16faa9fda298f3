package plan_test

import (
	"context"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
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
	fs, err := plan.SizeFleet(context.Background(), s.Setup, params, s.Demand, division, nil)
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
	if testing.Short() {
		t.Skip("simulates fleets of 1000 users: about 15 s")
	}
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

package plan

import "testing"

// A fleet agrees only when a load ran and every load run was judged on
// both sides with the same verdict (walkthrough: a verification whose
// simulated runs were unjudged, or whose live run completed nothing, read
// "agrees").
func TestFleetAgreesOnlyOnJudgedMatchingRuns(t *testing.T) {
	pass := FleetVerifyRun{Users: 80, PredictedPass: true, LivePass: true, LiveRequests: 300}
	fail := FleetVerifyRun{Users: 88, LiveRequests: 320}
	for _, tc := range []struct {
		name string
		runs []FleetVerifyRun
		want bool
	}{
		{"pass then fail, as predicted", []FleetVerifyRun{pass, fail}, true},
		{"no load run", nil, false},
		{"live passes where predicted to fail", []FleetVerifyRun{pass, {Users: 88, LivePass: true, LiveRequests: 320}}, false},
		{"simulated run unjudged", []FleetVerifyRun{{Users: 80, PredictedPass: true, PredictedUnjudged: true, LivePass: true, LiveRequests: 300}, fail}, false},
		{"live run unjudged", []FleetVerifyRun{pass, {Users: 88, LiveUnjudged: true}}, false},
	} {
		if got := fleetAgrees(tc.runs); got != tc.want {
			t.Errorf("%s: agree %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The live fleet check runs for a sized fleet (at most 3 replicas unless
// plan.verify_fleet says), and when no size met the target; never for a
// fleet of one or when switched off.
func TestVerifyReplicas(t *testing.T) {
	for _, tc := range []struct{ sized, verify, want int }{
		{sized: 1, verify: 0, want: 0},
		{sized: 1, verify: 2, want: 0},
		{sized: 2, verify: 0, want: 2},
		{sized: 6, verify: 0, want: 3},
		{sized: 6, verify: 2, want: 2},
		{sized: 0, verify: 0, want: 3},
		{sized: 0, verify: 2, want: 2},
		{sized: 6, verify: -1, want: 0},
		{sized: 0, verify: -1, want: 0},
	} {
		if got := verifyReplicas(tc.sized, tc.verify); got != tc.want {
			t.Errorf("sized %d, verify_fleet %d: %d replicas, want %d", tc.sized, tc.verify, got, tc.want)
		}
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// Issue 32, "on a live engine the plan verifies a small fleet within
// plan.budget and reports predicted vs measured": a multi plan of one
// `spoc sim serve` replica sizes the fleet for plan.target_users by
// simulating it behind round-robin, then starts two replicas behind the
// HAProxy spoc configures and runs them live at the simulated fleet's
// ceiling and first failing count. The summary keeps both verdicts beside
// the predictions, each live run's records, and the fleet's engine time in
// the plan's; the report says whether they agree.
func TestPlanVerifiesASmallLiveFleet(t *testing.T) {
	testtool.Long(t, "a live multi plan of one spoc sim serve replica, then two replicas behind HAProxy in real time: about 90 s")
	haproxy := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := multiPlanConfig(t, dir, spoc, "  target_users: 150\n  verify_fleet: 2\nfleet:\n  router: round-robin\n  haproxy: "+haproxy+"\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	sum := readSummary(t, out)
	if sum.Cost == nil || sum.Cost.Fleet == nil || sum.Cost.Fleet.Verified == nil {
		t.Fatalf("summary has no verified fleet\n%s", stderr)
	}
	fs, v := sum.Cost.Fleet, sum.Cost.Fleet.Verified
	// a fleet, or none of any size (the router fails: a calibration on a
	// loaded machine can say so, and the live check is then what tells)
	if fs.Replicas == 1 {
		t.Fatalf("the sized fleet has 1 replica: the target should need a fleet\n%s", stderr)
	}
	if v.Replicas != 2 || v.Router != "round-robin" || v.Skipped != "" {
		t.Fatalf("verified fleet %+v: want 2 replicas behind round-robin, run", v)
	}
	if v.PredictedCeiling <= 0 && fs.Replicas == 0 {
		// no simulated size served the target, and the small fleet's
		// walk passed nothing: the one live run is at its first failing
		// count
		if len(v.Runs) != 1 || v.Runs[0].Users != v.PredictedFirstFailing || v.Runs[0].Aim != "first failing" {
			t.Fatalf("verified fleet: predicted ceiling 0 (first failing %d), runs %+v: want one live run at the first failing count", v.PredictedFirstFailing, v.Runs)
		}
	} else {
		if v.PredictedCeiling <= 0 || len(v.Runs) != 2 || v.Runs[0].Users < v.PredictedCeiling || v.Runs[1].Users != v.PredictedFirstFailing {
			t.Fatalf("verified fleet: predicted %d (first failing %d), runs %+v: want a live run at each", v.PredictedCeiling, v.PredictedFirstFailing, v.Runs)
		}
		// each run says which count of the simulated walk it aimed at
		if a := v.Runs[0].Aim; !(a == "ceiling" && v.Runs[0].Users == v.PredictedCeiling || a == "unconfirmed" && v.Runs[0].Users > v.PredictedCeiling) || v.Runs[1].Aim != "first failing" {
			t.Errorf("runs aimed at %q (%d users) and %q (%d users), simulated ceiling %d", a, v.Runs[0].Users, v.Runs[1].Aim, v.Runs[1].Users, v.PredictedCeiling)
		}
	}
	agree := true
	for _, r := range v.Runs {
		if r.Provenance.Source != "live" {
			t.Errorf("fleet run at %d users: provenance %q, want live", r.Users, r.Provenance.Source)
		}
		b, err := os.ReadFile(filepath.Join(out, r.Records))
		if err != nil || strings.Count(string(b), "\n") < r.Users {
			t.Errorf("fleet run at %d users: records %s: %d lines, %v", r.Users, r.Records, strings.Count(string(b), "\n"), err)
		}
		if r.LiveRequests == 0 && !r.LiveUnjudged {
			t.Errorf("fleet run at %d users completed no request yet reads as judged", r.Users)
		}
		agree = agree && r.LivePass == r.PredictedPass && !r.LiveUnjudged && !r.PredictedUnjudged
	}
	agree = agree && len(v.Runs) > 0
	if v.Agree != agree {
		t.Errorf("agree %v, but the runs say %v: %+v", v.Agree, agree, v.Runs)
	}
	if v.EngineSeconds <= 0 || sum.Fidelity.LiveEngineSeconds < v.EngineSeconds {
		t.Errorf("fleet engine time %.1f s, plan's live engine time %.1f s: the fleet's must be counted in the plan's", v.EngineSeconds, sum.Fidelity.LiveEngineSeconds)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "servers-fleet-2", "server-*", "replica-*.log"))
	cfgs, _ := filepath.Glob(filepath.Join(out, "servers-fleet-2", "server-*", "haproxy.cfg"))
	if len(logs) != 2 || len(cfgs) != 1 {
		t.Fatalf("the fleet left %d replica logs and %d HAProxy configurations; want two replicas behind one HAProxy", len(logs), len(cfgs))
	}
	if b, _ := os.ReadFile(cfgs[0]); !strings.Contains(string(b), "balance roundrobin") {
		t.Errorf("haproxy.cfg is not round-robin:\n%s", b)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	head := "Live fleet check: 2 replicas behind round-robin"
	if v.Agree {
		head = "Verified live: 2 replicas behind round-robin"
	}
	if !strings.Contains(string(html), head) {
		t.Errorf("report.html does not show the fleet check as %q", head)
	}
	for _, r := range v.Runs {
		t.Logf("%d users (%s): predicted pass %v unjudged %v, %d completed, hit rate %.2f; live pass %v unjudged %v, %d completed, hit rate %.2f",
			r.Users, r.Aim, r.PredictedPass, r.PredictedUnjudged, r.PredictedRequests, r.Predicted.PrefixCacheHitRate, r.LivePass, r.LiveUnjudged, r.LiveRequests, r.Measured.PrefixCacheHitRate)
	}
	// the terminal says it too: a plan's stdout is what gets pasted
	if !strings.Contains(stdout, "fleet: ") || !strings.Contains(stdout, "fleet check: 2 replicas live behind round-robin") {
		t.Errorf("stdout lacks the fleet's size and live check:\n%s", stdout)
	}
	if !strings.Contains(stderr, "fleet verify 2 replicas") {
		t.Errorf("no progress line for the fleet's live runs:\n%s", stderr)
	}
}

// A plan that will verify a fleet checks the router's binary before it
// spends engine time: a wrong fleet.haproxy found after the whole live
// plan would stop it at its last step.
func TestPlanChecksTheFleetRouterBeforeItStarts(t *testing.T) {
	spoc := spocBinary(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-haproxy")
	cfg := multiPlanConfig(t, dir, spoc, "  target_users: 150\nfleet:\n  router: round-robin\n  haproxy: "+missing+"\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code == 0 {
		t.Fatalf("plan with a missing HAProxy exit 0\n%s", stdout)
	}
	for _, want := range []string{missing, "fleet.haproxy", "plan.verify_fleet: -1"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*")); len(logs) != 0 {
		t.Errorf("a server was started before the check: %v", logs)
	}
}

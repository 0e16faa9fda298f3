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
	if fs.Replicas < 2 {
		t.Fatalf("the sized fleet has %d replicas: the target should need a fleet\n%s", fs.Replicas, stderr)
	}
	if v.Replicas != 2 || v.Router != "round-robin" || v.Skipped != "" {
		t.Fatalf("verified fleet %+v: want 2 replicas behind round-robin, run", v)
	}
	if v.PredictedCeiling <= 0 || len(v.Runs) != 2 || v.Runs[0].Users < v.PredictedCeiling || v.Runs[1].Users != v.PredictedFirstFailing {
		t.Fatalf("verified fleet: predicted %d (first failing %d), runs %+v: want a live run at each", v.PredictedCeiling, v.PredictedFirstFailing, v.Runs)
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
		agree = agree && r.LivePass == r.PredictedPass && !r.LiveUnjudged
	}
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
	if !strings.Contains(string(html), "Verified live: 2 replicas behind round-robin") {
		t.Error("report.html does not show the verified fleet")
	}
	if !strings.Contains(stderr, "fleet verify 2 replicas") {
		t.Errorf("no progress line for the fleet's live runs:\n%s", stderr)
	}
}

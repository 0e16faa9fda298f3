package study

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/random"
)

// The helper process: `go test -run TestKillHelper` with SPOC_STUDY_HELPER
// set runs a 12-trial study in that SQLite file. While the file named by
// SPOC_STUDY_BLOCK exists, trial 4 hangs, so the parent can kill -9 the
// helper with that trial RUNNING.
const killTrials = 12

func TestKillHelper(t *testing.T) {
	path := os.Getenv("SPOC_STUDY_HELPER")
	if path == "" {
		t.Skip("helper process for TestKillResume")
	}
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.CreateOrLoad(ctx, testConfig("killme"))
	if err != nil {
		t.Fatal(err)
	}
	block := os.Getenv("SPOC_STUDY_BLOCK")
	_, err = Optimize(ctx, Options{
		Study: st, Sampler: random.New(st.Seed), Trials: killTrials,
		HeartbeatInterval: 50 * time.Millisecond, StaleAfter: 500 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		Objective: func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
			if tc.Number == 4 {
				for {
					if _, err := os.Stat(block); err != nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			time.Sleep(20 * time.Millisecond)
			return objective(ctx, tc)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKillResume kills a study process with SIGKILL while a trial runs, runs
// the same command again, and checks that the study ends with exactly the
// budget of COMPLETE trials, the killed trial marked FAIL and its slot
// re-run with the same parameters, and no trial lost or duplicated.
func TestKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "study.db")
	block := filepath.Join(dir, "block")
	if err := os.WriteFile(block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	helper := func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SPOC_STUDY_HELPER="+path, "SPOC_STUDY_BLOCK="+block)
		return cmd
	}
	first := helper()
	out := &lockedBuffer{}
	first.Stdout, first.Stderr = out, out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for trial 4 to be RUNNING, then kill -9.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if state := trialState(t, path, 4); state == search.StateRunning {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("trial 4 never ran; helper output:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	os.Remove(block)

	second := helper()
	if b, err := second.CombinedOutput(); err != nil {
		t.Fatalf("resume failed: %v\n%s", err, b)
	}

	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Load(context.Background(), "killme")
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != killTrials+1 {
		t.Fatalf("%d trials, want %d (budget plus the killed one)", len(trials), killTrials+1)
	}
	killed := trials[4]
	if killed.State != search.StateFail {
		t.Fatalf("killed trial 4 is %s", killed.State)
	}
	rerun := int(killed.SystemAttrs["requeued_as"].(float64))
	var complete []search.Trial
	for _, tr := range trials {
		if tr.Number != 4 {
			complete = append(complete, tr)
		}
	}
	// Renumber-free check: every other trial COMPLETE with distinct params.
	seen := map[string]int{}
	for _, tr := range complete {
		if tr.State != search.StateComplete {
			t.Fatalf("trial %d is %s: %v", tr.Number, tr.State, tr.SystemAttrs)
		}
		if j, dup := seen[tr.Params.Key()]; dup {
			t.Fatalf("trials %d and %d ran the same parameters", j, tr.Number)
		}
		seen[tr.Params.Key()] = tr.Number
	}
	if trials[rerun].Params.Key() != killed.Params.Key() {
		t.Fatalf("re-run %d has params %v, killed trial had %v", rerun, trials[rerun].Params, killed.Params)
	}
	if fmt.Sprint(trials[rerun].SystemAttrs["retry_of"]) != "4" {
		t.Fatalf("re-run system attrs %v", trials[rerun].SystemAttrs)
	}
}

func trialState(t *testing.T, path string, number int) search.TrialState {
	t.Helper()
	db, err := Open(context.Background(), path)
	if err != nil {
		return ""
	}
	defer db.Close()
	var state string
	err = db.sql.QueryRow(`SELECT state FROM trials WHERE number = ?`, number).Scan(&state)
	if err != nil {
		return ""
	}
	return search.TrialState(state)
}

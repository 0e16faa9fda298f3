package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// openLoopConfig is the small workload with sessions arriving at 3 a
// second (seed 7) for spoc run and spoc sim run.
const openLoopConfig = smallWorkload + `  seed: 7
run:
  warmup: 300ms
  duration: 3s
  arrivals:
    rate:
      - {at: 0s, sessions_per_minute: 180}
`

// firstTurns reads records and returns each session's first turn by user.
func firstTurns(t *testing.T, path string) map[int]*result.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := map[int]*result.Record{}
	if _, err := result.ReadAll(f, path, func(r *result.Record) error {
		if r.Session != 0 {
			t.Errorf("user %d ran session %d: an open-loop user runs one session", r.User, r.Session)
		}
		if r.Turn == 0 {
			first[r.User] = r
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return first
}

// A live spoc run with run.arrivals sends each session's first turn at its
// arrival time (the Poisson process drawn from the workload seed), the
// server receives it then, and spoc sim run schedules the same sessions at
// the same times.
func TestRunOpenLoopSendsFirstTurnsOnSchedule(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: time.Millisecond, KeepLog: true})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte(openLoopConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.jsonl")
	code, stdout, stderr := runLoadCLI(t, "run", "-c", cfg, "--target", srv.URL, "--out", live, "--json")
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	var out struct {
		Sessions *workload.SessionStats `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Sessions == nil {
		t.Fatalf("run --json has no sessions (%v):\n%s", err, stdout)
	}
	want, err := (&workload.Arrivals{Rate: []workload.RatePoint{{PerSecond: 3}}, Seed: 7}).Times(nil, 3.3)
	if err != nil {
		t.Fatal(err)
	}
	if out.Sessions.Arrived != len(want) {
		t.Fatalf("%d sessions arrived, the process has %d before the end", out.Sessions.Arrived, len(want))
	}
	first := firstTurns(t, live)
	if len(first) != len(want) {
		t.Fatalf("%d first turns recorded, want %d", len(first), len(want))
	}
	received := map[string]time.Time{}
	for _, q := range srv.Log() {
		received[q.ID] = q.Received
	}
	origin := first[0].Scheduled.Add(-workload.Offset(want[0]))
	lags := make([]time.Duration, 0, len(want))
	for u, at := range want {
		r := first[u]
		if got := r.Scheduled.Sub(origin); got != workload.Offset(at) {
			t.Errorf("session %d scheduled at %v, its arrival is %v", u, got, workload.Offset(at))
		}
		if r.Sent.IsZero() {
			t.Fatalf("session %d's first turn not sent: %s %s", u, r.Status, r.Error)
		}
		lags = append(lags, r.DispatchLag())
		if got, ok := received[r.RequestID]; !ok || got.Before(r.Scheduled) || got.Sub(r.Scheduled) > time.Second {
			t.Errorf("session %d: server received its first turn at %v, scheduled %v", u, got, r.Scheduled)
		}
	}
	slices.Sort(lags)
	p99 := lags[int(math.Ceil(0.99*float64(len(lags))))-1]
	t.Logf("%d sessions, first-turn dispatch lag p50 %v p99 %v; in progress mean %.1f peak %d",
		len(lags), lags[len(lags)/2], p99, out.Sessions.MeanActive, out.Sessions.PeakActive)
	if p99 > 250*time.Millisecond {
		t.Errorf("first-turn dispatch lag p99 %v: sessions are not sent at their arrival times", p99)
	}

	simulated := filepath.Join(dir, "sim.jsonl")
	code, stdout, stderr = runLoadCLI(t, "sim", "run", "-c", cfg, "--out", simulated)
	if code != 0 {
		t.Fatalf("sim run exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "open-loop sessions: ") {
		t.Errorf("sim run prints no sessions line:\n%s", stdout)
	}
	sfirst := firstTurns(t, simulated)
	if len(sfirst) != len(want) {
		t.Fatalf("simulator: %d first turns, want %d", len(sfirst), len(want))
	}
	epoch := time.Unix(0, 0).UTC()
	for u, at := range want {
		if got := sfirst[u].Scheduled.Sub(epoch); got != workload.Offset(at) {
			t.Errorf("simulator: session %d scheduled at %v, its arrival is %v", u, got, workload.Offset(at))
		}
	}
}

func TestRunArrivalsBadInput(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"run:\n  arrivals:\n    rate:\n      - {at: 0s, sessions_per_minute: 6}\n      - {at: 5m, sessions_per_minute: 6}\n      - {at: 2m, sessions_per_minute: 6}\n",
			":6:10: run.arrivals.rate[2].at: must be after rate[1].at (5m0s), got 2m0s"},
		{"run:\n  arrivals:\n    rate:\n      - {at: -1m, sessions_per_minute: 6}\n", ":4:10: run.arrivals.rate[0].at: must not be negative"},
		{"run:\n  arrivals:\n    rate:\n      - {at: 0s, sessions_per_minute: -6}\n", "run.arrivals.rate[0].sessions_per_minute: must be a non-negative number"},
		{"run:\n  arrivals:\n    trace: true\n", "run.arrivals.trace: replays an imported trace's timestamps: set workload.import"},
		{"run:\n  arrivals:\n    compression: 2\n", "run.arrivals: needs rate"},
		{"run:\n  arrivals:\n    rate_per_minute: 2\n", "rate_per_minute"},
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "spoc.yaml")
		if err := os.WriteFile(cfg, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runLoadCLI(t, "sim", "run", "-c", cfg)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "spoc.yaml") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d naming the file and %q", tc.yaml, code, stderr, ExitUsage, tc.want)
		}
	}
}

// A timestamped trace (Bailian's chained turns, each a timed request)
// replays at its recorded times divided by the compression factor.
func TestSimRunReplaysTraceTimestampsCompressed(t *testing.T) {
	trace, err := filepath.Abs("../../../../workload/testdata/bailian_trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	yaml := "workload:\n  import: {format: bailian, path: " + trace + "}\nrun:\n  warmup: 0s\n  duration: 5s\n  arrivals: {trace: true, compression: 10}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "r.jsonl")
	code, _, stderr := runLoadCLI(t, "sim", "run", "-c", cfg, "--out", recs)
	if code != 0 {
		t.Fatalf("sim run exit %d: %s", code, stderr)
	}
	first := firstTurns(t, recs)
	epoch := time.Unix(0, 0).UTC()
	// recorded at 61.114, 75.002 and 75.500 s: 0, 13.888 and 14.386 s in
	for u, want := range []time.Duration{0, 1388800 * time.Microsecond, 1438600 * time.Microsecond} {
		r, ok := first[u]
		if !ok {
			t.Fatalf("trace request %d not replayed", u)
		}
		if got := r.Scheduled.Sub(epoch); got != want {
			t.Errorf("trace request %d scheduled at %v, want %v (recorded / 10)", u, got, want)
		}
	}
}

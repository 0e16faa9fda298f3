package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/plan"
)

// fakeClock advances by the step given to it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// Off a terminal, progress is one plain line per event: no carriage return
// or escape sequence, the phase's elapsed time on every line, the ETA from
// the steps left times the mean step time, "ETA unknown" when the count is
// unknown, "≤" when it is a bound, every step line within 100 columns.
func TestProgressOffTerminal(t *testing.T) {
	var out bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	p := newProgress(&out, false)
	p.now = clk.now
	ev := func(e plan.Event, after time.Duration) {
		clk.t = clk.t.Add(after)
		e.Phase, e.Phases = "tune", 7
		e.Index = 3
		p.planEvents(e)
	}
	ev(plan.Event{Kind: plan.PhaseStarted}, 0)
	ev(plan.Event{Kind: plan.Step, Text: "study \"default\" in sqlite:out/study.db: 60 trials of 175 users, 5m0s each"}, time.Second)
	// a resumed study: 10 trials ran before this process; the 11th took
	// 19 s after the note, the 12th 20 s: 19.5 s a trial, 48 left
	ev(plan.Event{Kind: plan.Step, Text: "#10 2571 tok/s ttft95 929.3ms itl95 25.47ms ok front 1 best", Done: 11, Total: 60}, 19*time.Second)
	ev(plan.Event{Kind: plan.Step, Text: "#11 " + strings.Repeat("very long detail ", 10), Done: 12, Total: 60}, 20*time.Second)
	ev(plan.Event{Kind: plan.Step, Text: "grid 200 users FAIL", Done: 3, Total: 9, TotalIsBound: true}, 20*time.Second)
	ev(plan.Event{Kind: plan.PhaseDone, Text: "60 trials (60 complete, 0 infeasible, 0 failed), 6 on the feasible front"}, 0)
	p.Close()

	got := out.String()
	if strings.ContainsAny(got, "\r\033") {
		t.Errorf("terminal control characters off a terminal:\n%q", got)
	}
	want := []string{
		"== tune (phase 3/7)",
		" 0:01 study \"default\" in sqlite:out/study.db: 60 trials of 175 users, 5m0s each",
		" 0:20 11/60 ETA 15:31 #10 2571 tok/s ttft95 929.3ms itl95 25.47ms ok front 1 best",
		" 0:40 12/60 ETA 15:36 #11 very long detail",
		" 1:00 3/≤9 ETA ≤2:00 grid 200 users FAIL", // a new count, timed from the step before
		" 1:00 tune done: 60 trials (60 complete, 0 infeasible, 0 failed), 6 on the feasible front",
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), got)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q…", i, l, want[i])
		}
		if n := utf8.RuneCountInString(l); n > progressWidth && i != len(lines)-1 {
			t.Errorf("line %d is %d columns: %q", i, n, l)
		}
	}
	if !strings.HasSuffix(lines[3], "…") {
		t.Errorf("a cut line does not say so: %q", lines[3])
	}
}

// Until a phase has timed a step its ETA is unknown, not a guess.
func TestProgressETAUnknownBeforeAStep(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, false)
	p.begin("sweep", 0, 0, 0, false)
	p.step("grid 25 users pass", 1, 0, false)
	p.Close()
	if !strings.Contains(out.String(), " 1/? ETA unknown grid 25 users pass") {
		t.Errorf("unknown total: %q", out.String())
	}
}

// On a terminal the status line is redrawn in place and cleared before
// every permanent line and at the end.
func TestProgressOnTerminal(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, true)
	p.begin("tune", 3, 7, 0, false)
	p.step("#0 ok", 1, 4, false)
	p.Close()
	got := out.String()
	if !strings.Contains(got, "\r\033[Ktune (phase 3/7)  1/4  elapsed 0:00") || !strings.HasSuffix(got, "\r\033[K") {
		t.Errorf("status line not drawn and cleared:\n%q", got)
	}
}

// spoc run off a terminal prints its counters with the elapsed time and the
// ETA from the run's known length, one line at most every 30 s, and no
// terminal control characters.
func TestRunProgressOffTerminal(t *testing.T) {
	var out bytes.Buffer
	p := &progressLine{w: &out, users: 50, start: time.Now().Add(-90 * time.Second), total: 10 * time.Minute}
	p.show(loadgen.Progress{ActiveUsers: 50, Requests: 120})
	p.show(loadgen.Progress{ActiveUsers: 50, Requests: 121}) // within 30 s: not printed
	p.clear()
	got := out.String()
	if strings.Count(got, "\n") != 1 || strings.ContainsAny(got, "\r\033") {
		t.Fatalf("want one plain line, got %q", got)
	}
	if !strings.HasPrefix(got, "1:30/10:00 ETA 8:30  users 50/50") {
		t.Errorf("line %q lacks the elapsed time and ETA", got)
	}
}

// A live run of minutes shows progress from its first report (about a
// second in), before its level is done; then, off a terminal, a line only
// after 30 s without any: a heartbeat, not a line a second. On a terminal
// the run goes into the status line.
func TestProgressShowsALiveRunFromItsFirstSecond(t *testing.T) {
	var out bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	p := newProgress(&out, false)
	p.now = clk.now
	ev := func(e plan.Event, after time.Duration) {
		clk.t = clk.t.Add(after)
		e.Phase, e.Index, e.Phases = "baseline", 2, 8
		p.planEvents(e)
	}
	ev(plan.Event{Kind: plan.PhaseStarted}, 0)
	ev(plan.Event{Kind: plan.Running, Text: "run at 8 users 0:01/5:00"}, time.Second)
	for i := 2; i <= 31; i++ {
		ev(plan.Event{Kind: plan.Running, Text: fmt.Sprintf("run at 8 users 0:%02d/5:00", i)}, time.Second)
	}
	ev(plan.Event{Kind: plan.Step, Text: "grid 8 users ok", Done: 1, Total: 10, TotalIsBound: true}, 4*time.Minute)
	ev(plan.Event{Kind: plan.Running, Text: "run at 16 users 0:01/5:00"}, time.Second) // within 30 s of a line
	p.Close()
	want := []string{
		"== baseline (phase 2/8)",
		" 0:01 run at 8 users 0:01/5:00",
		" 0:31 run at 8 users 0:31/5:00",
		" 4:31 1/≤10 ETA ≤40:39 grid 8 users ok",
	}
	if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out.Reset()
	p = newProgress(&out, true)
	p.begin("baseline", 2, 8, 0, false)
	p.planEvents(plan.Event{Kind: plan.Running, Text: "run at 8 users 0:01/5:00"})
	p.Close()
	if got := out.String(); !strings.Contains(got, "\r\033[Kbaseline (phase 2/8)  elapsed 0:00  ETA unknown  run at 8 users 0:01/5:00") {
		t.Errorf("status line on a terminal: %q", got)
	}
}

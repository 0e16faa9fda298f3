package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoc-project/spoc/capacity"
)

// EventKind says what an Event marks in a plan's progress.
type EventKind int

// Event kinds.
const (
	// PhaseStarted opens a phase; Text is empty.
	PhaseStarted EventKind = iota
	// Step is one finished step of the phase (a sweep level, a trial, a
	// candidate) or a line of what the phase decided.
	Step
	// PhaseDone closes a phase; Text says what it found.
	PhaseDone
	// Running reports a live run in progress, about once a second, with
	// the client's counters (a server's start is a Step note).
	// It counts no step (Done and Total are zero) and only Options.Events
	// receives it: a plain Progress writer would get a line a second.
	Running
)

// Event is one item of a plan's progress stream. The plan says what
// happened and how much of the phase is done; the CLI renders it (elapsed
// time, ETA, in-place on a terminal). Done and Total count the phase's
// steps when they are known: an ETA is only ever computed from them.
type Event struct {
	Kind EventKind
	// Phase is the phase's name (workload, baseline, tune, …); Index and
	// Phases place it in the plan (1-based).
	Phase         string
	Index, Phases int
	// Text is one line, without indentation or timing.
	Text string
	// Done counts the phase's finished steps, this one included, when the
	// event counts one (0: it does not). Total is how many the phase runs
	// (0: unknown). TotalIsBound says Total is an upper bound: a sweep
	// stops at its first failure, so its levels are at most Total.
	Done, Total  int
	TotalIsBound bool
	// Elapsed is the phase's duration, on PhaseDone.
	Elapsed time.Duration
}

// String is the event as a plain line: the form Options.Progress receives.
func (e Event) String() string {
	switch e.Kind {
	case PhaseStarted:
		return "== " + e.Phase
	case PhaseDone:
		return fmt.Sprintf("   %s done in %.1fs%s", e.Phase, e.Elapsed.Seconds(), ifNotEmpty(": ", e.Text))
	}
	return "   " + e.Text
}

// emit sends e to the Events callback, or as a plain line to Progress.
func (p *planner) emit(e Event) {
	e.Phase, e.Index, e.Phases = p.phaseName, p.phaseIndex, p.phases
	if p.o.Events != nil {
		p.o.Events(e)
		return
	}
	if p.o.Progress != nil && e.Kind != Running {
		fmt.Fprintln(p.o.Progress, e.String())
	}
}

// logf is a step of the current phase that counts nothing.
func (p *planner) logf(format string, args ...any) {
	p.emit(Event{Kind: Step, Text: strings.TrimLeft(fmt.Sprintf(format, args...), " ")})
}

// stepf is a counted step: done of total (total 0: unknown; bound: at most).
func (p *planner) stepf(done, total int, bound bool, format string, args ...any) {
	p.emit(Event{Kind: Step, Text: fmt.Sprintf(format, args...), Done: done, Total: total, TotalIsBound: bound})
}

// watchRuns makes ev's live runs report as Running events: a run of
// minutes on a real server shows progress from its first second.
func (p *planner) watchRuns(ev *capacity.Evaluator) {
	if p.o.Events == nil || ev.Virtual() {
		return
	}
	ev.WatchRuns(func(st capacity.RunStatus) {
		if st.Starting {
			// an event of its own (a server's start takes minutes), not a tick
			p.logf("%s", st.Line())
			return
		}
		p.emit(Event{Kind: Running, Text: st.Line()})
	})
}

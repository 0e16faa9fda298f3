package cli

import (
	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/tune"
)

// The library's progress events (a plan's phases, a study's trials, a
// sweep's levels, a live run's counters) as the progress display's lines.

// liveRun renders a live run's status for verbs that watch their
// evaluator themselves (spoc sweep, spoc tune): a server's start as a
// line, the run's counters as running does.
func (p *progress) liveRun(st capacity.RunStatus) {
	if st.Starting {
		p.note(st.Line())
		return
	}
	p.running(st.Line())
}

// planEvents renders a plan's progress events.
func (p *progress) planEvents(e plan.Event) {
	switch e.Kind {
	case plan.PhaseStarted:
		p.begin(e.Phase, e.Index, e.Phases, 0, false)
	case plan.PhaseDone:
		p.end(e.Text)
	case plan.Running:
		p.running(e.Text)
	default:
		p.step(e.Text, e.Done, e.Total, e.TotalIsBound)
	}
}

// within starts phase name unless it is the one running: for verbs whose
// library call has phases without announcing them (spoc tune's baseline).
func (p *progress) within(name string) {
	p.mu.Lock()
	running := p.phase == name
	p.mu.Unlock()
	if !running {
		p.begin(name, 0, 0, 0, false)
	}
}

// trial renders a finished tune trial.
func (p *progress) trial(pr tune.Progress) {
	p.within("tune")
	p.step(tune.ProgressLine(pr), pr.Finished, pr.Total, false)
}

// sweepLevels returns a sweep's progress callback: one line per repeat of
// every level, counted against the most levels the sweep can run.
func (p *progress) sweepLevels(opts capacity.SweepOptions) func(capacity.Level, string) {
	done, most := 0, opts.MaxLevels()
	return func(l capacity.Level, phase string) {
		done++
		for i := range l.Repeats {
			p.step(capacity.LevelLine(phase, l, i), done, max(most, done), true)
		}
	}
}

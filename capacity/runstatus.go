package capacity

import (
	"fmt"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
)

// A live run lasts minutes: its status is reported while it goes on, so
// that every verb can show progress from the run's first second.

// RunStatus is a live evaluation in progress: the server starting for it,
// or the load running on it with the client's counters so far.
type RunStatus struct {
	Load Load
	// Starting is set when spoc starts a server for the run (nothing sent
	// yet; never for an external server); Elapsed and Progress then are
	// zero.
	Starting bool
	// Elapsed is the time since the first user started; Length is the
	// run's planned length (warm-up plus the measured window).
	Elapsed, Length time.Duration
	Progress        loadgen.Progress
}

// Line is the status as one line of progress: the server's start, or the
// run's elapsed time of its length and the client's counters so far.
func (st RunStatus) Line() string {
	users := fmt.Sprintf("%d users", st.Load.Users)
	if st.Load.SeedOffset > 0 {
		users += fmt.Sprintf(" (seed +%d)", st.Load.SeedOffset)
	}
	if st.Starting {
		return "starting the server for the run at " + users
	}
	pr := st.Progress
	return fmt.Sprintf("run at %s %s/%s: %d active %d in flight %d done %d errors ttft95 %s itl95 %s",
		users, minSec(st.Elapsed), minSec(st.Length), pr.ActiveUsers, pr.InFlight, pr.Requests, pr.Errors, shortDuration(pr.TTFTp95), shortDuration(pr.ITLp95))
}

// minSec prints d as m:ss.
func minSec(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d/time.Minute), int(d/time.Second)%60)
}

// shortDuration prints a latency with three significant digits or so; "-"
// for none yet.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(100 * time.Microsecond).String()
}

// WatchRuns makes every later live evaluation report its status to fn:
// once when a server is started for it, then about once a second while
// its load runs, so that a caller can show progress from the first second
// of a run of minutes (a virtual evaluation reports nothing: it takes
// milliseconds). fn is called from another goroutine than Evaluate's; nil
// stops the reports.
func (e *Evaluator) WatchRuns(fn func(RunStatus)) {
	if fn == nil {
		e.watch.Store(nil)
		return
	}
	e.watch.Store(&fn)
}

func (e *Evaluator) watcher() func(RunStatus) {
	if fn := e.watch.Load(); fn != nil {
		return *fn
	}
	return nil
}

// ownsServers reports whether the launcher's servers are spoc's to stop:
// every launcher's but the external engine's, whose Stop does nothing.
func ownsServers(l engine.Launcher) bool {
	_, external := l.(*engine.External)
	return !external
}

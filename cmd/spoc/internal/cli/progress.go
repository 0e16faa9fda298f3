package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progressWidth is the most columns a progress line takes.
const progressWidth = 100

// progress renders the progress of long work (plan phases, tune trials,
// sweep levels) on stderr: the one renderer every verb uses. Each step is
// one line with the phase's elapsed time and an ETA computed from known
// quantities only: the steps left times the mean step time so far ("ETA
// unknown" when the number of steps is not known, "ETA ≤" when it is an
// upper bound). On a terminal a status line (phase, steps, elapsed, ETA)
// is also redrawn in place every second below the lines; elsewhere (a
// file, a pipe, CI) nothing is redrawn: one line per event.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
	now func() time.Time

	phase       string // "" outside a phase
	index, of   int    // the phase's place in a plan (0: not a plan)
	phaseStart  time.Time
	done, total int
	// base counts the steps done before this process timed any (a resumed
	// study's earlier trials): they count as done but not in the mean.
	base    int
	counted bool
	// series is when the current count began: the phase's start, or the
	// step before a count that restarted (choose's tie-breaks after its
	// candidates); last is the time of the last step.
	series, last time.Time
	bound        bool
	status       bool // a status line is on screen
	// run is the live run in progress ("" when none), shown in the status
	// line; runShown says a line of the phase's runs was printed (off a
	// terminal), lastLine when the last permanent line was.
	run      string
	runShown bool
	lastLine time.Time

	stop chan struct{}
	wg   sync.WaitGroup
}

// newProgress renders on w; tty selects in-place status updates.
func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, tty: tty, now: time.Now}
	if tty {
		p.stop = make(chan struct{})
		p.wg.Add(1)
		go p.tick()
	}
	return p
}

// stderrProgress renders on the command's stderr, in place when it is a
// terminal.
func stderrProgress(w io.Writer) *progress { return newProgress(w, isTerminal(w)) }

// tick redraws the status line every second, so elapsed time moves while a
// long step (a trial of minutes) runs.
func (p *progress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawStatus()
			p.mu.Unlock()
		}
	}
}

// Close stops redrawing and removes the status line.
func (p *progress) Close() {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		p.wg.Wait()
		p.stop = nil
	}
	p.mu.Lock()
	p.clearStatus()
	p.mu.Unlock()
}

// begin starts a phase of unknown length (total 0) or of total steps.
func (p *progress) begin(name string, index, of, total int, bound bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.index, p.of = name, index, of
	p.phaseStart, p.done, p.total, p.bound = p.now(), 0, total, bound
	p.base, p.counted = 0, false
	p.series, p.last = p.phaseStart, p.phaseStart
	p.run, p.runShown = "", false
	head := "== " + name
	if of > 0 {
		head += fmt.Sprintf(" (phase %d/%d)", index, of)
	}
	p.println(head)
}

// step prints one finished step: done of total (total 0: unknown), the
// elapsed time of the phase and the ETA, then the text cut to fit 100
// columns. A step that counts nothing (done 0) is a note, printed whole.
func (p *progress) step(text string, done, total int, bound bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.phaseStart.IsZero() && done > 0 {
		p.phaseStart, p.series, p.last = now, now, now
	}
	if done > 0 {
		if !p.counted || done <= p.done || total != p.total {
			// the first count of the phase, or a new one: time it from
			// the step before
			p.base, p.counted, p.series = done-1, true, p.last
		}
		p.done, p.total, p.bound = done, total, bound
	}
	p.last = now
	if done > 0 {
		p.run = "" // the step ends the run that was in progress
	}
	count := ""
	if done > 0 {
		count = fmt.Sprintf(" %d/%s", done, p.totalText())
	}
	prefix := fmt.Sprintf(" %s%s %s ", clock(now.Sub(p.phaseStart)), count, p.eta())
	switch {
	case done == 0 && p.phase == "":
		prefix = "" // a line of the verb's own, outside any phase
	case done == 0:
		prefix = fmt.Sprintf(" %s ", clock(now.Sub(p.phaseStart)))
	}
	if done == 0 {
		// a note (a study's path, a decision): never cut
		p.println(prefix + text)
		return
	}
	p.println(fit(prefix+text, progressWidth))
}

// running shows a live run in progress (plan.Running, about once a
// second). On a terminal it goes into the status line. Elsewhere a line is
// printed at the first report of the phase's runs, so a run of minutes
// shows progress from its first second, and then whenever runProgressEvery
// passed without any line: a heartbeat, not a line a second.
func (p *progress) running(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run = text
	if p.tty {
		p.drawStatus()
		return
	}
	now := p.now()
	if p.runShown && now.Sub(p.lastLine) < runProgressEvery {
		return
	}
	p.runShown = true
	start := p.phaseStart
	if start.IsZero() {
		start = now
	}
	p.println(fit(fmt.Sprintf(" %s %s", clock(now.Sub(start)), text), progressWidth))
}

// note prints a line of the phase that counts nothing.
func (p *progress) note(text string) { p.step(text, 0, 0, false) }

// end closes the phase with what it found.
func (p *progress) end(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf(" %s %s done", clock(p.now().Sub(p.phaseStart)), p.phase)
	if text != "" {
		line += ": " + text
	}
	p.phase, p.phaseStart, p.run = "", time.Time{}, ""
	// the phase's closing line is its result: never cut
	p.println(line)
}

func (p *progress) totalText() string {
	switch {
	case p.total <= 0:
		return "?"
	case p.bound:
		return fmt.Sprintf("≤%d", p.total)
	}
	return fmt.Sprint(p.total)
}

// eta is the steps left times the mean time of the steps timed so far.
func (p *progress) eta() string {
	if p.total <= 0 || p.done-p.base <= 0 {
		return "ETA unknown"
	}
	left := p.total - p.done
	if left <= 0 {
		return "ETA 0:00"
	}
	per := p.last.Sub(p.series) / time.Duration(p.done-p.base)
	s := clock(per * time.Duration(left))
	if p.bound {
		return "ETA ≤" + s
	}
	return "ETA " + s
}

// println writes a permanent line, keeping the status line below it.
func (p *progress) println(line string) {
	p.clearStatus()
	p.lastLine = p.now()
	fmt.Fprintln(p.w, line)
	p.drawStatus()
}

func (p *progress) clearStatus() {
	if p.tty && p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
}

// drawStatus redraws the status line in place (terminals only).
func (p *progress) drawStatus() {
	if !p.tty || p.phase == "" {
		return
	}
	s := p.phase
	if p.of > 0 {
		s += fmt.Sprintf(" (phase %d/%d)", p.index, p.of)
	}
	if p.done > 0 {
		s += fmt.Sprintf("  %d/%s", p.done, p.totalText())
	}
	s += fmt.Sprintf("  elapsed %s  %s", clock(p.now().Sub(p.phaseStart)), p.eta())
	if p.run != "" {
		s += "  " + p.run
	}
	fmt.Fprint(p.w, "\r\033[K"+fit(s, progressWidth-1))
	p.status = true
}

// clock prints d as m:ss, or h:mm:ss from an hour on.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// fit cuts s to width columns (runes), ending a cut line with "…".
func fit(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:width-1]), " ") + "…"
}

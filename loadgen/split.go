package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// ShardCommandEnv names the environment variable that, when set, is the
// command (split on spaces) that starts each client shard instead of spoc
// re-executing itself with ShardVerb: a wrapper that places the shard (a
// cgroup, taskset, nice) and then execs `spoc client-shard`. The shard's
// index is in SPOC_CLIENT_SHARD.
const ShardCommandEnv = "SPOC_CLIENT_COMMAND"

// DefaultStartLead is how far after the last shard said it is ready the
// agreed start instant lies: time for the start line to reach every shard.
const DefaultStartLead = 250 * time.Millisecond

// shardStopWait is how long a shard may take to stop after SIGINT before it
// is killed.
const shardStopWait = 15 * time.Second

// SplitOptions configures a run split over several local client processes
// (run.clients).
type SplitOptions struct {
	// Options are the whole run's; each shard gets them with its Shards and
	// the agreed StartAt. Renderer, HTTPClient and Logger do not travel.
	Options Options
	// Clients is the number of shards (at least 2).
	Clients int
	// Workload, MaxModelLen and MidSession are what each shard rebuilds
	// its workload from (workload.OpenForRun).
	Workload    workload.Spec
	MaxModelLen int
	MidSession  bool
	// Command starts one shard; empty uses ShardCommandEnv, else this
	// executable with ShardVerb.
	Command []string
	// Dir holds the shards' records files while the run goes on; empty
	// uses a new temporary folder. Their files are removed once merged.
	Dir string
	// Stderr receives the shards' logs (default os.Stderr).
	Stderr io.Writer
	// StartLead defaults to DefaultStartLead (DefaultPodStartLead with
	// Pods).
	StartLead time.Duration
	// Pods, when set, runs the shards as the pods of one platform job
	// (run.kubernetes: an Indexed Job) instead of local processes; then
	// one shard (Clients 1) is a run too, its client in the cluster.
	Pods PodLauncher
	// Logger receives run-level events; nil discards them.
	Logger *slog.Logger
}

// ShardReport is one client shard of a split run.
type ShardReport struct {
	Index int `json:"index"`
	PID   int `json:"pid,omitempty"`
	// Pod names the shard's pod on a platform (SplitOptions.Pods).
	Pod string `json:"pod,omitempty"`
	// Report is the shard's own: its Health is that process's alone, and
	// its StartSkew how late it began against the agreed instant.
	Report
	// Records counts the records merged from it.
	Records int64 `json:"records"`
}

// Name says where the shard ran: "pod NAME" or "pid N".
func (r ShardReport) Name() string {
	if r.Pod != "" {
		return "pod " + r.Pod
	}
	return fmt.Sprintf("pid %d", r.PID)
}

// SplitReport is a split run: the merged report (Health left zero: it is
// per shard) and each shard's.
type SplitReport struct {
	Report
	Shards []ShardReport `json:"shards"`
}

// ErrShardDied marks a split run that failed because a client shard died.
var ErrShardDied = errors.New("client shard died")

// Splitter runs one load run over several client processes. Like a Runner
// it runs once.
type Splitter struct {
	opts SplitOptions

	mu       sync.Mutex
	progress []Progress
	errMu    sync.Mutex // the pods' log lines to Stderr, one at a time
}

// NewSplitter validates o.
func NewSplitter(o SplitOptions) (*Splitter, error) {
	if o.Clients < 2 && (o.Pods == nil || o.Clients < 1) {
		return nil, fmt.Errorf("split run: clients must be at least 2 (1 on pods), got %d", o.Clients)
	}
	if err := o.Options.schedule().Validate(); err != nil {
		return nil, fmt.Errorf("split run: %w", err)
	}
	if len(o.Command) == 0 && o.Pods == nil {
		if env := strings.Fields(os.Getenv(ShardCommandEnv)); len(env) > 0 {
			o.Command = env
		} else {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("split run: find spoc's own executable: %w", err)
			}
			o.Command = []string{exe, ShardVerb}
		}
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.StartLead <= 0 {
		o.StartLead = DefaultStartLead
		if o.Pods != nil {
			o.StartLead = DefaultPodStartLead
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Splitter{opts: o, progress: make([]Progress, o.Clients)}, nil
}

// Progress sums the shards' live counters; its percentiles are the slowest
// shard's.
func (s *Splitter) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p Progress
	for _, q := range s.progress {
		p.Scheduled += q.Scheduled
		p.Requests += q.Requests
		p.Errors += q.Errors
		p.Cancelled += q.Cancelled
		p.ActiveUsers += q.ActiveUsers
		p.InFlight += q.InFlight
		p.TTFTp95 = max(p.TTFTp95, q.TTFTp95)
		p.ITLp95 = max(p.ITLp95, q.ITLp95)
	}
	return p
}

// shardProc is one running client process.
type shardProc struct {
	index  int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{}
	report *Report
	errMsg string
	exited chan struct{}
	err    error // from Wait
}

func (p *shardProc) name() string {
	return fmt.Sprintf("client shard %d (pid %d)", p.index, p.cmd.Process.Pid)
}

// Run starts every shard, gives them one start instant once all are ready,
// and when all have finished merges their records into out in order of
// completion (out is written from one goroutine). A shard that dies fails
// the run naming it: the others are stopped and nothing is written to out.
// When ctx ends, every shard is interrupted (SIGINT) and what they measured
// is merged, with Interrupted set, and ctx's error returned.
func (s *Splitter) Run(ctx context.Context, out result.Sink) (*SplitReport, error) {
	o := &s.opts
	if o.Pods != nil {
		return s.runPods(ctx, out)
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "spoc-shards-")
		if err != nil {
			return nil, fmt.Errorf("split run: %w", err)
		}
		dir = d
		defer os.RemoveAll(d)
	}
	procs := make([]*shardProc, 0, o.Clients)
	defer func() {
		for _, p := range procs {
			s.stop(p, true)
		}
	}()
	died := make(chan *shardProc, o.Clients)
	for i := range o.Clients {
		p, err := s.start(i, filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i)), died)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}

	// every shard ready (its workload built), then one instant for all
	for _, p := range procs {
		select {
		case <-p.ready:
		case q := <-died:
			return nil, s.dead(q, procs)
		case <-ctx.Done():
			// interrupted before the start: nothing was sent
			for _, p := range procs {
				s.stop(p, false)
			}
			now := time.Now()
			return &SplitReport{Report: Report{Start: now, Window: result.Window{Start: now, End: now}, Interrupted: true}}, ctx.Err()
		}
	}
	start := time.Now().Add(o.StartLead)
	line, _ := json.Marshal(shardStart{Start: start})
	line = append(line, '\n')
	for _, p := range procs {
		if _, err := p.stdin.Write(line); err != nil {
			return nil, s.dead(p, procs)
		}
	}
	o.Logger.Info("client shards started", "shards", o.Clients, "start", start)

	interrupted, done := false, ctx.Done()
	for left := len(procs); left > 0; {
		select {
		case q := <-died:
			left--
			if interrupted {
				continue // judged below, once all have stopped
			}
			if q.report == nil {
				return nil, s.dead(q, procs)
			}
			if q.report.Interrupted && ctx.Err() == nil {
				// a shard stopped by someone else than this run is
				// half a measurement
				q.errMsg = "it was interrupted on its own"
				q.report = nil
				return nil, s.dead(q, procs)
			}
			if q.report.Interrupted {
				interrupted = true // the terminal's Ctrl-C reached it first
			}
		case <-done:
			// Ctrl-C: every shard stops and reports what it measured
			interrupted, done = true, nil
			for _, p := range procs {
				_ = p.cmd.Process.Signal(syscall.SIGINT)
			}
		}
	}
	if interrupted {
		for _, p := range procs {
			if p.report == nil {
				return nil, fmt.Errorf("%w: %s stopped without a report after the interruption: %s", ErrShardDied, p.name(), p.reason())
			}
		}
	}

	reports := make([]shardResult, len(procs))
	for i, p := range procs {
		reports[i] = shardResult{report: p.report, pid: p.cmd.Process.Pid}
	}
	rep := assemble(start, reports)
	if err := mergeRecords(dir, rep, out); err != nil {
		return nil, err
	}
	if interrupted {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		return rep, context.Canceled
	}
	return rep, nil
}

// shardResult is one shard's final report and where it ran.
type shardResult struct {
	report *Report
	pid    int
	pod    string
}

// assemble is the split run's report from its shards' (by index), before
// their records are merged: the measured window is the one every shard
// covers, the skew the largest.
func assemble(start time.Time, shards []shardResult) *SplitReport {
	rep := &SplitReport{Report: Report{Start: start}}
	for i, sh := range shards {
		r := sh.report
		rep.Shards = append(rep.Shards, ShardReport{Index: i, PID: sh.pid, Pod: sh.pod, Report: *r})
		if i == 0 || r.Window.End.Before(rep.Window.End) {
			rep.Window = r.Window
		}
		rep.Scheduled += r.Scheduled
		rep.Interrupted = rep.Interrupted || r.Interrupted
		rep.StartSkew = max(rep.StartSkew, r.StartSkew)
		rep.Sessions = addSessions(rep.Sessions, r.Sessions)
	}
	return rep
}

// start launches shard i, sends it its job and follows its stdout.
func (s *Splitter) start(i int, records string, died chan<- *shardProc) (*shardProc, error) {
	o := &s.opts
	job := ShardJob{Options: o.Options, Workload: o.Workload, MaxModelLen: o.MaxModelLen, MidSession: o.MidSession, Records: records}
	job.Options.Shards = workload.Shards{Count: o.Clients, Index: i}
	b, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("split run: shard %d's job: %w", i, err)
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env = append(os.Environ(), "SPOC_CLIENT_SHARD="+strconv.Itoa(i))
	cmd.Stderr = o.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("split run: start client shard %d (%s): %w", i, strings.Join(o.Command, " "), err)
	}
	p := &shardProc{index: i, cmd: cmd, stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m shardMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.Ready:
				close(p.ready)
			case m.Progress != nil:
				s.mu.Lock()
				s.progress[i] = *m.Progress
				s.mu.Unlock()
			case m.Report != nil:
				p.report = m.Report
			case m.Error != "":
				p.errMsg = m.Error
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		if p.err != nil {
			p.report = nil // a report from a process that then failed is none
		}
		close(p.exited)
		died <- p
	}()
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		return p, nil // the exit is reported through died
	}
	return p, nil
}

// reason says why a shard ended without a report.
func (p *shardProc) reason() string {
	switch {
	case p.errMsg != "" && p.err != nil:
		return p.errMsg + " (" + p.err.Error() + ")"
	case p.errMsg != "":
		return p.errMsg
	case p.err != nil:
		return p.err.Error()
	}
	return "it exited without a report"
}

// dead stops the other shards and says which one died and why.
func (s *Splitter) dead(q *shardProc, procs []*shardProc) error {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		_ = p.stdin.Close()
	}
	for _, p := range procs {
		if p != q {
			s.stop(p, false)
		}
	}
	<-q.exited
	return fmt.Errorf("%w: %s: %s; the run is failed and no records were merged", ErrShardDied, q.name(), q.reason())
}

// stop interrupts p (unless already exited) and waits for it, killing it
// after shardStopWait; kill skips the wait.
func (s *Splitter) stop(p *shardProc, kill bool) {
	select {
	case <-p.exited:
		return
	default:
	}
	if kill {
		_ = p.cmd.Process.Kill()
	} else {
		// SIGINT stops a running shard; a closed stdin one still waiting
		// for its start
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		_ = p.stdin.Close()
	}
	select {
	case <-p.exited:
	case <-time.After(shardStopWait):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// addSessions adds an open-loop shard's session statistics to the total.
// Arrivals, completions and the mean in progress add exactly; the peak is
// the sum of the shards' peaks, an upper bound (they need not peak at once).
func addSessions(total, s *workload.SessionStats) *workload.SessionStats {
	if s == nil {
		return total
	}
	if total == nil {
		total = &workload.SessionStats{}
	}
	total.Arrived += s.Arrived
	total.Completed += s.Completed
	total.MeanActive += s.MeanActive
	total.PeakActive += s.PeakActive
	return total
}

// mergeRecords writes the shards' records to out in order of completion (a
// merge of the files, each in its shard's completion order), checking that
// each record is its shard's and that no request id repeats.
func mergeRecords(dir string, rep *SplitReport, out result.Sink) error {
	n := len(rep.Shards)
	readers := make([]*result.Reader, n)
	heads := make([]*result.Record, n)
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("merge client shards: %w", err)
		}
		defer f.Close()
		readers[i] = result.NewReader(f, name)
	}
	next := func(i int) error {
		rec, err := readers[i].Next()
		if err == io.EOF {
			heads[i] = nil
			return nil
		}
		if err != nil {
			return fmt.Errorf("merge client shard %d: %w", i, err)
		}
		if rec.Shard != i {
			return fmt.Errorf("merge client shard %d: record %s says shard %d", i, rec.RequestID, rec.Shard)
		}
		heads[i] = rec
		return nil
	}
	for i := range n {
		if err := next(i); err != nil {
			return err
		}
	}
	seen := map[string]struct{}{}
	for {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || h.Done.Before(heads[best].Done)) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		rec := heads[best]
		if rec.RequestID != "" {
			if _, dup := seen[rec.RequestID]; dup {
				return fmt.Errorf("merge client shards: request %s is in two shards' records", rec.RequestID)
			}
			seen[rec.RequestID] = struct{}{}
		}
		if err := out.Write(rec); err != nil {
			return fmt.Errorf("merge client shards: %w", err)
		}
		rep.Shards[best].Records++
		if err := next(best); err != nil {
			return err
		}
	}
}

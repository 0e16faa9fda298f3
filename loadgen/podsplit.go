package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// DefaultPodStartLead is how far after the last pod said it is ready the
// agreed start instant of a split run on pods lies: time for the start to
// reach every pod through the platform (a ConfigMap the pods watch).
const DefaultPodStartLead = 2 * time.Second

// PodJob is a split run's shards running as the pods of one platform job
// (engine.ClientJob: a Kubernetes Indexed Job and its ConfigMap). Each
// pod runs `spoc client-shard` on the job it was given, streams its
// messages and records on its log, and starts its schedule at the instant
// Start writes.
type PodJob interface {
	// Name names the job in messages.
	Name() string
	// AwaitReady waits until every shard's pod runs and returns the pods'
	// names by shard.
	AwaitReady(ctx context.Context) ([]string, error)
	// Follow copies pod's log to w until the pod's container ends.
	Follow(ctx context.Context, pod string, w io.Writer) error
	// Start gives every pod the agreed start instant; Stop tells them to
	// stop, keeping what they measured.
	Start(ctx context.Context, at time.Time) error
	Stop(ctx context.Context) error
	// Ended says how pod ended: nil when it succeeded.
	Ended(ctx context.Context, pod string) error
	// Delete removes the job and its pods.
	Delete(ctx context.Context) error
}

// PodLauncher creates the job of a split run's shards pods, each given
// job (a ShardJob without its shard index, which is the pod's own).
type PodLauncher func(ctx context.Context, shards int, job []byte) (PodJob, error)

// podShard is one shard's pod as its log tells it.
type podShard struct {
	index   int
	name    string
	ready   chan struct{}
	once    sync.Once
	report  *Report
	errMsg  string
	records int64 // received on the log
	err     error // how the pod ended (Ended), or the log could not be read
	exited  chan struct{}
}

func (p *podShard) label() string { return fmt.Sprintf("client shard %d (pod %s)", p.index, p.name) }

func (p *podShard) reason() string {
	switch {
	case p.err != nil && p.errMsg != "":
		return p.errMsg + " (" + p.err.Error() + ")"
	case p.err != nil:
		return p.err.Error()
	case p.errMsg != "":
		return p.errMsg
	}
	return "it ended without a report"
}

// runPods is Run with the shards as pods (SplitOptions.Pods): the job is
// created, every pod awaited, the start instant written once, the logs
// followed into the shards' records files, and the job deleted at the end
// whatever happened (Ctrl-C included).
func (s *Splitter) runPods(ctx context.Context, out result.Sink) (rep *SplitReport, err error) {
	o := &s.opts
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "spoc-shards-")
		if err != nil {
			return nil, fmt.Errorf("split run: %w", err)
		}
		dir = d
		defer os.RemoveAll(d)
	}
	job := ShardJob{Options: o.Options, Workload: o.Workload, MaxModelLen: o.MaxModelLen, MidSession: o.MidSession}
	// the API key never goes into the job the cluster stores: the pods
	// read it from a Secret
	job.Options.APIKey = ""
	job.Options.Shards = workload.Shards{Count: o.Clients}
	b, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("split run: the shards' job: %w", err)
	}
	pj, err := o.Pods(ctx, o.Clients, b)
	if err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if derr := pj.Delete(dctx); derr != nil {
			o.Logger.Warn("delete the client job", "job", pj.Name(), "err", derr)
			if err == nil {
				err = derr
			}
		}
	}()
	names, err := pj.AwaitReady(ctx)
	if err != nil {
		if ctx.Err() != nil {
			now := time.Now()
			return &SplitReport{Report: Report{Start: now, Window: result.Window{Start: now, End: now}, Interrupted: true}}, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w; the run is failed and no records were merged", ErrShardDied, err)
	}
	fctx, stopFollow := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFollow()
	shards := make([]*podShard, o.Clients)
	died := make(chan *podShard, o.Clients)
	for i, name := range names {
		p := &podShard{index: i, name: name, ready: make(chan struct{}), exited: make(chan struct{})}
		shards[i] = p
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i)))
		if err != nil {
			return nil, fmt.Errorf("split run: %w", err)
		}
		go s.follow(fctx, pj, p, f, died)
	}
	failed := func(q *podShard) error {
		// the others stop; their records are not merged
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = pj.Stop(sctx)
		<-q.exited
		return fmt.Errorf("%w: %s: %s; the run is failed and no records were merged", ErrShardDied, q.label(), q.reason())
	}
	for _, p := range shards {
		select {
		case <-p.ready:
		case q := <-died:
			return nil, failed(q)
		case <-ctx.Done():
			now := time.Now()
			return &SplitReport{Report: Report{Start: now, Window: result.Window{Start: now, End: now}, Interrupted: true}}, ctx.Err()
		}
	}
	start := time.Now().Add(o.StartLead)
	if err := pj.Start(ctx, start); err != nil {
		return nil, err
	}
	o.Logger.Info("client pods started", "job", pj.Name(), "shards", o.Clients, "start", start)

	interrupted, done := false, ctx.Done()
	for left := len(shards); left > 0; {
		select {
		case q := <-died:
			left--
			if interrupted {
				continue
			}
			if q.report == nil || q.err != nil {
				return nil, failed(q)
			}
			if q.report.Interrupted && ctx.Err() == nil {
				q.errMsg, q.report = "it was interrupted on its own", nil
				return nil, failed(q)
			}
		case <-done:
			interrupted, done = true, nil
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			if err := pj.Stop(sctx); err != nil {
				o.Logger.Warn("stop the client pods", "job", pj.Name(), "err", err)
			}
			cancel()
		}
	}
	reports := make([]shardResult, len(shards))
	for i, p := range shards {
		if p.report == nil {
			return nil, fmt.Errorf("%w: %s stopped without a report after the interruption: %s", ErrShardDied, p.label(), p.reason())
		}
		if p.records != p.report.Scheduled {
			// every scheduled request gives one record: one lost on the
			// way is a run that cannot be trusted whole
			return nil, fmt.Errorf("%w: %s: %d records came back on its log, it scheduled %d; the run is failed and no records were merged", ErrShardDied, p.label(), p.records, p.report.Scheduled)
		}
		reports[i] = shardResult{report: p.report, pod: p.name}
	}
	rep = assemble(start, reports)
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

// follow reads p's log: its messages, its records into f, any other line
// (the shard's own log) to stderr named by pod, then how the pod ended.
func (s *Splitter) follow(ctx context.Context, pj PodJob, p *podShard, f *os.File, died chan<- *podShard) {
	pr, pw := io.Pipe()
	followed := make(chan error, 1)
	go func() {
		err := pj.Follow(ctx, p.name, pw)
		pw.Close()
		followed <- err
	}()
	rw := result.NewWriter(f)
	var werr error
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m shardMessage
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
			s.errMu.Lock()
			fmt.Fprintf(s.opts.Stderr, "%s: %s\n", p.name, strings.TrimRight(string(line), "\r"))
			s.errMu.Unlock()
			continue
		}
		switch {
		case m.Record != nil:
			if werr == nil {
				werr = rw.Write(m.Record)
			}
			p.records++
		case m.Ready:
			p.once.Do(func() { close(p.ready) })
		case m.Progress != nil:
			s.mu.Lock()
			s.progress[p.index] = *m.Progress
			s.mu.Unlock()
		case m.Report != nil:
			p.report = m.Report
		case m.Error != "":
			p.errMsg = m.Error
		}
	}
	_, _ = io.Copy(io.Discard, pr)
	ferr := <-followed
	if err := rw.Close(); err != nil && werr == nil {
		werr = err
	}
	if err := f.Close(); err != nil && werr == nil {
		werr = err
	}
	switch {
	case werr != nil:
		p.err = fmt.Errorf("write its records: %w", werr)
	case ctx.Err() != nil:
		p.err = ctx.Err()
	default:
		p.err = pj.Ended(ctx, p.name)
		if p.err == nil && ferr != nil {
			p.err = fmt.Errorf("follow its log: %w", ferr)
		}
	}
	if p.err != nil {
		p.report = nil
	}
	close(p.exited)
	died <- p
}

// PodRun is where a pod of a split run reads its run (engine.ClientConfigMap
// on Kubernetes).
type PodRun interface {
	// WatchRun calls fn with the run's job, its start instant (zero until
	// written) and whether it was told to stop, now and after every change,
	// until fn returns true or ctx ends.
	WatchRun(ctx context.Context, fn func(job []byte, start time.Time, stop bool) bool) error
}

// RunPodShard is one pod of a split run (spoc client-shard
// --kubernetes-configmap): RunShard on the job src holds, as shard index
// (the pod's completion index), with apiKey (from the pod's Secret), its
// records streamed on out (the pod's log), started at the instant src
// gives; a stop in src interrupts it, keeping what it measured.
func RunPodShard(ctx context.Context, src PodRun, index int, apiKey string, out io.Writer, logger *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in, feed := io.Pipe()
	defer in.Close()
	watched := make(chan error, 1)
	go func() {
		sentJob, sentStart := false, false
		err := src.WatchRun(ctx, func(b []byte, start time.Time, stop bool) bool {
			if stop {
				cancel()
				return true
			}
			if !sentJob {
				var job ShardJob
				if err := json.Unmarshal(b, &job); err != nil {
					feed.CloseWithError(fmt.Errorf("client shard %d: the run's job: %w", index, err))
					return true
				}
				job.Options.Shards.Index, job.Options.APIKey, job.Records = index, apiKey, ""
				line, _ := json.Marshal(job)
				if _, err := feed.Write(append(line, '\n')); err != nil {
					return true
				}
				sentJob = true
			}
			if !start.IsZero() && !sentStart {
				// RunShard reads it once its workload is built
				go func() { _, _ = feed.Write(StartLine(start)) }()
				sentStart = true
			}
			return false
		})
		if err != nil {
			feed.CloseWithError(err) // RunShard fails, saying why
		}
		watched <- err
	}()
	err := RunShard(ctx, in, out, logger)
	cancel()
	feed.Close()
	if werr := <-watched; err == nil && werr != nil && ctx.Err() == nil {
		err = werr
	}
	return err
}

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
	"sync"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// ShardVerb is the hidden spoc subcommand that runs one client shard of a
// split run (RunShard): the parent re-executes its own binary with it.
const ShardVerb = "client-shard"

// ShardJob is what the parent of a split run gives one client process: the
// whole run's options with this process's shard, the workload to rebuild
// (every shard builds the same one from the same spec and seed), and where
// its records go. It travels as one JSON line on the child's stdin (the API
// key with it, never on a command line or in a file).
type ShardJob struct {
	Options     Options       `json:"options"`
	Workload    workload.Spec `json:"workload"`
	MaxModelLen int           `json:"max_model_len"`
	MidSession  bool          `json:"mid_session"`
	// Records is the file the shard writes its records to; empty streams
	// them on its stdout, one message each, as the pods of a Kubernetes
	// split run do (their log is how the records come back).
	Records string `json:"records"`
}

// shardMessage is one line a shard writes on its stdout: it is ready (its
// workload built and primed), its counters, or its final report.
type shardMessage struct {
	Ready    bool      `json:"ready,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Report   *Report   `json:"report,omitempty"`
	Error    string    `json:"error,omitempty"`
	// Record is one record of a shard that streams them (ShardJob.Records
	// empty).
	Record *result.Record `json:"record,omitempty"`
}

// lockedEncoder writes whole messages from several goroutines (the
// records and the progress ticker).
type lockedEncoder struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (e *lockedEncoder) Encode(m shardMessage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(m)
}

// shardStart is the one line the parent writes after every shard is ready:
// the agreed instant at which all of them start their schedules.
type shardStart struct {
	Start time.Time `json:"start"`
}

// RunShard is the child side of a split run (spoc client-shard): it reads
// its ShardJob from in, builds and primes the workload, says it is ready on
// out, waits for the agreed start instant on in, runs its users from it and
// writes its records to the job's file, its counters about once a second and
// finally its report on out. It stops, keeping what it measured, when ctx
// ends (SIGINT from the parent or the terminal) or when in closes (the
// parent is gone).
func RunShard(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	br := bufio.NewReader(in)
	enc := &lockedEncoder{enc: json.NewEncoder(out)}
	fail := func(err error) error {
		_ = enc.Encode(shardMessage{Error: err.Error()})
		return err
	}
	var job ShardJob
	line, err := br.ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return fail(fmt.Errorf("read the shard's job: %w", err))
	}
	if err := json.Unmarshal(line, &job); err != nil {
		return fail(fmt.Errorf("read the shard's job: %w", err))
	}
	w, err := workload.OpenForRun(job.Workload, job.MaxModelLen, job.MidSession)
	if err != nil {
		return fail(fmt.Errorf("shard %d: build workload: %w", job.Options.Shards.Index, err))
	}
	opts := job.Options
	opts.Renderer, opts.Logger = w, logger
	r, err := New(opts)
	if err != nil {
		return fail(err)
	}
	// Prime the tokenizer and corpus now, so that building them does not
	// delay this shard past the agreed start.
	if sc, err := w.Session(0, 0); err == nil && len(sc.Turns) > 0 {
		_ = newConversation(r.opts.Endpoint, w).addUser(sc, &sc.Turns[0])
	}
	var f *os.File
	if job.Records != "" {
		if f, err = os.Create(job.Records); err != nil {
			return fail(fmt.Errorf("shard %d: %w", job.Options.Shards.Index, err))
		}
		defer f.Close()
	}
	if err := enc.Encode(shardMessage{Ready: true}); err != nil {
		return err
	}
	startLine := make(chan error, 1)
	go func() {
		line, err = br.ReadBytes('\n')
		startLine <- err
	}()
	select {
	case err = <-startLine:
	case <-ctx.Done():
		return fmt.Errorf("shard %d: interrupted before the start: %w", job.Options.Shards.Index, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("shard %d: no start instant from the parent: %w", job.Options.Shards.Index, err)
	}
	var st shardStart
	if err := json.Unmarshal(line, &st); err != nil || st.Start.IsZero() {
		return fail(fmt.Errorf("shard %d: bad start instant %q", job.Options.Shards.Index, line))
	}
	r.opts.StartAt = st.Start

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// the parent holds our stdin open for the whole run: EOF means it
		// is gone, and an orphaned shard must not go on loading the server
		_, _ = io.Copy(io.Discard, br)
		cancel()
	}()
	var sink result.Sink
	var rw *result.Writer
	if f != nil {
		rw = result.NewWriter(f)
		sink = rw
	} else {
		sink = result.SinkFunc(func(rec *result.Record) error { return enc.Encode(shardMessage{Record: rec}) })
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				pr := r.Progress()
				_ = enc.Encode(shardMessage{Progress: &pr})
			}
		}
	}()
	rep, runErr := r.Run(ctx, w, sink)
	close(stop)
	<-ticked
	if rw != nil {
		if err := rw.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("write records: %w", err)
		}
		if err := f.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("write records: %w", err)
		}
	}
	if rep != nil && (runErr == nil || rep.Interrupted) {
		return enc.Encode(shardMessage{Report: rep})
	}
	if runErr == nil {
		runErr = errors.New("the run returned no report")
	}
	return fail(runErr)
}

// StartLine is the line that gives a waiting RunShard its start instant:
// what the parent writes on a local shard's stdin, and what a pod's
// client-shard writes once the run's ConfigMap holds the instant.
func StartLine(at time.Time) []byte {
	b, _ := json.Marshal(shardStart{Start: at})
	return append(b, '\n')
}

package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
)

// fakePods plays a platform's job whose pods write what a client-shard
// pod writes on its log: ready, then (after the start) records, and a
// report. It stands in for the cluster only; the real one runs in
// cmd/spoc/internal/cli's TestRunClientsAsKubernetesJobPods.
type fakePods struct {
	mu      sync.Mutex
	started chan struct{}
	job     ShardJob
	records int            // per shard
	lose    int            // a shard whose report claims one record more than it sent (-1: none)
	fail    map[int]error  // how a pod ended (Ended)
	logs    map[int]string // extra log lines
	deleted bool
	stopped bool
}

func (f *fakePods) launch(_ context.Context, shards int, job []byte) (PodJob, error) {
	if err := json.Unmarshal(job, &f.job); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fakePods) Name() string { return "job" }
func (f *fakePods) AwaitReady(context.Context) ([]string, error) {
	return []string{"job-0-a", "job-1-b", "job-2-c"}[:f.job.Options.Shards.Count], nil
}
func (f *fakePods) Start(_ context.Context, at time.Time) error { close(f.started); return nil }
func (f *fakePods) Stop(context.Context) error {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	return nil
}
func (f *fakePods) Delete(context.Context) error {
	f.mu.Lock()
	f.deleted = true
	f.mu.Unlock()
	return nil
}
func (f *fakePods) Ended(_ context.Context, pod string) error {
	var i int
	fmt.Sscanf(pod, "job-%d", &i)
	return f.fail[i]
}

func (f *fakePods) Follow(ctx context.Context, pod string, w io.Writer) error {
	var i int
	fmt.Sscanf(pod, "job-%d", &i)
	enc := json.NewEncoder(w)
	_ = enc.Encode(shardMessage{Ready: true})
	select {
	case <-f.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	if l := f.logs[i]; l != "" {
		fmt.Fprintln(w, l)
	}
	base := time.Now()
	for n := range f.records {
		_ = enc.Encode(shardMessage{Record: &result.Record{RequestID: fmt.Sprintf("s%d-r%d", i, n), Shard: i, User: i, Status: result.StatusOK,
			Done: base.Add(time.Duration(n*3+i) * time.Millisecond)}})
	}
	if f.fail[i] != nil {
		return nil // the pod died before its report
	}
	sched := int64(f.records)
	if i == f.lose {
		sched++
	}
	return enc.Encode(shardMessage{Report: &Report{Start: base, Window: result.Window{Start: base, End: base.Add(time.Second)}, Scheduled: sched}})
}

type sinkRecords struct{ recs []*result.Record }

func (s *sinkRecords) Write(r *result.Record) error { s.recs = append(s.recs, r); return nil }

func podSplitter(t *testing.T, f *fakePods, shards int, stderr io.Writer) *Splitter {
	t.Helper()
	sp, err := NewSplitter(SplitOptions{Options: Options{Target: "http://x", Users: 3, Duration: time.Second}, Clients: shards, Pods: f.launch, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// The pods' records come back on their logs into one stream in completion
// order, each once; the job the pods get carries no API key; the job is
// deleted at the end; other log lines reach stderr named by pod.
func TestPodSplitMergesLogs(t *testing.T) {
	f := &fakePods{started: make(chan struct{}), records: 4, lose: -1, logs: map[int]string{1: "level=WARN msg=slow"}}
	var stderr strings.Builder
	sp := podSplitter(t, f, 3, &stderr)
	sp.opts.Options.APIKey = "secret"
	var out sinkRecords
	rep, err := sp.Run(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if f.job.Options.APIKey != "" || f.job.Records != "" || f.job.Options.Shards.Count != 3 {
		t.Errorf("the pods' job: key %q records %q shards %+v: want no key, records on the log, 3 shards", f.job.Options.APIKey, f.job.Records, f.job.Options.Shards)
	}
	if len(out.recs) != 12 {
		t.Fatalf("%d records merged, want 12", len(out.recs))
	}
	for i := 1; i < len(out.recs); i++ {
		if out.recs[i].Done.Before(out.recs[i-1].Done) {
			t.Errorf("record %d done before record %d", i, i-1)
		}
	}
	for i, sh := range rep.Shards {
		if sh.Records != 4 || sh.Name() != "pod "+[]string{"job-0-a", "job-1-b", "job-2-c"}[i] {
			t.Errorf("shard %d: %d records, name %q", i, sh.Records, sh.Name())
		}
	}
	if !f.deleted {
		t.Error("the job was not deleted after the run")
	}
	if !strings.Contains(stderr.String(), "job-1-b: level=WARN msg=slow") {
		t.Errorf("the shard's own log line did not reach stderr named by its pod: %q", stderr.String())
	}
}

// A pod that fails fails the run naming it; a pod whose log lost a record
// fails it too: nothing is merged, the job is deleted.
func TestPodSplitFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *fakePods
		want string
	}{
		{"pod failed", &fakePods{records: 2, lose: -1, fail: map[int]error{2: errors.New("pod job-2-c failed: phase Failed, container spoc exited with code 137 (Error)")}},
			"client shard 2 (pod job-2-c): pod job-2-c failed: phase Failed, container spoc exited with code 137"},
		{"record lost", &fakePods{records: 2, lose: 0}, "client shard 0 (pod job-0-a): 2 records came back on its log, it scheduled 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.started = make(chan struct{})
			var out sinkRecords
			_, err := podSplitter(t, tc.f, 3, io.Discard).Run(context.Background(), &out)
			if !errors.Is(err, ErrShardDied) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrShardDied saying %q", err, tc.want)
			}
			if len(out.recs) != 0 {
				t.Errorf("%d records merged from a failed run", len(out.recs))
			}
			if !tc.f.deleted {
				t.Error("the job was not deleted")
			}
		})
	}
}

// fakeRun is a pod's view of its run: a job and nothing else.
type fakeRun struct{ job string }

func (f fakeRun) WatchRun(ctx context.Context, fn func([]byte, time.Time, bool) bool) error {
	if fn([]byte(f.job), time.Time{}, false) {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// A pod whose run holds a bad job fails saying so, on its log too.
func TestRunPodShardFailures(t *testing.T) {
	var log strings.Builder
	err := RunPodShard(context.Background(), fakeRun{job: "{not json"}, 1, "", &log, nil)
	if err == nil || !strings.Contains(err.Error(), "client shard 1: the run's job") || !strings.Contains(log.String(), `"error"`) {
		t.Errorf("bad job: err %v, log %q", err, log.String())
	}
}

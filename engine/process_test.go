package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
)

// record is what fakeserver writes at start.
type record struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
}

func readRecord(t *testing.T, path string) record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fakeserver record: %v", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode fakeserver record %s: %v", b, err)
	}
	return r
}

func newFake(t *testing.T, extra []string, mod func(*ProcessOptions)) (*Process, string) {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "record.json")
	opts := ProcessOptions{
		Command:       append([]string{fakeServer, "--port", "{{.Port}}", "--served-model-name", "{{.Model}}", "--fake-record", rec}, extra...),
		Model:         "gpt-oss-120b",
		HealthTimeout: time.Minute,
		StopTimeout:   5 * time.Second,
		PollInterval:  20 * time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := NewProcess(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

func stop(t *testing.T, e Engine) {
	t.Helper()
	if err := e.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func TestProcessRendersFlagsAwaitsHealthAndStops(t *testing.T) {
	p, rec := newFake(t, nil, func(o *ProcessOptions) {
		o.BaseParams = search.Params{"tensor-parallel-size": 4, "max-num-seqs": 64}
	})
	dir := t.TempDir()
	ctx := WithArtifacts(context.Background(), dir)
	params := search.Params{"max-num-seqs": 128, "max-num-batched-tokens": 2048, "enable-prefix-caching": false, "gpu-memory-utilization": 0.9}
	ep, err := p.Start(ctx, params)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	r := readRecord(t, rec)
	u, _ := strings.CutPrefix(ep.BaseURL, "http://127.0.0.1:")
	port, _ := strconv.Atoi(u)
	want := []string{"--port", strconv.Itoa(port), "--served-model-name", "gpt-oss-120b", "--fake-record", rec,
		"--no-enable-prefix-caching", "--gpu-memory-utilization", "0.9", "--max-num-batched-tokens", "2048", "--max-num-seqs", "128", "--tensor-parallel-size", "4"}
	if !reflect.DeepEqual(r.Args, want) {
		t.Errorf("server argv:\n got %q\nwant %q", r.Args, want)
	}
	if ep.Model != "gpt-oss-120b" || ep.Log != filepath.Join(dir, "server.log") || len(ep.MetricsURLs) != 1 || ep.MetricsURLs[0] != ep.BaseURL+"/metrics" {
		t.Errorf("endpoint = %+v", ep)
	}
	resp, err := http.Get(ep.BaseURL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server not healthy after Start: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := p.Start(ctx, params); err == nil {
		t.Error("second Start without Stop succeeded")
	}
	stop(t, p)
	if processAlive(r.PID) {
		t.Errorf("server pid %d alive after Stop", r.PID)
	}
	log, _ := os.ReadFile(ep.Log)
	if !strings.Contains(string(log), "fakeserver starting") || !strings.Contains(string(log), "# spoc: exec ") {
		t.Errorf("server.log does not hold the command and the server output:\n%s", log)
	}
	// The engine can start again after Stop.
	if _, err := p.Start(ctx, params); err != nil {
		t.Fatalf("restart: %v", err)
	}
	stop(t, p)
	stop(t, p) // idempotent
}

func TestProcessStopKillsWholeGroup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ignoreTerm bool
	}{{"sigterm", false}, {"sigkill after grace", true}} {
		t.Run(tc.name, func(t *testing.T) {
			gcFile := filepath.Join(t.TempDir(), "grandchild.pid")
			extra := []string{"--fake-grandchild", gcFile}
			if tc.ignoreTerm {
				extra = append(extra, "--fake-ignore-term")
			}
			p, rec := newFake(t, extra, func(o *ProcessOptions) { o.StopTimeout = 300 * time.Millisecond })
			if _, err := p.Start(WithArtifacts(context.Background(), t.TempDir()), nil); err != nil {
				t.Fatalf("Start: %v", err)
			}
			leader := readRecord(t, rec).PID
			b, err := os.ReadFile(gcFile)
			if err != nil {
				t.Fatal(err)
			}
			gc, _ := strconv.Atoi(string(b))
			if !processAlive(leader) || !processAlive(gc) {
				t.Fatalf("leader %d or grandchild %d not running before Stop", leader, gc)
			}
			stop(t, p)
			if processAlive(leader) || processAlive(gc) {
				t.Errorf("after Stop: leader %d alive=%v, grandchild %d alive=%v", leader, processAlive(leader), gc, processAlive(gc))
			}
		})
	}
}

func TestProcessFailuresAreClassified(t *testing.T) {
	for _, tc := range []struct {
		mode       string
		reason     Reason
		infeasible bool
		exitCode   int
	}{
		{"crash", ReasonExited, false, 1},
		{"oom", ReasonOutOfMemory, true, 1},
		{"kv", ReasonKVCache, true, 1},
		{"reject", ReasonRejected, true, 2},
		{"never-healthy", ReasonHealthTimeout, false, -1},
		{"hang-oom", ReasonOutOfMemory, true, -1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			// A server that exits is classified when it exits: a long health
			// timeout keeps a slow start on a loaded machine from reading as
			// "never healthy". Only the two modes that hang wait it out.
			timeout := 30 * time.Second
			switch tc.mode {
			case "never-healthy":
				timeout = 500 * time.Millisecond
			case "hang-oom":
				timeout = 2 * time.Second // time for the fake to log its OOM line
			}
			p, rec := newFake(t, []string{"--fake-mode", tc.mode}, func(o *ProcessOptions) { o.HealthTimeout = timeout })
			dir := t.TempDir()
			_, err := p.Start(WithArtifacts(context.Background(), dir), search.Params{"max-num-seqs": 16})
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("Start error = %v, want a *Failure", err)
			}
			if f.Reason != tc.reason || f.ExitCode != tc.exitCode {
				t.Errorf("failure = %+v, want reason %s exit %d", f, tc.reason, tc.exitCode)
			}
			if got := errors.Is(err, search.ErrInfeasible); got != tc.infeasible {
				t.Errorf("errors.Is(err, search.ErrInfeasible) = %v, want %v (%v)", got, tc.infeasible, err)
			}
			if !errors.Is(err, tc.reason.sentinel()) {
				t.Errorf("errors.Is(err, %v) = false", tc.reason.sentinel())
			}
			if f.Log != filepath.Join(dir, "server.log") || f.Detail == "" {
				t.Errorf("failure lacks log or detail: %+v", f)
			}
			if pid := readRecord(t, rec).PID; processAlive(pid) {
				t.Errorf("failed server pid %d still running", pid)
			}
			stop(t, p) // nothing left to stop
		})
	}
}

func TestProcessStartCancelled(t *testing.T) {
	p, rec := newFake(t, []string{"--fake-mode", "never-healthy"}, nil)
	ctx, cancel := context.WithCancel(WithArtifacts(context.Background(), t.TempDir()))
	defer cancel()
	// Cancel once the server is running. The fake renames its record into
	// place, so the file exists only when it is complete: the server can
	// be killed the moment it appears and readRecord below still decodes it.
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(rec); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := p.Start(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start = %v, want context.Canceled", err)
	}
	if pid := readRecord(t, rec).PID; processAlive(pid) {
		t.Errorf("server pid %d left running after cancelled Start", pid)
	}
}

func TestProcessCommandErrors(t *testing.T) {
	if _, err := NewProcess(ProcessOptions{}); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := NewProcess(ProcessOptions{Command: []string{"x", "{{.Nope}}"}}); err == nil || !strings.Contains(err.Error(), "command[1]") {
		t.Errorf("unknown template field: err = %v", err)
	}
	if _, err := NewProcess(ProcessOptions{Command: []string{"x", "{{.Port"}}); err == nil {
		t.Error("bad template accepted")
	}
	p, err := NewProcess(ProcessOptions{Command: []string{"vllm", "serve", "--max-num-seqs", "8"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Argv(search.Params{"max_num_seqs": 16}, 1); err == nil || !strings.Contains(err.Error(), "--max-num-seqs") {
		t.Errorf("trial flag pinned by the command: err = %v", err)
	}
	missing, err := NewProcess(ProcessOptions{Command: []string{filepath.Join(t.TempDir(), "no-such-server")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.Start(WithArtifacts(context.Background(), t.TempDir()), nil)
	var f *Failure
	if err == nil || errors.As(err, &f) || errors.Is(err, search.ErrInfeasible) {
		t.Errorf("missing binary: err = %v, want a plain (FAIL) error", err)
	}
}

func TestArgvDropsBaseFlagsPinnedByCommand(t *testing.T) {
	p, err := NewProcess(ProcessOptions{
		Command:    []string{"vllm", "serve", "{{.Model}}", "--port={{.Port}}", "--tensor-parallel-size", "2"},
		Model:      "m",
		BaseParams: search.Params{"tensor-parallel-size": 4, "max-model-len": 8192},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Argv(search.Params{"enable-chunked-prefill": true}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vllm", "serve", "m", "--port=9000", "--tensor-parallel-size", "2", "--enable-chunked-prefill", "--max-model-len", "8192"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Argv:\n got %q\nwant %q", got, want)
	}
}

func TestArtifactsDirFromTrial(t *testing.T) {
	ctx := search.WithTrial(context.Background(), &search.TrialContext{Number: 3, Artifacts: "/tmp/trial-3"})
	if got := ArtifactsDir(ctx); got != "/tmp/trial-3" {
		t.Errorf("ArtifactsDir = %q", got)
	}
	if got := ArtifactsDir(WithArtifacts(ctx, "/x")); got != "/x" {
		t.Errorf("WithArtifacts does not take precedence: %q", got)
	}
	if got := ArtifactsDir(context.Background()); got != "" {
		t.Errorf("ArtifactsDir without trial = %q", got)
	}
}

func TestChecks(t *testing.T) {
	ok, _ := NewProcess(ProcessOptions{Command: []string{fakeServer}})
	if err := ok.Check(); err != nil {
		t.Errorf("Check of an existing command: %v", err)
	}
	missing, _ := NewProcess(ProcessOptions{Command: []string{"spoc-no-such-server-binary"}})
	if err := missing.Check(); err == nil {
		t.Error("Check of a missing command passed")
	}
	k, _ := NewKubernetes(KubernetesOptions{Namespace: "n", Image: "i", Runner: ExecRunner{Binary: "spoc-no-such-kubectl"}})
	if err := k.Check(); err == nil {
		t.Error("Check of a missing kubectl passed")
	}
	k, _ = NewKubernetes(KubernetesOptions{Namespace: "n", Image: "i", Runner: &fakeRunner{}})
	if err := k.Check(); err != nil {
		t.Errorf("Check with a custom runner: %v", err)
	}
}

package engine

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/vllm"
)

// record is what fakeserver writes at start.
type record struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
	// Env holds the server's VLLM_* environment variables.
	Env map[string]string `json:"env"`
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

// newFake returns a launcher of testdata/fakeserver, whose server folders
// go to p.opts.Dir (a test temporary directory), and the path of the record
// the server writes at start.
func newFake(t *testing.T, extra []string, mod func(*ProcessOptions)) (*Process, string) {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "record.json")
	opts := ProcessOptions{
		Command:       append([]string{fakeServer, "--port", "{{.Port}}", "--served-model-name", "{{.Model}}", "--fake-record", rec}, extra...),
		Model:         "gpt-oss-120b",
		Dir:           t.TempDir(),
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

func stop(t *testing.T, s Server) {
	t.Helper()
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// serverLog is where a launcher with Dir dir puts the n-th server's log.
func serverLog(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("server-%03d", n), "server.log")
}

func TestProcessRendersFlagsAwaitsHealthAndStops(t *testing.T) {
	p, rec := newFake(t, nil, func(o *ProcessOptions) {
		o.BaseParams = Params{"tensor-parallel-size": 4, "max-num-seqs": 64}
	})
	dir := p.opts.Dir
	ctx := context.Background()
	params := Params{"max-num-seqs": 128, "max-num-batched-tokens": 2048, "enable-prefix-caching": false, "gpu-memory-utilization": 0.9}
	srv, err := p.Start(ctx, params)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	ep := srv.Endpoint()
	r := readRecord(t, rec)
	u, _ := strings.CutPrefix(ep.BaseURL, "http://127.0.0.1:")
	port, _ := strconv.Atoi(u)
	want := []string{"--port", strconv.Itoa(port), "--served-model-name", "gpt-oss-120b", "--fake-record", rec, "--host", "127.0.0.1",
		"--no-enable-prefix-caching", "--gpu-memory-utilization", "0.9", "--max-num-batched-tokens", "2048", "--max-num-seqs", "128", "--tensor-parallel-size", "4"}
	if !reflect.DeepEqual(r.Args, want) {
		t.Errorf("server argv:\n got %q\nwant %q", r.Args, want)
	}
	if ep.Model != "gpt-oss-120b" || ep.Log != serverLog(dir, 1) || len(ep.MetricsURLs) != 1 || ep.MetricsURLs[0] != ep.BaseURL+"/metrics" {
		t.Errorf("endpoint = %+v", ep)
	}
	resp, err := http.Get(ep.BaseURL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server not healthy after Start: %v %v", resp, err)
	}
	resp.Body.Close()
	if s, err := p.Start(ctx, params); err == nil {
		s.Stop(ctx)
		t.Error("second Start without Stop succeeded")
	}
	stop(t, srv)
	if processAlive(r.PID) {
		t.Errorf("server pid %d alive after Stop", r.PID)
	}
	log, _ := os.ReadFile(ep.Log)
	if !strings.Contains(string(log), "fakeserver starting") || !strings.Contains(string(log), "# spoc: exec ") {
		t.Errorf("server.log does not hold the command and the server output:\n%s", log)
	}
	// The launcher can start again after Stop, in the next server folder.
	srv2, err := p.Start(ctx, params)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got := srv2.Endpoint().Log; got != serverLog(dir, 2) {
		t.Errorf("restarted server log = %q, want %q", got, serverLog(dir, 2))
	}
	// Stopping the first server again does nothing: it neither fails nor
	// frees the launcher while the second server runs.
	stop(t, srv)
	if s, err := p.Start(ctx, params); err == nil {
		s.Stop(ctx)
		t.Error("Start succeeded while the restarted server runs (a repeated Stop freed the launcher)")
	}
	stop(t, srv2)
	stop(t, srv2) // idempotent
	if err := srv2.ResetCache(ctx); err == nil {
		t.Error("ResetCache of a stopped server succeeded")
	}
}

func TestProcessDevModeAndResetCache(t *testing.T) {
	ctx := context.Background()
	// spoc owns the server, so it opens vLLM's development routes; the
	// fake server, like vLLM, serves /reset_prefix_cache only then.
	p, rec := newFake(t, nil, func(o *ProcessOptions) { o.Env = map[string]string{"VLLM_LOGGING_LEVEL": "DEBUG"} })
	srv, err := p.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	env := readRecord(t, rec).Env
	if env["VLLM_SERVER_DEV_MODE"] != "1" || env["VLLM_LOGGING_LEVEL"] != "DEBUG" {
		t.Errorf("server environment VLLM_* = %v, want VLLM_SERVER_DEV_MODE=1 and the configured VLLM_LOGGING_LEVEL=DEBUG", env)
	}
	if err := srv.ResetCache(ctx); err != nil {
		t.Errorf("ResetCache: %v", err)
	}
	stop(t, srv)

	// A configured value wins.
	p, rec = newFake(t, nil, func(o *ProcessOptions) { o.Env = map[string]string{"VLLM_SERVER_DEV_MODE": "0"} })
	srv, err = p.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer stop(t, srv)
	if got := readRecord(t, rec).Env["VLLM_SERVER_DEV_MODE"]; got != "0" {
		t.Errorf("VLLM_SERVER_DEV_MODE = %q, want the configured 0", got)
	}
	if err := srv.ResetCache(ctx); !errors.Is(err, ErrResetUnsupported) {
		t.Errorf("ResetCache without dev mode = %v, want ErrResetUnsupported", err)
	}
}

// TestProcessBindsLoopback checks the listening socket of a server whose
// command names no address: like vLLM, the fake server then binds every
// interface, and with the development routes open that puts
// /reset_prefix_cache and /sleep on the network. spoc passes --host.
func TestProcessBindsLoopback(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp to read the listening sockets from")
	}
	ctx := context.Background()
	p, rec := newFake(t, nil, nil)
	srv, err := p.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	port := portOf(t, srv.Endpoint().BaseURL)
	if got := listeningAddrs(t, port); !reflect.DeepEqual(got, []string{"127.0.0.1"}) {
		t.Errorf("server listens on %v, want only 127.0.0.1 (argv %q)", got, readRecord(t, rec).Args)
	}
	if got := readRecord(t, rec).Env["VLLM_SERVER_DEV_MODE"]; got != "1" {
		t.Errorf("VLLM_SERVER_DEV_MODE = %q on a loopback server, want 1", got)
	}
	stop(t, srv)

	// A command that binds every interface itself keeps the development
	// routes closed; the cache then cannot be reset, and says so.
	p, rec = newFake(t, []string{"--host", "0.0.0.0"}, nil)
	srv, err = p.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	r := readRecord(t, rec)
	if v, ok := r.Env["VLLM_SERVER_DEV_MODE"]; ok {
		t.Errorf("VLLM_SERVER_DEV_MODE = %q on a server bound to 0.0.0.0, want it unset", v)
	}
	if n := strings.Count(strings.Join(r.Args, " "), "--host"); n != 1 {
		t.Errorf("argv %q has %d --host flags, want the command's one", r.Args, n)
	}
	if err := srv.ResetCache(ctx); !errors.Is(err, ErrResetUnsupported) {
		t.Errorf("ResetCache of a server bound to 0.0.0.0 = %v, want ErrResetUnsupported", err)
	}
	stop(t, srv)

	// A command that places {{.Host}} under its own flag gets no --host.
	p, _ = newFake(t, []string{"--bind={{.Host}}"}, nil)
	argv, err := p.Argv(nil, 8000)
	if err != nil || vllm.HasFlag(argv, "host") || argv[len(argv)-1] != "--bind=127.0.0.1" {
		t.Errorf("argv with {{.Host}} = %q, %v; want it as rendered, without --host", argv, err)
	}
}

func portOf(t *testing.T, baseURL string) int {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("base URL %q has no port", baseURL)
	}
	return port
}

// listeningAddrs returns the local addresses of the TCP sockets in state
// LISTEN on port, read from /proc/net/tcp and /proc/net/tcp6.
func listeningAddrs(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || fields[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			hexIP, hexPort, _ := strings.Cut(fields[1], ":")
			if p, _ := strconv.ParseUint(hexPort, 16, 16); int(p) != port {
				continue
			}
			raw, err := hex.DecodeString(hexIP)
			if err != nil {
				t.Fatalf("%s: address %q: %v", f, fields[1], err)
			}
			for i := 0; i+4 <= len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			addrs = append(addrs, net.IP(raw).String())
		}
	}
	return addrs
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
			srv, err := p.Start(context.Background(), nil)
			if err != nil {
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
			stop(t, srv)
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
			srv, err := p.Start(context.Background(), Params{"max-num-seqs": 16})
			if srv != nil {
				t.Errorf("failed Start returned a server %+v", srv.Endpoint())
			}
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("Start error = %v, want a *Failure", err)
			}
			if f.Reason != tc.reason || f.ExitCode != tc.exitCode {
				t.Errorf("failure = %+v, want reason %s exit %d", f, tc.reason, tc.exitCode)
			}
			if got := errors.Is(err, ErrInfeasible); got != tc.infeasible {
				t.Errorf("errors.Is(err, ErrInfeasible) = %v, want %v (%v)", got, tc.infeasible, err)
			}
			if !errors.Is(err, tc.reason.sentinel()) {
				t.Errorf("errors.Is(err, %v) = false", tc.reason.sentinel())
			}
			if f.Log != serverLog(p.opts.Dir, 1) || f.Detail == "" {
				t.Errorf("failure lacks log or detail: %+v", f)
			}
			if pid := readRecord(t, rec).PID; processAlive(pid) {
				t.Errorf("failed server pid %d still running", pid)
			}
			if tc.exitCode < 0 {
				return // the hanging modes take their health timeout again
			}
			// A failed Start leaves nothing to stop: the launcher is free
			// and the next server gets the next folder.
			_, err = p.Start(context.Background(), Params{"max-num-seqs": 16})
			if !errors.As(err, &f) || f.Reason != tc.reason || f.Log != serverLog(p.opts.Dir, 2) {
				t.Errorf("Start after a failed Start = %v, want the same %s failure logged in server-002", err, tc.reason)
			}
		})
	}
}

func TestProcessStartCancelled(t *testing.T) {
	p, rec := newFake(t, []string{"--fake-mode", "never-healthy"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
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
	if _, err := p.Argv(Params{"max_num_seqs": 16}, 1); err == nil || !strings.Contains(err.Error(), "--max-num-seqs") {
		t.Errorf("trial flag pinned by the command: err = %v", err)
	}
	missing, err := NewProcess(ProcessOptions{Command: []string{filepath.Join(t.TempDir(), "no-such-server")}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.Start(context.Background(), nil)
	var f *Failure
	if err == nil || errors.As(err, &f) || errors.Is(err, ErrInfeasible) {
		t.Errorf("missing binary: err = %v, want a plain (FAIL) error", err)
	}
}

func TestArgvDropsBaseFlagsPinnedByCommand(t *testing.T) {
	p, err := NewProcess(ProcessOptions{
		Command:    []string{"vllm", "serve", "{{.Model}}", "--port={{.Port}}", "--tensor-parallel-size", "2"},
		Model:      "m",
		BaseParams: Params{"tensor-parallel-size": 4, "max-model-len": 8192},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Argv(Params{"enable-chunked-prefill": true}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vllm", "serve", "m", "--port=9000", "--tensor-parallel-size", "2", "--host", "127.0.0.1", "--enable-chunked-prefill", "--max-model-len", "8192"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Argv:\n got %q\nwant %q", got, want)
	}
}

func TestProcessDryRun(t *testing.T) {
	p, err := NewProcess(ProcessOptions{
		Command:    []string{"vllm", "serve", "{{.Model}}", "--port", "{{.Port}}"},
		Model:      "m",
		BaseParams: Params{"max-model-len": 8192},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.DryRun(Params{"max-num-seqs": 8})
	if err != nil {
		t.Fatal(err)
	}
	if want := `vllm serve m --port "<port>" --host 127.0.0.1 --max-model-len 8192 --max-num-seqs 8`; got != want {
		t.Errorf("DryRun:\n got %s\nwant %s", got, want)
	}
	if _, err := p.DryRun(Params{"x": nil}); err == nil {
		t.Error("DryRun accepted an unsupported value")
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

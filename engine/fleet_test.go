package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoc-project/spoc/engine/haproxy"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// simFleet is a process launcher of three `spoc sim serve` replicas (one
// GPU each) behind the HAProxy on PATH.
func simFleet(t *testing.T, balance string) *Process {
	t.Helper()
	bin := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	p, err := NewProcess(ProcessOptions{
		Command:       []string{spocBinary(t), "sim", "serve", "--port", "{{.Port}}", "--model", "{{.Model}}", "--gpus", "1", "--gpu", "H100-SXM", "--time-scale", "50"},
		Model:         "gpt-oss-20b",
		BaseParams:    Params{"tensor-parallel-size": 1, "max-model-len": 131072},
		HealthTimeout: time.Minute,
		StopTimeout:   10 * time.Second,
		PollInterval:  50 * time.Millisecond,
		Dir:           t.TempDir(),
		Replicas:      3, GPUsPerReplica: 1,
		Router: &FleetRouter{Binary: bin, Balance: balance, Header: sim.DefaultSessionHeader},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// complete sends one non-streamed completion of prompt through base with
// the session header and returns the cached prompt tokens it reports.
func complete(t *testing.T, base, session, prompt string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "gpt-oss-20b", "prompt": prompt, "max_tokens": 1})
	req, _ := http.NewRequest(http.MethodPost, base+vllm.PathCompletions, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sim.DefaultSessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("completion through %s: HTTP %d %s", base, resp.StatusCode, b)
	}
	return out.Usage.Details.Cached
}

// served is each replica's finished-request count from its /metrics.
func served(t *testing.T, ep Endpoint) []float64 {
	t.Helper()
	var n []float64
	for _, u := range ep.MetricsURLs {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, vllm.MetricRequestSuccess) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				sum += v
			}
		}
		resp.Body.Close()
		n = append(n, sum)
	}
	return n
}

// A process fleet behind session affinity: one server per replica with its
// own GPU, HAProxy in front on loopback sending each session where the
// simulator's ring says, a reset that reaches every replica, and a dead
// replica named.
func TestProcessFleetBehindHAProxy(t *testing.T) {
	p := simFleet(t, haproxy.Hash)
	srv, err := p.Start(context.Background(), nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer stop(t, srv)
	f := srv.(*fleetServer)
	ep := srv.Endpoint()
	if !strings.HasPrefix(ep.BaseURL, "http://127.0.0.1:") || len(ep.MetricsURLs) != 3 || ep.MetricsNames[2] != "replica-2" {
		t.Fatalf("endpoint = %+v", ep)
	}
	for i, rep := range f.replicas {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", rep.r.pgid))
		if err == nil && !bytes.Contains(env, []byte("\x00CUDA_VISIBLE_DEVICES="+strconv.Itoa(i)+"\x00")) {
			t.Errorf("replica %d does not run on GPU %d alone", i, i)
		}
	}
	cfg, _ := os.ReadFile(strings.TrimSuffix(ep.Log, "haproxy.log") + "haproxy.cfg")
	for _, want := range []string{"option http-no-delay", "balance hdr(X-Session-Id)", "hash-type consistent", "bind 127.0.0.1:"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}

	// Same assignment as the simulated fleet's session-affinity router.
	ring, err := sim.NewHAProxyRing(make([]sim.HAProxyServer, 3), sim.HAProxyHash{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	byReplica := map[int]string{}
	for u := range 24 {
		key := sim.SessionKey(sim.SessionKeyUser, u, 0)
		before := served(t, ep)
		complete(t, ep.BaseURL, key, "hello "+key)
		after := served(t, ep)
		got := -1
		for i := range after {
			if after[i] > before[i] {
				got = i
			}
		}
		if want := ring.Pick(key, nil); got != want {
			t.Errorf("session %s went to replica %d; the simulator's ring says %d", key, got, want)
		}
		byReplica[got] = key
	}
	if len(byReplica) != 3 {
		t.Fatalf("24 sessions reached replicas %v; want all three", byReplica)
	}

	// The reset reaches every replica, not the one the router picks.
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 200)
	for i := range 3 {
		complete(t, ep.BaseURL, byReplica[i], long)
		if c := complete(t, ep.BaseURL, byReplica[i], long); c == 0 {
			t.Fatalf("replica %d: a repeated prompt hit no cache", i)
		}
	}
	if err := srv.ResetCache(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if c := complete(t, ep.BaseURL, byReplica[i], long); c != 0 {
			t.Errorf("replica %d kept %d cached tokens after the fleet's reset", i, c)
		}
	}

	// A reset while a request runs waits for it to end: a reset the
	// replica takes with blocks still held leaves that history cached.
	other := strings.Repeat("pack my box with five dozen liquor jugs ", 200)
	body, _ := json.Marshal(map[string]any{"model": "gpt-oss-20b", "prompt": other, "max_tokens": 3000, "min_tokens": 3000, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequest(http.MethodPost, ep.BaseURL+vllm.PathCompletions, bytes.NewReader(body))
	req.Header.Set(sim.DefaultSessionHeader, byReplica[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	streamed := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		streamed <- n
	}()
	time.Sleep(100 * time.Millisecond)
	if busy, err := requestsInFlight(context.Background(), http.DefaultClient, ep.MetricsURLs[0]); err != nil || busy != 1 {
		t.Fatalf("replica 0 has %g requests in flight (%v); the test needs its long request running", busy, err)
	}
	if err := srv.ResetCache(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := <-streamed; n == 0 {
		t.Fatal("the long request streamed nothing")
	}
	if c := complete(t, ep.BaseURL, byReplica[0], other); c != 0 {
		t.Errorf("a reset during a request kept %d of its prompt's tokens cached", c)
	}

	// A request the client cuts through HAProxy ends on its replica.
	cctx, cancel := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(cctx, http.MethodPost, ep.BaseURL+vllm.PathCompletions, bytes.NewReader(body))
	req.Header.Set(sim.DefaultSessionHeader, byReplica[1])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 256))
	cancel()
	resp.Body.Close()
	cut := time.Now()
	for {
		busy, err := requestsInFlight(context.Background(), http.DefaultClient, ep.MetricsURLs[1])
		if err == nil && busy == 0 {
			t.Logf("the cut request ended on its replica %v after the client closed", time.Since(cut).Round(time.Millisecond))
			break
		}
		if time.Since(cut) > 5*time.Second {
			t.Fatalf("replica 1 still has %g requests 5 s after the client cut its stream (%v)", busy, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := Alive(context.Background(), srv); err != nil {
		t.Fatalf("Alive: %v", err)
	}
	if err := syscall.Kill(-f.replicas[1].r.pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-f.replicas[1].r.done
	err = Alive(context.Background(), srv)
	if !errors.Is(err, ErrServerGone) || !strings.Contains(err.Error(), "replica 1 of 3") {
		t.Fatalf("Alive after replica 1 died = %v, want ErrServerGone naming replica 1 of 3", err)
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, r := range append([]*running{f.router}, f.replicas[0].r, f.replicas[2].r) {
		if groupAlive(r.pgid) {
			t.Errorf("process group %d still alive after Stop", r.pgid)
		}
	}
}

// Without HAProxy a fleet starts nothing and says how to install it.
func TestProcessFleetWithoutHAProxySaysHowToInstall(t *testing.T) {
	p, err := NewProcess(ProcessOptions{
		Command: []string{fakeServer, "--port", "{{.Port}}"}, Replicas: 2, GPUsPerReplica: 1,
		Router: &FleetRouter{Binary: "/nonexistent/haproxy", Balance: haproxy.RoundRobin}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{p.Check(), func() error { _, err := p.Start(context.Background(), nil); return err }()} {
		if err == nil || !strings.Contains(err.Error(), "apt-get install haproxy") {
			t.Errorf("error = %v, want one saying apt-get install haproxy", err)
		}
	}
	entries, _ := os.ReadDir(p.opts.Dir)
	if len(entries) != 0 {
		t.Errorf("a fleet without HAProxy started something: %v", entries)
	}
	// and the launcher is free for the next start
	if err := p.slot.take("process"); err != nil {
		t.Errorf("slot not released: %v", err)
	}
}

func TestReplicaGPUs(t *testing.T) {
	for _, tc := range []struct {
		env      string
		replicas int
		tp       int
		want     []string
		err      string
	}{
		{"", 3, 1, []string{"0", "1", "2"}, ""},
		{"", 2, 2, []string{"0,1", "2,3"}, ""},
		{"4,5,6,7", 2, 2, []string{"4,5", "6,7"}, ""},
		{"4,5", 2, 2, nil, "lists 2 GPUs, and 2 replicas of 2 need 4"},
	} {
		env := map[string]string{}
		if tc.env != "" {
			env[envCUDAVisibleDevices] = tc.env
		}
		p := &Process{opts: ProcessOptions{Env: env, Replicas: tc.replicas, GPUsPerReplica: tc.tp, Router: &FleetRouter{}}}
		for r := range tc.replicas {
			got, err := p.replicaGPUs(r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%+v: error %v, want %q", tc, err, tc.err)
				}
				break
			}
			if err != nil || got != tc.want[r] {
				t.Errorf("%+v replica %d: %q, %v; want %q", tc, r, got, err, tc.want[r])
			}
		}
	}
}

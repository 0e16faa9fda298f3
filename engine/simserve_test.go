package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	spocOnce sync.Once
	spocBin  string
	spocErr  error
)

// spocBinary builds spoc's own command once per test run: the process
// launcher is tested against `spoc sim serve`, a real server taking vLLM's
// flags.
func spocBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/spoc; skipped with -short")
	}
	spocOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spoc-bin-")
		if err != nil {
			spocErr = err
			return
		}
		spocBin = filepath.Join(dir, "spoc")
		out, err := exec.Command("go", "build", "-o", spocBin, "../cmd/spoc").CombinedOutput()
		if err != nil {
			spocErr = errors.New(string(out))
		}
	})
	if spocErr != nil {
		t.Fatalf("go build ../cmd/spoc: %v", spocErr)
	}
	return spocBin
}

func simServe(t *testing.T) *Process {
	t.Helper()
	p, err := NewProcess(ProcessOptions{
		Command:       []string{spocBinary(t), "sim", "serve", "--port", "{{.Port}}", "--model", "{{.Model}}"},
		Model:         "gpt-oss-120b",
		BaseParams:    Params{"tensor-parallel-size": 4, "max-model-len": 131072},
		HealthTimeout: time.Minute,
		StopTimeout:   10 * time.Second,
		PollInterval:  50 * time.Millisecond,
		Dir:           t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcessRunsSpocSimServe(t *testing.T) {
	p := simServe(t)
	srv, err := p.Start(context.Background(), Params{"block-size": 32, "enable-prefix-caching": false, "max-num-batched-tokens": 2048})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer stop(t, srv)
	ep := srv.Endpoint()
	resp, err := http.Get(ep.MetricsURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The simulator reports the flags it runs with, as vLLM does.
	for _, want := range []string{`block_size="32"`, `enable_prefix_caching="False"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the server did not get its flags: /metrics lacks %s", want)
		}
	}
	if ep.Log != serverLog(p.opts.Dir, 1) {
		t.Errorf("server log = %q, want %q", ep.Log, serverLog(p.opts.Dir, 1))
	}
	log, _ := os.ReadFile(ep.Log)
	if !strings.Contains(string(log), "--block-size 32 --no-enable-prefix-caching --max-model-len 131072 --max-num-batched-tokens 2048 --tensor-parallel-size 4") {
		t.Errorf("server.log does not start with the command:\n%.300s", log)
	}
}

func TestProcessClassifiesSpocSimServeFailures(t *testing.T) {
	p := simServe(t)
	for _, tc := range []struct {
		name   string
		params Params
		reason Reason
	}{
		{"weights leave no KV cache", Params{"gpu-memory-utilization": 0.05}, ReasonKVCache},
		{"impossible flag value", Params{"block-size": 0}, ReasonRejected},
		{"unknown flag", Params{"swap-space": 4}, ReasonExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Start(context.Background(), tc.params)
			var f *Failure
			if !errors.As(err, &f) || f.Reason != tc.reason || f.ExitCode != 2 {
				t.Fatalf("Start = %v, want a %s failure with exit status 2", err, tc.reason)
			}
			if errors.Is(err, ErrInfeasible) != tc.reason.Infeasible() {
				t.Errorf("infeasible = %v for %s", !tc.reason.Infeasible(), tc.reason)
			}
		})
	}
}

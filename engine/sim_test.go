package engine

import (
	"context"
	"errors"
	"github.com/spoc-project/spoc/sim"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// newTestSim returns the default simulated deployment's launcher, whose
// server folders go to s.opts.Dir (a test temporary directory).
func newTestSim(t *testing.T) *Sim {
	t.Helper()
	return newTestSimOf(t, sim.ReferenceDeploymentSpec())
}

// newTestSimOf is a Sim of spec with its directory under t.
func newTestSimOf(t *testing.T, spec sim.DeploymentSpec) *Sim {
	t.Helper()
	d, err := sim.NewDeployment(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSim(d, SimOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSimVirtualDeployment(t *testing.T) {
	s := newTestSim(t)
	d, err := s.VirtualDeployment(Params{"max-num-batched-tokens": 2048, "enable-prefix-caching": false, "block_size": 32})
	if err != nil {
		t.Fatal(err)
	}
	if d.Params.MaxNumBatchedTokens != 2048 || d.Params.EnablePrefixCaching || d.Params.BlockSize != 32 || d.Params.MaxNumSeqs != 256 {
		t.Errorf("params not applied over the base: %+v", d.Params)
	}
	if s.base.Params.MaxNumBatchedTokens != 8192 {
		t.Error("VirtualDeployment modified the base deployment")
	}
	for _, tc := range []struct {
		name   string
		p      Params
		reason Reason // "" for a plain error
	}{
		{"impossible value", Params{"block-size": 0}, ReasonRejected},
		{"no memory for KV cache", Params{"gpu-memory-utilization": 0.05}, ReasonKVCache},
		{"flag not modelled", Params{"swap-space": 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.VirtualDeployment(tc.p)
			if err == nil {
				t.Fatal("accepted")
			}
			var f *Failure
			if tc.reason == "" {
				if errors.As(err, &f) || errors.Is(err, ErrInfeasible) {
					t.Errorf("err = %v, want a plain error", err)
				}
				return
			}
			if !errors.As(err, &f) || f.Reason != tc.reason || !errors.Is(err, ErrInfeasible) {
				t.Errorf("err = %v, want an infeasible %s failure", err, tc.reason)
			}
		})
	}
}

func TestSimServesAndStops(t *testing.T) {
	s := newTestSim(t)
	ctx := context.Background()
	srv, err := s.Start(ctx, Params{"max-num-seqs": 64})
	if err != nil {
		t.Fatal(err)
	}
	ep := srv.Endpoint()
	if s2, err := s.Start(ctx, nil); err == nil {
		s2.Stop(ctx)
		t.Error("second Start without Stop succeeded")
	}
	if ep.Model != "gpt-oss-120b" || len(ep.MetricsURLs) != 2 || ep.Log != serverLog(s.opts.Dir, 1) {
		t.Errorf("endpoint = %+v", ep)
	}
	for _, u := range append([]string{ep.BaseURL + "/health", ep.BaseURL + "/v1/models"}, ep.MetricsURLs...) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s", u, resp.StatusCode, body)
		}
		if strings.HasSuffix(u, "/metrics") && !strings.HasPrefix(u, ep.BaseURL+"/dcgm") && !strings.Contains(string(body), "vllm:") {
			t.Errorf("%s has no vLLM metrics", u)
		}
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(ep.BaseURL + "/health"); err == nil {
		t.Error("server still answers after Stop")
	}
	if b, err := os.ReadFile(ep.Log); err != nil || !strings.Contains(string(b), "--max-num-seqs 64") {
		t.Errorf("server.log = %q, %v", b, err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := s.Start(ctx, Params{"gpu-memory-utilization": 0.05}); !errors.Is(err, ErrInfeasible) {
		t.Errorf("Start with no KV memory = %v, want infeasible", err)
	}
	// Neither the repeated Stop nor the infeasible Start holds the launcher.
	srv, err = s.Start(ctx, nil)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	stop(t, srv)
}

func TestSimResetCache(t *testing.T) {
	s := newTestSim(t)
	ctx := context.Background()
	srv, err := s.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// the simulator serves vLLM's POST /reset_prefix_cache
	if err := srv.ResetCache(ctx); err != nil {
		t.Errorf("ResetCache = %v, want nil", err)
	}
	stop(t, srv)
	if err := srv.ResetCache(ctx); err == nil || errors.Is(err, ErrResetUnsupported) {
		t.Errorf("ResetCache of a stopped server = %v, want a connection error", err)
	}
}

func TestSimDryRun(t *testing.T) {
	var s any = newTestSim(t)
	dr, ok := s.(DryRunner)
	if !ok {
		t.Fatalf("%T does not implement DryRunner (DryRun(Params) (string, error))", s)
	}
	got, err := dr.DryRun(Params{"max-num-batched-tokens": 1024, "enable-chunked-prefill": true})
	if err != nil {
		t.Fatal(err)
	}
	want := "simulated openai/gpt-oss-120b on 4× H100-SXM (tensor parallel 4): --enable-chunked-prefill --max-num-batched-tokens 1024"
	if !strings.HasPrefix(got, want) {
		t.Errorf("DryRun = %q, want prefix %q", got, want)
	}
	got, _ = dr.DryRun(Params{"gpu-memory-utilization": 0.05})
	if !strings.Contains(got, "INFEASIBLE") {
		t.Errorf("DryRun of an impossible deployment = %q", got)
	}
}

// TestSimDryRunInTheFlavorsForm: a simulated SGLang deployment's dry run
// shows SGLang's flags as SGLang takes them (a switch off is left out),
// not vLLM's --no- form.
func TestSimDryRunInTheFlavorsForm(t *testing.T) {
	spec := sim.ReferenceDeploymentSpec()
	spec.Flavor, spec.Params = sim.FlavorSGLang, nil
	s := newTestSimOf(t, spec)
	got, err := s.DryRun(Params{"max-running-requests": 8, "disable-radix-cache": false})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, ": --max-running-requests 8") || strings.Contains(got, "--no-") {
		t.Errorf("dry run %q, want SGLang's form ending in --max-running-requests 8", got)
	}
}

// TestFlavorCommandLine: each flavor with a program of its own writes its
// command in its own form; generic has none.
func TestFlavorCommandLine(t *testing.T) {
	shape := Shape{TensorParallel: 2, ContextLength: 8192, ServedModelName: "m", Launched: true}
	for _, c := range []struct {
		fl   Flavor
		want string
	}{
		{VLLM(), "vllm serve org/m --enable-prompt-tokens-details --max-model-len 8192 --served-model-name m --tensor-parallel-size 2 --max-num-seqs 8"},
		{SGLang(), "python3 -m sglang.launch_server --model-path org/m --context-length 8192 --enable-cache-report --enable-metrics --served-model-name m --tp-size 2 --max-num-seqs 8"},
	} {
		got, err := c.fl.CommandLine("org/m", c.fl.ShapeParams(shape), Params{"max-num-seqs": 8})
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v\nwant %q", c.fl.Name, got, err, c.want)
		}
	}
	g, err := Generic(nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.ShapeParams(shape); p != nil {
		t.Errorf("generic shape params %v: spoc passes nothing implicit", p)
	}
	if _, err := g.CommandLine("org/m", nil, nil); !errors.Is(err, ErrNoProgram) {
		t.Errorf("generic command line: %v, want ErrNoProgram", err)
	}
}

package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/search"
)

func newTestSim(t *testing.T) *Sim {
	t.Helper()
	e := config.DefaultEngine()
	s, err := NewSimFromConfig(e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSimVirtualDeployment(t *testing.T) {
	s := newTestSim(t)
	d, err := s.VirtualDeployment(search.Params{"max-num-batched-tokens": 2048, "enable-prefix-caching": false, "block_size": 32})
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
		p      search.Params
		reason Reason // "" for a plain error
	}{
		{"impossible value", search.Params{"block-size": 0}, ReasonRejected},
		{"no memory for KV cache", search.Params{"gpu-memory-utilization": 0.05}, ReasonKVCache},
		{"flag not modelled", search.Params{"swap-space": 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.VirtualDeployment(tc.p)
			if err == nil {
				t.Fatal("accepted")
			}
			var f *Failure
			if tc.reason == "" {
				if errors.As(err, &f) || errors.Is(err, search.ErrInfeasible) {
					t.Errorf("err = %v, want a plain error", err)
				}
				return
			}
			if !errors.As(err, &f) || f.Reason != tc.reason || !errors.Is(err, search.ErrInfeasible) {
				t.Errorf("err = %v, want an infeasible %s failure", err, tc.reason)
			}
		})
	}
}

func TestSimServesAndStops(t *testing.T) {
	s := newTestSim(t)
	dir := t.TempDir()
	ctx := WithArtifacts(context.Background(), dir)
	ep, err := s.Start(ctx, search.Params{"max-num-seqs": 64})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx, nil); err == nil {
		t.Error("second Start without Stop succeeded")
	}
	if ep.Model != "gpt-oss-120b" || len(ep.MetricsURLs) != 2 {
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
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(ep.BaseURL + "/health"); err == nil {
		t.Error("server still answers after Stop")
	}
	if b, err := os.ReadFile(ep.Log); err != nil || !strings.Contains(string(b), "--max-num-seqs 64") {
		t.Errorf("server.log = %q, %v", b, err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := s.Start(ctx, search.Params{"gpu-memory-utilization": 0.05}); !errors.Is(err, search.ErrInfeasible) {
		t.Errorf("Start with no KV memory = %v, want infeasible", err)
	}
}

func TestSimDryRun(t *testing.T) {
	s := newTestSim(t)
	got, err := s.DryRun(search.Params{"max-num-batched-tokens": 1024, "enable-chunked-prefill": true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "simulated openai/gpt-oss-120b on 4× H100-SXM (tensor parallel 4): --enable-chunked-prefill --max-num-batched-tokens 1024"
	if !strings.HasPrefix(got, want) {
		t.Errorf("DryRun = %q, want prefix %q", got, want)
	}
	got, _ = s.DryRun(search.Params{"gpu-memory-utilization": 0.05}, 1)
	if !strings.Contains(got, "INFEASIBLE") {
		t.Errorf("DryRun of an impossible deployment = %q", got)
	}
}

func TestFromConfig(t *testing.T) {
	e := config.DefaultEngine()
	for _, tc := range []struct {
		kind string
		mod  func(*config.Engine)
		want string
	}{
		{config.EngineSim, nil, "sim"},
		{config.EngineProcess, func(e *config.Engine) { e.Process.Command = []string{"vllm", "serve", "{{.Model}}"} }, "process"},
		{config.EngineExternal, func(e *config.Engine) { e.External.URL = "http://gpu-box:8000" }, "external"},
		{config.EngineKubernetes, nil, "kubernetes"},
	} {
		c := e
		c.Kind = tc.kind
		if tc.mod != nil {
			tc.mod(&c)
		}
		eng, err := FromConfig(c, Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.kind, err)
			continue
		}
		if got := eng.(Namer).Kind(); got != tc.want {
			t.Errorf("kind %s gave %s", tc.kind, got)
		}
		if Reconfigurable(eng) != (tc.kind != config.EngineExternal) {
			t.Errorf("%s: Reconfigurable = %v", tc.kind, Reconfigurable(eng))
		}
	}
	c := e
	c.Kind = config.EngineProcess
	c.GPUs, c.TensorParallelSize = 4, 2
	c.Process.Command = []string{"vllm", "serve", "m", "--max-model-len", "8192"}
	eng, err := FromConfig(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eng.(DryRunner).DryRun(search.Params{"max-num-seqs": 32}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "vllm serve m --max-model-len 8192 --block-size 16 --data-parallel-size 2 --enable-chunked-prefill --enable-prefix-caching --gpu-memory-utilization 0.9 --max-num-batched-tokens 8192 --max-num-seqs 32 --tensor-parallel-size 2"
	if got != want {
		t.Errorf("process dry run:\n got %s\nwant %s", got, want)
	}
}

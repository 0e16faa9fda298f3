package config

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/engine"
)

// Every engine kind resolves to its launcher; a process launcher renders
// the configured flags over the command template.
func TestEngineLauncher(t *testing.T) {
	e := DefaultEngine()
	for _, tc := range []struct {
		kind string
		mod  func(*Engine)
		want string
	}{
		{EngineSim, nil, "sim"},
		{EngineProcess, func(e *Engine) { e.Process.Command = []string{"vllm", "serve", "{{.Model}}"} }, "process"},
		{EngineExternal, func(e *Engine) { e.External.URL = "http://gpu-box:8000" }, "external"},
		{EngineKubernetes, nil, "kubernetes"},
	} {
		c := e
		c.Kind = tc.kind
		if tc.mod != nil {
			tc.mod(&c)
		}
		eng, err := c.Launcher(LauncherOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.kind, err)
			continue
		}
		if got := eng.(engine.Namer).Kind(); got != tc.want {
			t.Errorf("kind %s gave %s", tc.kind, got)
		}
		if engine.Reconfigurable(eng) != (tc.kind != EngineExternal) {
			t.Errorf("%s: Reconfigurable = %v", tc.kind, engine.Reconfigurable(eng))
		}
		if d, ok := eng.(engine.Describer); !ok || d.Describe() == "" {
			t.Errorf("%s: no description (Describer: %v)", tc.kind, ok)
		}
	}
	c := e
	c.Kind = EngineProcess
	c.GPUs, c.TensorParallelSize = 4, 2
	c.Process.Command = []string{"vllm", "serve", "m", "--max-model-len", "8192"}
	eng, err := c.Launcher(LauncherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eng.(engine.DryRunner).DryRun(engine.Params{"max-num-seqs": 32})
	if err != nil {
		t.Fatal(err)
	}
	want := "vllm serve m --max-model-len 8192 --host 127.0.0.1 --block-size 16 --data-parallel-size 2 --enable-chunked-prefill --enable-prefix-caching --enable-prompt-tokens-details --gpu-memory-utilization 0.9 --max-num-batched-tokens 8192 --max-num-seqs 32 --tensor-parallel-size 2"
	if got != want {
		t.Errorf("process dry run:\n got %s\nwant %s", got, want)
	}
}

// The launcher table has one constructor per engine kind the configuration
// accepts, and no other.
func TestLauncherTableCoversEveryKind(t *testing.T) {
	if len(launchers) != len(EngineKinds) {
		t.Errorf("%d launchers for %d engine kinds %v", len(launchers), len(EngineKinds), EngineKinds)
	}
	for _, k := range EngineKinds {
		if launchers[k] == nil {
			t.Errorf("engine kind %q has no launcher", k)
		}
	}
	if _, err := (Engine{Kind: "slurm"}).Launcher(LauncherOptions{}); err == nil || !strings.Contains(err.Error(), `unknown engine "slurm"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

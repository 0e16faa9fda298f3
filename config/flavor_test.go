package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/engine"
)

const genericYAML = `engine:
  kind: process
  flavor: generic
  model: gpt-oss-20b
  gpu: H200-SXM
  gpus: 1
  tensor_parallel_size: 1
  max_model_len: 131072
  process:
    command: [server, --listen, "{{.Port}}"]
  generic:
    params:
      max-num-seqs: "--seqs={{.Value}}"
      max-num-batched-tokens: [--batch, "{{.Value}}"]
    reset_path: /flush
search:
  space:
    - {name: max-num-seqs, type: int, low: 8, high: 64}
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192}
`

// TestGenericFlavorPassesNothingImplicit: flavor generic drops vLLM's
// default engine.params and adds no implicit flag (tensor-parallel size,
// context limit, served name, prompt-token details).
func TestGenericFlavorPassesNothingImplicit(t *testing.T) {
	cfg, err := Load(strings.NewReader(genericYAML), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Engine.BaseParams(cfg.Fleet); len(got) != 0 {
		t.Errorf("BaseParams = %v, want none", got)
	}
	if got := cfg.Engine.Generic.Params["max-num-batched-tokens"]; !reflect.DeepEqual(got, ArgTemplate{"--batch", "{{.Value}}"}) {
		t.Errorf("list template = %q", got)
	}
	l, err := cfg.Engine.Launcher(LauncherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := l.(engine.DryRunner).DryRun(engine.Params{"max-num-seqs": 16, "max-num-batched-tokens": 2048})
	if want := `server --listen "<port>" --batch 2048 --seqs=16`; err != nil || dry != want {
		t.Errorf("DryRun = %s, %v; want %s", dry, err, want)
	}
	fl, err := cfg.Engine.LaunchFlavor()
	if err != nil || fl.ResetPath != "/flush" || fl.NamedFlags {
		t.Errorf("LaunchFlavor = %+v, %v", fl, err)
	}
	// engine.params written in the file are kept, and must be templated
	withParams := strings.Replace(genericYAML, "  process:", "  params: {max-num-seqs: 32}\n  process:", 1)
	cfg, err = Load(strings.NewReader(withParams), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Engine.BaseParams(cfg.Fleet); !reflect.DeepEqual(map[string]any(got), map[string]any{"max-num-seqs": 32}) {
		t.Errorf("BaseParams = %v, want engine.params only", got)
	}
}

// TestGenericFlavorErrorsNameKeyAndLine: a parameter without a template,
// a bad template, an unknown flavor and generic on the simulator each
// fail with the key and line.
func TestGenericFlavorErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"space name without a template", "    - {name: max-num-batched-tokens,", "    - {name: max-num-batched-token,",
			[]string{"g.yaml:19:8", "search.space[1].name", `"max-num-batched-token" has no template`, `did you mean "max-num-batched-tokens"`}},
		{"engine.params without a template", "  process:", "  params:\n    tensor-parallel-size: 2\n  process:",
			[]string{"g.yaml:10", "engine.params.tensor-parallel-size", "has no template in engine.generic.params"}},
		{"bad template", `"--seqs={{.Value}}"`, `"--seqs={{.Value"`,
			[]string{"g.yaml:13:", "engine.generic.params.max-num-seqs"}},
		{"template of the wrong type", `"--seqs={{.Value}}"`, `{a: b}`,
			[]string{"g.yaml:13:", "engine.generic.params.max-num-seqs", "template string"}},
		{"unknown flavor", "flavor: generic", "flavor: generik",
			[]string{"g.yaml:3", "engine.flavor", `unknown engine flavor "generik"`, `did you mean "generic"`}},
		{"generic on the simulator", "kind: process", "kind: sim",
			[]string{"g.yaml:3", "engine.flavor", "use kind process, kubernetes or external"}},
		{"reset path", "reset_path: /flush", "reset_path: flush",
			[]string{"g.yaml:15:", "engine.generic.reset_path", "starting with /"}},
		{"generic on Kubernetes without args", "  process:\n    command: [server, --listen, \"{{.Port}}\"]", "  kubernetes: {namespace: ns, image: example/strict:1}",
			[]string{"engine.kubernetes.args", "flavor generic needs the container's args"}},
		{"generic on Kubernetes without an image", "  process:\n    command: [server, --listen, \"{{.Port}}\"]", "  kubernetes: {namespace: ns, args: [--listen, \"{{.Port}}\"]}",
			[]string{"engine.kubernetes.image", "needs an image"}},
		{"generic section on vllm", "flavor: generic", "flavor: vllm",
			[]string{"g.yaml:11:", "engine.generic", "only with engine.flavor generic"}},
		{"unknown metric role", "    reset_path: /flush", "    reset_path: /flush\n    metrics:\n      running: acme_active\n      kv_cache_usge: acme_kv",
			[]string{"g.yaml:18:", "engine.generic.metrics.kv_cache_usge", `unknown metric role "kv_cache_usge"`, `did you mean "kv_cache_usage"`}},
		{"metric name that is none", "    reset_path: /flush", "    reset_path: /flush\n    metrics: {running: \"acme active\"}",
			[]string{"g.yaml:16:", "engine.generic.metrics.running", "not a Prometheus metric name"}},
		{"one metric for two roles", "    reset_path: /flush", "    reset_path: /flush\n    metrics: {running: acme_n, waiting: acme_n}",
			[]string{"engine.generic.metrics.waiting", `"acme_n" is already the server's name for running`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(genericYAML, tc.from, tc.to, 1)
			if strings.Contains(tc.to, "kubernetes:") {
				text = strings.Replace(text, "kind: process", "kind: kubernetes", 1)
			}
			if text == genericYAML {
				t.Fatalf("%q not in the file", tc.from)
			}
			_, err := Load(strings.NewReader(text), "g.yaml")
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestGenericFlavorMetrics: engine.generic.metrics reaches telemetry (the
// setup's server metric names) and the reset's busy gauges; without it
// the setup says telemetry reads no server metric, and why.
func TestGenericFlavorMetrics(t *testing.T) {
	text := strings.Replace(genericYAML, "    reset_path: /flush", "    reset_path: /flush\n    metrics: {running: acme_active, waiting: acme_queued, kv_cache_usage: acme_kv}", 1)
	cfg, err := Load(strings.NewReader(text), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"running": "acme_active", "waiting": "acme_queued", "kv_cache_usage": "acme_kv"}
	fl, err := cfg.Engine.LaunchFlavor()
	if err != nil {
		t.Fatal(err)
	}
	if got, none := fl.ServerMetrics(); !reflect.DeepEqual(got, want) || none != "" {
		t.Errorf("ServerMetrics = %v, %q; want %v", got, none, want)
	}
	if !reflect.DeepEqual(fl.BusyMetrics, []string{"acme_active", "acme_queued"}) {
		t.Errorf("BusyMetrics = %v, want the mapped running and waiting gauges", fl.BusyMetrics)
	}
	setup, err := cfg.Setup(SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tel := setup.Telemetry; !reflect.DeepEqual(tel.ServerMetrics, want) || tel.NoServerMetrics != "" {
		t.Errorf("setup telemetry: %v, %q", tel.ServerMetrics, tel.NoServerMetrics)
	}
	cfg, err = Load(strings.NewReader(genericYAML), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	setup, err = cfg.Setup(SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tel := setup.Telemetry; tel.ServerMetrics != nil || tel.NoServerMetrics != engine.NoGenericMetrics {
		t.Errorf("without engine.generic.metrics: %v, %q; want none, %q", tel.ServerMetrics, tel.NoServerMetrics, engine.NoGenericMetrics)
	}
	// vLLM's and SGLang's names are the catalog's
	for _, f := range []string{"vllm", "sglang"} {
		fl, _ := engine.Named(f)
		if names, none := fl.ServerMetrics(); names != nil || none != "" {
			t.Errorf("%s: ServerMetrics = %v, %q; want the catalog's", f, names, none)
		}
	}
}

// TestFlavorDefaultIsVLLM: no flavor is vLLM's, with today's implicit
// flags.
func TestFlavorDefaultIsVLLM(t *testing.T) {
	e := DefaultEngine()
	e.Kind = EngineProcess
	e.Process.Command = []string{"vllm", "serve", "{{.Model}}"}
	for _, flavor := range []string{"", FlavorVLLM} {
		e.Flavor = flavor
		got := e.BaseParams(Fleet{})
		if got["enable-prompt-tokens-details"] != true || got["tensor-parallel-size"] != 4 {
			t.Errorf("flavor %q: BaseParams = %v, want vLLM's implicit flags", flavor, got)
		}
		fl, err := e.LaunchFlavor()
		if err != nil || !fl.NamedFlags || fl.ResetPath != "/reset_prefix_cache" {
			t.Errorf("flavor %q: LaunchFlavor = %+v, %v", flavor, fl, err)
		}
	}
}

const sglangYAML = `engine:
  kind: process
  flavor: sglang
  model: gpt-oss-20b
  gpu: H200-SXM
  gpus: 2
  tensor_parallel_size: 1
  max_model_len: 131072
  process:
    command: [python3, -m, sglang.launch_server, --model-path, "{{.Model}}", --port, "{{.Port}}"]
`

// TestSGLangFlavor: SGLang's implicit flags, its default search space,
// and a dry run in SGLang's form.
func TestSGLangFlavor(t *testing.T) {
	cfg, err := Load(strings.NewReader(sglangYAML), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tp-size": 1, "context-length": 131072, "enable-metrics": true, "enable-cache-report": true, "dp-size": 2}
	if got := cfg.Engine.BaseParams(cfg.Fleet); !reflect.DeepEqual(map[string]any(got), want) {
		t.Errorf("BaseParams = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(cfg.Search.Space, DefaultSGLangSpace()) {
		t.Errorf("search space = %v, want SGLang's default", cfg.Search.Space)
	}
	l, err := cfg.Engine.Launcher(LauncherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := l.(engine.DryRunner).DryRun(engine.Params{"max-running-requests": 64, "disable-radix-cache": true, "mem-fraction-static": 0.85})
	wantDry := `python3 -m sglang.launch_server --model-path gpt-oss-20b --port "<port>" --host 127.0.0.1 --context-length 131072 --disable-radix-cache --dp-size 2 --enable-cache-report --enable-metrics --max-running-requests 64 --mem-fraction-static 0.85 --tp-size 1`
	if err != nil || dry != wantDry {
		t.Errorf("DryRun =\n%s, %v\nwant\n%s", dry, err, wantDry)
	}
	fl, _ := cfg.Engine.LaunchFlavor()
	if fl.ResetPath != "/flush_cache" || fl.DevModeEnv != "" {
		t.Errorf("flavor = %+v, want SGLang's flush route and no dev mode", fl)
	}
	if !reflect.DeepEqual(DefaultSearch().Space, DefaultSpace()) {
		t.Error("the default (vllm) search space changed")
	}
}

// TestSGLangFlagCatalogue: a vLLM flag or a misspelt one on SGLang fails
// config check with the key, the line and a "did you mean".
func TestSGLangFlagCatalogue(t *testing.T) {
	for _, tc := range []struct {
		name, add string
		want      []string
	}{
		{"vLLM flag in engine.params", "  params: {max-num-seqs: 64}\n",
			[]string{"s.yaml:11:", "engine.params.max-num-seqs", "is a vLLM flag, not SGLang's", "did you mean --max-running-requests?"}},
		{"misspelt flag in engine.params", "  params:\n    max-runing-requests: 64\n",
			[]string{"s.yaml:12:", "engine.params.max-runing-requests", "unknown SGLang flag", `did you mean "max-running-requests"`}},
		{"bad choice", "  params: {schedule-policy: fifo}\n",
			[]string{"s.yaml:11:", "engine.params.schedule-policy", "not one of"}},
		{"vLLM flag in search.space", "search:\n  space:\n    - {name: gpu-memory-utilization, type: float, low: 0.8, high: 0.9}\n",
			[]string{"s.yaml:13:", "search.space[0].name", "--mem-fraction-static"}},
		{"misspelt flag in search.space", "search:\n  space:\n    - {name: chunked-prefil-size, type: int, low: 1024, high: 8192}\n",
			[]string{"s.yaml:13:", "search.space[0].name", `did you mean "chunked-prefill-size"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(sglangYAML+tc.add), "s.yaml")
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSGLangOnTheSimulator: kind sim takes SGLang's flags and reads them
// in its vLLM-like terms; a flag unknown to SGLang is refused with key and
// line; and a multi-fidelity plan on SGLang has its simulator.
func TestSGLangOnTheSimulator(t *testing.T) {
	onSim := strings.Replace(sglangYAML, "kind: process", "kind: sim", 1) + "  params: {max-running-requests: 48, disable-radix-cache: true, mem-fraction-static: 0.8, schedule-policy: lpm}\n"
	cfg, err := Load(strings.NewReader(onSim), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Setup(SetupOptions{Plan: true})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Deployment.Sim.Params
	if p.MaxNumSeqs != 48 || p.EnablePrefixCaching || p.GPUMemoryUtilization != 0.8 {
		t.Errorf("simulated engine %+v: want max-num-seqs 48, no prefix caching, 0.8 of the memory", p)
	}
	dep, err := s.Simulator.VirtualDeployment(engine.Params{"max-running-requests": 16, "chunked-prefill-size": 4096})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Params.MaxNumSeqs != 16 || dep.Params.MaxNumBatchedTokens != 4096 {
		t.Errorf("trial on the simulator: %+v", dep.Params)
	}
	if _, err := s.Simulator.VirtualDeployment(engine.Params{"max-num-seqs": 16}); err == nil {
		t.Error("a vLLM flag was taken as SGLang's")
	}
	_, err = Load(strings.NewReader(strings.Replace(onSim, "max-running-requests: 48", "max-num-seqs: 48", 1)), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "engine.params.max-num-seqs") || !strings.Contains(err.Error(), "--max-running-requests") {
		t.Errorf("a vLLM flag on SGLang on kind sim: %v", err)
	}
}

// TestGenericFlavorHasNoSimulator: a plan on a generic server has no
// simulated counterpart, so the default multi fidelity is refused with
// what to set; SGLang's (multi by default) has one.
func TestGenericFlavorHasNoSimulator(t *testing.T) {
	cfg, err := Load(strings.NewReader(genericYAML), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Setup(SetupOptions{Plan: true})
	if err == nil || !strings.Contains(err.Error(), "set plan.fidelity: live") || !strings.Contains(err.Error(), "engine.flavor generic") {
		t.Fatalf("Setup = %v, want the multi fidelity refused for flavor generic", err)
	}
	cfg, err = Load(strings.NewReader(sglangYAML), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Setup(SetupOptions{Plan: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Deployment.Flavor != FlavorSGLang || s.Simulator == nil || s.Fidelity.Mode != "multi" {
		t.Errorf("setup flavor %q, simulator %v, fidelity %q", s.Deployment.Flavor, s.Simulator, s.Fidelity.Mode)
	}
}

// TestEngineDefaultsPerFlavor: a study's defaults seed and tuned vs
// default read the flavor's defaults — vLLM's, SGLang's, or a generic
// server's declared ones (none unless declared); a declared default
// without a template is refused with its key.
func TestEngineDefaultsPerFlavor(t *testing.T) {
	cfg, err := Load(strings.NewReader(genericYAML), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec := cfg.TuneSpec(); spec.Defaults != nil || spec.DefaultsName != GenericDefaultsName {
		t.Errorf("generic without declared defaults: %v %q", spec.Defaults, spec.DefaultsName)
	}
	declared := strings.Replace(genericYAML, "    reset_path: /flush", "    reset_path: /flush\n    defaults: {max-num-seqs: 16}", 1)
	if cfg, err = Load(strings.NewReader(declared), "g.yaml"); err != nil {
		t.Fatal(err)
	}
	if spec := cfg.TuneSpec(); !reflect.DeepEqual(spec.Defaults, map[string]any{"max-num-seqs": 16}) {
		t.Errorf("generic declared defaults: %v", spec.Defaults)
	}
	untemplated := strings.Replace(genericYAML, "    reset_path: /flush", "    reset_path: /flush\n    defaults: {max-seqs: 16}", 1)
	if _, err := Load(strings.NewReader(untemplated), "g.yaml"); err == nil || !strings.Contains(err.Error(), "engine.generic.defaults.max-seqs") {
		t.Errorf("untemplated default: %v", err)
	}
	cfg, err = Load(strings.NewReader(sglangYAML), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec := cfg.TuneSpec(); spec.DefaultsName != "SGLang defaults" || spec.Defaults["schedule-policy"] != "fcfs" || spec.Defaults["max-num-seqs"] != nil {
		t.Errorf("sglang defaults: %v %q", spec.Defaults, spec.DefaultsName)
	}
	if spec := Default().TuneSpec(); spec.DefaultsName != "vLLM defaults" || spec.Defaults["max-num-seqs"] != 256 {
		t.Errorf("vllm defaults: %v %q", spec.Defaults, spec.DefaultsName)
	}
}

// TestVLLMFlagCatalogue: on flavor vllm an SGLang flag or a misspelt one
// fails config check with the key, the line and a "did you mean", as on
// SGLang.
func TestVLLMFlagCatalogue(t *testing.T) {
	base := "engine:\n  kind: process\n  model: gpt-oss-20b\n  gpu: H200-SXM\n  gpus: 1\n  tensor_parallel_size: 1\n  max_model_len: 131072\n  process: {command: [vllm, serve, m, --port, \"{{.Port}}\"]}\n"
	for _, tc := range []struct {
		name, add string
		want      []string
	}{
		{"SGLang flag in engine.params", "  params: {max-running-requests: 64}\n",
			[]string{"v.yaml:9:", "engine.params.max-running-requests", "is an SGLang flag, not vLLM's", "did you mean --max-num-seqs?"}},
		{"misspelt flag in engine.params", "  params:\n    max-num-seq: 64\n",
			[]string{"v.yaml:10:", "engine.params.max-num-seq", "unknown vLLM flag", `did you mean "max-num-seqs"`, "vLLM 0.11"}},
		{"SGLang switch", "  params: {disable-radix-cache: true}\n",
			[]string{"engine.params.disable-radix-cache", "--enable-prefix-caching (inverted)"}},
		{"bad value", "  params: {gpu-memory-utilization: high}\n",
			[]string{"engine.params.gpu-memory-utilization", "takes a number"}},
		{"value no server runs with", "  params:\n    max-num-seqs: -8\n",
			[]string{"v.yaml:10:", "engine.params.max-num-seqs", "max-num-seqs must be at least 1, got -8"}},
		{"misspelt flag in search.space", "search:\n  space:\n    - {name: max-num-batched-token, type: int, low: 1024, high: 8192}\n",
			[]string{"v.yaml:11:", "search.space[0].name", `did you mean "max-num-batched-tokens"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(base+tc.add), "v.yaml")
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if _, err := Load(strings.NewReader(base+"  params: {max-num-seqs: 64, enable-prefix-caching: false, tp: 1}\n"), "v.yaml"); err != nil {
		t.Errorf("vLLM flags refused: %v", err)
	}
}

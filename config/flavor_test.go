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
		{"generic section on vllm", "flavor: generic", "flavor: vllm",
			[]string{"g.yaml:11:", "engine.generic", "only with engine.flavor generic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(genericYAML, tc.from, tc.to, 1)
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

package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func genericProcess(t *testing.T, base Params) *Process {
	t.Helper()
	fl, err := Generic(map[string][]string{
		"max-num-seqs":    {"--seqs={{.Value}}"},
		"max_batch":       {"--batch", "{{.Value}}"},
		"radix":           {`{{if eq .Value "false"}}--no-radix{{end}}`},
		"memory-fraction": {"--mem={{.Value}}"},
	}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess(ProcessOptions{
		Command:    []string{"server", "--listen", "{{.Port}}", "--bind={{.Host}}"},
		Model:      "m",
		BaseParams: base,
		Flavor:     fl,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGenericPassesOnlyTemplates: a generic server's command line is the
// template and each parameter's own arguments, sorted by parameter, and
// nothing else — no --host, no vLLM flag, no served name.
func TestGenericPassesOnlyTemplates(t *testing.T) {
	p := genericProcess(t, Params{"memory_fraction": 0.85, "radix": true})
	argv, err := p.Argv(Params{"max-batch": 4096, "max_num_seqs": int64(8), "radix": false}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"server", "--listen", "9000", "--bind=127.0.0.1", "--batch", "4096", "--seqs=8", "--mem=0.85", "--no-radix"}
	// sorted by parameter: max-batch, max-num-seqs, memory-fraction, radix
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q\nwant   %q", argv, want)
	}
	// a boolean whose template renders empty leaves no argument
	argv, err = p.Argv(Params{"radix": true}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"server", "--listen", "9000", "--bind=127.0.0.1", "--mem=0.85"}; !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q, want %q", argv, want)
	}
	dry, err := p.DryRun(Params{"max-num-seqs": 16})
	if err != nil {
		t.Fatal(err)
	}
	if dry != `server --listen "<port>" --bind=127.0.0.1 --seqs=16 --mem=0.85` {
		t.Errorf("DryRun = %s", dry)
	}
}

// TestGenericRefusesUntemplatedParameters: a parameter without a template
// is an error naming it, never a guessed flag.
func TestGenericRefusesUntemplatedParameters(t *testing.T) {
	p := genericProcess(t, nil)
	_, err := p.Argv(Params{"max-num-seqs": 8, "tensor-parallel-size": 2}, 9000)
	var ue *UntemplatedError
	if !errors.As(err, &ue) || ue.Param != "tensor-parallel-size" {
		t.Fatalf("Argv = %v, want an UntemplatedError for tensor-parallel-size", err)
	}
	if _, err := NewProcess(ProcessOptions{Command: []string{"s"}, BaseParams: Params{"x": 1}, Flavor: p.opts.Flavor}); !errors.As(err, &ue) {
		t.Errorf("NewProcess with an untemplated base parameter = %v, want an UntemplatedError", err)
	}
}

func TestGenericTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tmpls map[string][]string
		reset string
		err   string
	}{
		{"bad template", map[string][]string{"a": {"--a={{.Value"}}, "", `parameter "a"`},
		{"unknown field", map[string][]string{"a": {"--a={{.Valu}}"}}, "", ""},
		{"empty", map[string][]string{"a": {}}, "", "empty template"},
		{"same parameter twice", map[string][]string{"max_seqs": {"x"}, "max-seqs": {"y"}}, "", "two templates"},
		{"reset path", nil, "flush", "must start with /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl, err := Generic(tc.tmpls, tc.reset, nil)
			if tc.err == "" {
				// parses, but fails to render: a field the value lacks
				if err != nil {
					t.Fatal(err)
				}
				if _, err := fl.Args(Params{"a": 1}); err == nil || !strings.Contains(err.Error(), `parameter "a"`) {
					t.Errorf("Args = %v, want an error naming the parameter", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Generic = %v, want containing %q", err, tc.err)
			}
		})
	}
}

// TestGenericWithoutResetRoute: no route means no reset, reported as
// ErrResetUnsupported (the plan flags the runs warm), and no request sent.
func TestGenericWithoutResetRoute(t *testing.T) {
	fl, err := Generic(nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// an address nothing listens on: a request would fail otherwise
	err = fl.resetWhenIdle(context.Background(), "http://127.0.0.1:1", "http://127.0.0.1:1/metrics")
	if !errors.Is(err, ErrResetUnsupported) {
		t.Errorf("reset = %v, want ErrResetUnsupported", err)
	}
	if got := (&External{}).WithFlavor(fl).resetPath; got != "" {
		t.Errorf("external reset path = %q, want none", got)
	}
}

// TestZeroFlavorIsVLLM: launchers built without a flavor keep vLLM's
// behaviour (flags, --host, the reset route).
func TestZeroFlavorIsVLLM(t *testing.T) {
	p, err := NewProcess(ProcessOptions{Command: []string{"vllm", "serve", "{{.Model}}"}, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	argv, err := p.Argv(Params{"max_num_seqs": 8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"vllm", "serve", "m", "--host", "127.0.0.1", "--max-num-seqs", "8"}; !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q, want %q", argv, want)
	}
	if p.opts.Flavor.ResetPath != "/reset_prefix_cache" || p.opts.Flavor.DevModeEnv != "VLLM_SERVER_DEV_MODE" {
		t.Errorf("zero flavor = %+v, want vLLM's", p.opts.Flavor)
	}
}

// TestSGLangFlavorCommandLine: SGLang's flags (switches without an off
// form), --host like vLLM's, no VLLM_SERVER_DEV_MODE, and /flush_cache.
func TestSGLangFlavorCommandLine(t *testing.T) {
	p, err := NewProcess(ProcessOptions{
		Command:    []string{"python3", "-m", "sglang.launch_server", "--model-path", "{{.Model}}", "--port", "{{.Port}}"},
		Model:      "openai/gpt-oss-20b",
		BaseParams: Params{"tp-size": 1, "enable-metrics": true, "disable-radix-cache": true},
		Flavor:     SGLang(),
	})
	if err != nil {
		t.Fatal(err)
	}
	argv, err := p.Argv(Params{"max-running-requests": 8, "disable-radix-cache": false}, 30000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"python3", "-m", "sglang.launch_server", "--model-path", "openai/gpt-oss-20b", "--port", "30000",
		"--host", "127.0.0.1", "--enable-metrics", "--max-running-requests", "8", "--tp-size", "1"}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q\nwant   %q", argv, want)
	}
	if env := p.env(argv); len(env) != 0 {
		t.Errorf("env = %v, want nothing added (no development mode)", env)
	}
	if p.opts.Flavor.ResetPath != "/flush_cache" {
		t.Errorf("reset path %q", p.opts.Flavor.ResetPath)
	}
	if _, err := p.Argv(Params{"port": 1}, 30000); err == nil {
		t.Error("a trial flag the command sets was accepted")
	}
}

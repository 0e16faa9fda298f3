package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/config"
)

func TestSimRunJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"sim", "run", "--users", "8", "--duration", "30s", "--warmup", "10s", "--ramp", "5s",
		"--max-num-batched-tokens", "2048", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res struct {
		Summary struct {
			Overall struct {
				OK int `json:"ok"`
			} `json:"overall"`
		} `json:"summary"`
		Sim struct {
			Engine struct {
				Steps int `json:"steps"`
			} `json:"engine"`
		} `json:"sim"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Summary.Overall.OK == 0 || res.Sim.Engine.Steps == 0 {
		t.Errorf("no work simulated: %s", out.String())
	}
}

func TestSimBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "run", "--users", "0"},
		{"sim", "run", "--max-num-seqs", "0", "--duration", "1s"},
		{"sim", "run", "--model", "no-such-model", "--duration", "1s"},
		{"sim", "serve", "--throttle", "1"},
		{"sim", "serve", "--port", "70000"},
		{"sim", "serve", "--gpu-memory-utilization", "1.5"},
		// vLLM flags the simulator ignores are unknown without --vllm-faithful,
		// as is vllm serve's positional model.
		{"sim", "serve", "--swap-space", "4"},
		{"sim", "serve", "gpt-oss-120b"},
		{"sim", "serve", "--vllm-faithful", "--no-such-vllm-flag"},
		{"sim", "serve", "--vllm-faithful", "--gpus", "4", "--tensor-parallel-size", "2", "--data-parallel-size", "1"},
		{"sim", "serve", "--vllm-faithful", "--model", "gpt-oss-20b", "gpt-oss-120b"},
		{"sim", "serve", "--vllm-faithful", "--reasoning-field", "thoughts"},
		{"sim", "serve", "--tokens-per-chunk", "-1"},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, &out, &errb); code != ExitUsage {
			t.Errorf("%s: exit %d, want %d (%s)", strings.Join(args, " "), code, ExitUsage, errb.String())
		}
	}
}

func TestSimValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the reference measurements")
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"sim", "validate", "../../../../perfmodel/calibrate/testdata/inferencemax_gptoss120b_h100_vllm0.13.csv"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"tput MAPE", "TPOT signed", "h100", "vllm 0.13.0", "tp=8", "conc 33+"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q: %s", want, out.String())
		}
	}
	if code := Run(context.Background(), []string{"sim", "validate", "no-such-file.csv"}, &out, &errb); code != ExitUsage {
		t.Errorf("missing file: exit %d, want %d", code, ExitUsage)
	}
	ref := "../../../../perfmodel/calibrate/testdata/inferencemax_gptoss120b_h100_vllm0.13.csv"
	for _, args := range [][]string{
		{"sim", "validate", ref, "--leave-out", "b200"},                       // no B200 point
		{"sim", "validate", ref, "--leave-out", "h100"},                       // nothing left to fit
		{"sim", "validate", ref, "--leave-out", "h100", "--calibration", "x"}, // exclusive
	} {
		errb.Reset()
		if code := Run(context.Background(), args, &out, &errb); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}

// TestSimEngineFlagsOverrideConfig checks that a command-line engine flag
// replaces the configured parameter of the same flag even when the
// configuration spells it with underscores, and that --gpus below the
// configured tensor-parallel size lowers it.
func TestSimEngineFlagsOverrideConfig(t *testing.T) {
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	keys := addSimEngineFlags(fs)
	if err := fs.Parse([]string{"--max-num-seqs", "64", "--no-enable-prefix-caching", "--kv-cache-dtype", "fp8", "--gpus", "2"}); err != nil {
		t.Fatal(err)
	}
	settings, err := keys.settings(fs)
	if err != nil {
		t.Fatal(err)
	}
	file := "engine:\n  gpus: 4\n  tensor_parallel_size: 4\n  params: {max_num_seqs: 512, block_size: 32}\n"
	cfg, err := config.Load(strings.NewReader(file), "spoc.yaml", settings...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max-num-seqs": 64, "block_size": 32, "no-enable-prefix-caching": true, "kv-cache-dtype": "fp8"}
	if !reflect.DeepEqual(cfg.Engine.Params, want) {
		t.Errorf("params = %v, want %v", cfg.Engine.Params, want)
	}
	if cfg.Engine.GPUs != 2 || cfg.Engine.TensorParallelSize != 2 {
		t.Errorf("--gpus 2 over TP 4: %d GPUs, TP %d", cfg.Engine.GPUs, cfg.Engine.TensorParallelSize)
	}
}

// TestSimServeFaithfulAcceptsVLLMCommandLine checks that the vLLM-faithful
// mode starts from a vllm serve command line as spoc's process launcher
// renders it: positional model, data-parallel size, flags it ignores with a
// log line. The context is already cancelled, so the server stops as soon
// as it has started.
func TestSimServeFaithfulAcceptsVLLMCommandLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"sim", "serve", "--vllm-faithful", "openai/gpt-oss-120b", "--port", "0",
		"--served-model-name", "gpt", "--tensor-parallel-size", "2", "--data-parallel-size", "2", "--max-model-len", "32768",
		"--enable-prompt-tokens-details", "--swap-space", "4", "--trust-remote-code", "--no-disable-log-stats"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"ignoring vLLM flag --trust-remote-code: not modelled", "ignoring vLLM flag --no-disable-log-stats",
		"ignoring vLLM flag --swap-space", "serving gpt (openai/gpt-oss-120b on 4× ", "TP 2", "vllm-faithful) at http://127.0.0.1:",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

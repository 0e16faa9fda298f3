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
	code := Run(context.Background(), []string{"sim", "validate", "../../perfmodel/calibrate/testdata/inferencemax_gptoss120b_h100_vllm0.13.csv"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "points; mean absolute percentage error: median_tpot") {
		t.Errorf("output: %s", out.String())
	}
	if code := Run(context.Background(), []string{"sim", "validate", "no-such-file.csv"}, &out, &errb); code != ExitUsage {
		t.Errorf("missing file: exit %d, want %d", code, ExitUsage)
	}
}

// TestSimEngineFlagsOverrideConfig checks that a command-line engine flag
// replaces the configured parameter of the same flag even when the
// configuration spells it with underscores.
func TestSimEngineFlagsOverrideConfig(t *testing.T) {
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	ov := addSimEngineFlags(fs)
	if err := fs.Parse([]string{"--max-num-seqs", "64"}); err != nil {
		t.Fatal(err)
	}
	e := config.DefaultEngine()
	e.Params = map[string]any{"max_num_seqs": 512, "block_size": 32}
	ov.apply(fs, &e)
	want := map[string]any{"max-num-seqs": 64, "block_size": 32}
	if !reflect.DeepEqual(e.Params, want) {
		t.Errorf("params = %v, want %v", e.Params, want)
	}
}

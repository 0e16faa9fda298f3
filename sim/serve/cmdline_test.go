package serve

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/sim"
)

// parse parses argv with a CommandLine and a --gpus flag beside it, as
// spoc sim serve defines them.
func parse(t *testing.T, argv ...string) (Options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.Int(GPUsFlag, 0, "GPUs")
	cl := NewCommandLine(fs)
	if err := fs.Parse(argv); err != nil {
		return Options{}, err
	}
	return cl.Parse(fs.Args())
}

// A vllm serve command line as spoc's process launcher renders it: the
// positional model, the data-parallel size, ignored flags, the switches.
func TestCommandLineReadsAVLLMServeCommandLine(t *testing.T) {
	t.Setenv("VLLM_SERVER_DEV_MODE", "1")
	o, err := parse(t, "--vllm-faithful", "openai/gpt-oss-120b", "--port", "0", "--host", "127.0.0.2",
		"--data-parallel-size", "2", "--enable-prompt-tokens-details", "--swap-space", "4", "--trust-remote-code",
		"--no-disable-log-stats", "--stall", "60s+5s", "--tokens-per-chunk", "3")
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Addr: "127.0.0.2:0", Faithful: true, Model: "openai/gpt-oss-120b",
		Ignored: []string{"trust-remote-code", "no-disable-log-stats", "swap-space"}, Stalls: []Stall{{Start: time.Minute, Duration: 5 * time.Second}},
		TokensPerChunk: 3, ReasoningField: "reasoning", EnablePromptTokensDetails: true, DevMode: true, dataParallel: 2}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options\n got %+v\nwant %+v", o, want)
	}
	dep, err := o.Deployment(sim.ReferenceDeploymentSpec())
	if err != nil || dep.GPUs != 2*dep.TensorParallelSize {
		t.Errorf("TP %d × DP 2: %d GPUs, %v", dep.TensorParallelSize, dep.GPUs, err)
	}
	c := o.Server(sim.Deployment{GPUs: 4}, Config{TimeScale: 20, Stalls: []Stall{{Duration: time.Second}}})
	if !c.VLLMFaithful || c.TokensPerChunk != 3 || !c.DevMode || !c.EnablePromptTokensDetails || c.TimeScale != 20 || len(c.Stalls) != 2 || c.Deployment.GPUs != 4 {
		t.Errorf("server config %+v", c)
	}
}

// The GPUs of vllm serve are data-parallel × tensor-parallel size: a
// --gpus that disagrees is an error; without --vllm-faithful and without
// --data-parallel-size the configured GPUs stand.
func TestCommandLineDataParallelGPUs(t *testing.T) {
	spec := sim.DeploymentSpec{GPUs: 4, TensorParallelSize: 2}
	for _, tc := range []struct {
		argv []string
		gpus int
		err  string
	}{
		{nil, 4, ""},
		{[]string{"--vllm-faithful"}, 2, ""},
		{[]string{"--vllm-faithful", "--gpus", "4"}, 4, ""},
		{[]string{"--data-parallel-size", "3"}, 6, ""},
		{[]string{"--vllm-faithful", "--gpus", "4", "--data-parallel-size", "1"}, 0, "--gpus 4 is not --data-parallel-size 1 × tensor-parallel size 2"},
	} {
		o, err := parse(t, tc.argv...)
		if err != nil {
			t.Fatalf("%v: %v", tc.argv, err)
		}
		got, err := o.deploymentSpec(spec)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: %v, want %q", tc.argv, err, tc.err)
			}
			continue
		}
		if err != nil || got.GPUs != tc.gpus {
			t.Errorf("%v: %d GPUs, %v; want %d", tc.argv, got.GPUs, err, tc.gpus)
		}
	}
}

// What vllm serve would refuse, or what only the vLLM-faithful mode
// accepts, is an error naming it.
func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"gpt-oss-120b"}, "a positional MODEL needs --vllm-faithful"},
		{[]string{"--vllm-faithful", "a", "b"}, "one positional MODEL, got 2"},
		{[]string{"--swap-space", "4"}, "unknown flag: --swap-space"},
		{[]string{"--port", "70000"}, "--port must be in [0, 65535], got 70000"},
		{[]string{"--data-parallel-size", "0"}, "--data-parallel-size must be at least 1, got 0"},
		{[]string{"--stall", "5s"}, "--stall: stall \"5s\": want START+DURATION"},
	} {
		_, err := parse(t, tc.argv...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.argv, err, tc.want)
		}
	}
}

package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		log    string
		reason Reason
		detail string
	}{
		{"empty", "", ReasonExited, ""},
		{"plain crash", "INFO starting\nRuntimeError: Engine core initialization failed.\n\n", ReasonExited, "RuntimeError: Engine core initialization failed."},
		{"torch OOM", "INFO loading\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\nINFO bye", ReasonOutOfMemory, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"},
		{"old torch OOM", "torch.cuda.OutOfMemoryError: CUDA out of memory.", ReasonOutOfMemory, "torch.cuda.OutOfMemoryError: CUDA out of memory."},
		{"CUDA error", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported", ReasonOutOfMemory, "RuntimeError: CUDA error: out of memory"},
		{"no cache blocks", "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", ReasonKVCache, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"},
		{"max seq len", "ValueError: To serve at least one request with the models's max seq len (131072), (4.5 GiB KV cache is needed, which is larger than the available KV cache memory (2.1 GiB).", ReasonKVCache, ""},
		{"insufficient KV", "ERROR insufficient memory for KV cache", ReasonKVCache, "ERROR insufficient memory for KV cache"},
		{"KV beats OOM", "torch.OutOfMemoryError: CUDA out of memory\nValueError: No available memory for the cache blocks.", ReasonKVCache, "ValueError: No available memory for the cache blocks."},
		{"OOM beats reject", "ValueError: something\ntorch.OutOfMemoryError: CUDA out of memory", ReasonOutOfMemory, "torch.OutOfMemoryError: CUDA out of memory"},
		{"argparse invalid choice", "usage: vllm serve\nvllm serve: error: argument --block-size: invalid choice: 7", ReasonRejected, "vllm serve: error: argument --block-size: invalid choice: 7"},
		{"pydantic", "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig", ReasonRejected, "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig"},
		{"spoc sim serve's config check", "spoc: --block-size (engine.params.block-size): block-size must be in [1, 1024], got 0", ReasonRejected, "spoc: --block-size (engine.params.block-size): block-size must be in [1, 1024], got 0"},
		{"spoc sim serve's unknown flag is a setup problem", "spoc: config.yaml:7: engine.params.swap-space (engine.params.swap-space): unknown vLLM flag --swap-space (spoc's vLLM catalogue)", ReasonExited, "spoc: config.yaml:7: engine.params.swap-space (engine.params.swap-space): unknown vLLM flag --swap-space (spoc's vLLM catalogue)"},
		{"unknown flag is a setup problem", "ValueError: x\nvllm serve: error: unrecognized arguments: --async-scheduling", ReasonExited, "vllm serve: error: unrecognized arguments: --async-scheduling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, d := Classify(tc.log)
			if r != tc.reason {
				t.Errorf("reason = %s, want %s", r, tc.reason)
			}
			if tc.detail != "" && d != tc.detail {
				t.Errorf("detail = %q, want %q", d, tc.detail)
			}
		})
	}
}

func TestFailureErrors(t *testing.T) {
	for _, r := range []Reason{ReasonOutOfMemory, ReasonKVCache, ReasonRejected, ReasonExited, ReasonHealthTimeout} {
		f := &Failure{Reason: r, Detail: "d", ExitCode: 1, Log: "/l"}
		err := fmt.Errorf("evaluate trial 3: %w", f)
		if !errors.Is(err, r.sentinel()) {
			t.Errorf("%s: errors.Is(sentinel) = false", r)
		}
		if got := errors.Is(err, ErrInfeasible); got != r.Infeasible() {
			t.Errorf("%s: errors.Is(ErrInfeasible) = %v", r, got)
		}
		for _, other := range []Reason{ReasonOutOfMemory, ReasonExited} {
			if other != r && errors.Is(err, other.sentinel()) {
				t.Errorf("%s matches %s", r, other)
			}
		}
		if msg := f.Error(); !strings.Contains(msg, "exit status 1") || !strings.Contains(msg, ": d") || !strings.Contains(msg, "/l") {
			t.Errorf("Error() = %q", msg)
		}
	}
	if msg := (&Failure{Reason: ReasonHealthTimeout, ExitCode: -1}).Error(); msg != ErrHealthTimeout.Error() {
		t.Errorf("Error() = %q", msg)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("torch.OutOfMemoryError: CUDA out of memory\n")
	f.Add("ValueError: No available memory for the cache blocks\nerror: argument")
	f.Add("\n\n\x00unrecognized arguments")
	f.Fuzz(func(t *testing.T, log string) {
		r, d := Classify(log)
		if r.sentinel() == nil || r == ReasonHealthTimeout {
			t.Fatalf("Classify returned reason %q", r)
		}
		if d != strings.TrimSpace(d) || strings.Contains(d, "\n") {
			t.Fatalf("detail %q is not one trimmed line", d)
		}
		if d != "" && !strings.Contains(log, d) {
			t.Fatalf("detail %q not in log", d)
		}
	})
}

package vllm

import (
	"reflect"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
		err    string
	}{
		{"empty", nil, []string{}, ""},
		{"int", map[string]any{"max-num-batched-tokens": 2048}, []string{"--max-num-batched-tokens", "2048"}, ""},
		{"int64", map[string]any{"max-num-seqs": int64(64)}, []string{"--max-num-seqs", "64"}, ""},
		{"float", map[string]any{"gpu-memory-utilization": 0.85}, []string{"--gpu-memory-utilization", "0.85"}, ""},
		{"integral float", map[string]any{"x": 1e6}, []string{"--x", "1000000"}, ""},
		{"bool true", map[string]any{"enable-prefix-caching": true}, []string{"--enable-prefix-caching"}, ""},
		{"bool false", map[string]any{"enable-prefix-caching": false}, []string{"--no-enable-prefix-caching"}, ""},
		{"string", map[string]any{"kv-cache-dtype": "fp8"}, []string{"--kv-cache-dtype", "fp8"}, ""},
		{"underscores and dashes", map[string]any{"max_num_seqs": 8, "--block-size": 16}, []string{"--block-size", "16", "--max-num-seqs", "8"}, ""},
		{"sorted", map[string]any{"b": 1, "a": true, "c": "x"}, []string{"--a", "--b", "1", "--c", "x"}, ""},
		{"duplicate flag", map[string]any{"max_num_seqs": 8, "max-num-seqs": 16}, nil, `"max-num-seqs" and "max_num_seqs"`},
		{"nil value", map[string]any{"x": nil}, nil, "unsupported value"},
		{"slice value", map[string]any{"x": []int{1}}, nil, "unsupported value"},
		{"NaN", map[string]any{"x": nan()}, nil, "finite"},
		{"empty name", map[string]any{"--": 1}, nil, "empty parameter name"},
		{"not a flag name", map[string]any{"a=b": 1}, nil, "not a flag name"},
		{"space in name", map[string]any{"max seqs": 1}, nil, "not a flag name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Flags(tc.params)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flags = %q, want %q", got, tc.want)
			}
		})
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestFlagsDeterministic(t *testing.T) {
	p := map[string]any{}
	for _, n := range []string{"q", "w", "e", "r", "t", "y", "u", "i", "o", "p"} {
		p[n] = len(n)
	}
	// The map's iteration order changes from one range to the next; the
	// flags must come out sorted every time, and complete.
	want := []string{"--e", "1", "--i", "1", "--o", "1", "--p", "1", "--q", "1",
		"--r", "1", "--t", "1", "--u", "1", "--w", "1", "--y", "1"}
	for i := 0; i < 20; i++ {
		got, err := Flags(p)
		if err != nil {
			t.Fatalf("Flags(%v): %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Flags = %q, want %q", got, want)
		}
	}
}

func TestMerge(t *testing.T) {
	base := map[string]any{"max_num_seqs": 64, "tensor-parallel-size": 4}
	trial := map[string]any{"max-num-seqs": 128, "block-size": 32}
	got := Merge(base, trial)
	want := map[string]any{"max-num-seqs": 128, "tensor-parallel-size": 4, "block-size": 32}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	if base["max_num_seqs"] != 64 || len(trial) != 2 {
		t.Error("Merge modified its inputs")
	}
}

func TestHasFlag(t *testing.T) {
	argv := []string{"vllm", "serve", "m", "--port=8000", "--no-enable-prefix-caching", "--max-num-seqs", "4", "-tp", "2"}
	for name, want := range map[string]bool{
		"port": true, "enable-prefix-caching": true, "enable_prefix_caching": true, "max-num-seqs": true,
		"max-num": false, "m": false, "serve": false, "tp": false, "block-size": false,
	} {
		if got := HasFlag(argv, name); got != want {
			t.Errorf("HasFlag(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFlagValue(t *testing.T) {
	argv := []string{"vllm", "serve", "m", "--host", "0.0.0.0", "--port=8000", "--max_num_seqs", "4", "--max-num-seqs=8", "--trailing"}
	for _, tc := range []struct {
		name, want string
		found      bool
	}{
		{"host", "0.0.0.0", true}, {"port", "8000", true}, {"max-num-seqs", "8", true},
		{"trailing", "", true}, {"hos", "", false}, {"serve", "", false},
	} {
		if got, found := FlagValue(argv, tc.name); got != tc.want || found != tc.found {
			t.Errorf("FlagValue(%q) = %q, %v; want %q, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
}

// FuzzFlags checks that every rendered parameter is found again by HasFlag
// and that rendering is deterministic.
func FuzzFlags(f *testing.F) {
	f.Add("max-num-batched-tokens", 2048, true, 0.9)
	f.Add("enable_prefix_caching", -1, false, 1e300)
	f.Fuzz(func(t *testing.T, name string, n int, b bool, x float64) {
		p := map[string]any{name: n, name + "-b": b, name + "-x": x}
		got, err := Flags(p)
		if err != nil {
			return // empty names, duplicate flags, NaN: rejected with an error
		}
		again, _ := Flags(p)
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("not deterministic: %q vs %q", got, again)
		}
		for k := range p {
			if !HasFlag(got, k) {
				t.Fatalf("HasFlag(%q, %q) = false", got, k)
			}
		}
	})
}

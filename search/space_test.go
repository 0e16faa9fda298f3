package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func vllmSpace(t *testing.T) Space {
	t.Helper()
	s, err := NewSpace(
		IntLog("max_num_batched_tokens", 512, 16384),
		IntStep("max_num_seqs", 16, 512, 16),
		FloatStep("gpu_memory_utilization", 0.80, 0.95, 0.01),
		FloatLog("lr", 1e-5, 1e-1),
		Bool("enable_chunked_prefill"),
		Categorical("kv_cache_dtype", "auto", "fp8"),
		Categorical("tp", 1, 2, 4),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s.WithRule("batched_tokens_ge_seqs", func(p Params) error {
		if p.Int("max_num_batched_tokens") < p.Int("max_num_seqs") {
			return fmt.Errorf("max_num_batched_tokens %d < max_num_seqs %d", p.Int("max_num_batched_tokens"), p.Int("max_num_seqs"))
		}
		return nil
	}).WithRule("no_chunked_needs_model_len", func(p Params) error {
		if !p.Bool("enable_chunked_prefill") && p.Int("max_num_batched_tokens") < 8192 {
			return errors.New("chunked prefill off needs max_num_batched_tokens ≥ max_model_len 8192")
		}
		return nil
	})
}

func TestParamValidate(t *testing.T) {
	bad := []Param{
		{Kind: KindInt, Low: 0, High: 1, Step: 1},
		Int("a", 5, 1),
		IntLog("a", 0, 10),
		{Name: "a", Kind: KindInt, Low: 0.5, High: 3, Step: 1},
		{Name: "a", Kind: KindInt, Low: 0, High: 3},
		{Name: "a", Kind: KindFloat, Low: 1, High: 3, Step: 0.5, Log: true},
		Categorical("a"),
		Categorical("a", "x", "x"),
		Categorical("a", 1, 1.0),
		Categorical("a", []int{1}),
		{Name: "a", Kind: "weird"},
	}
	for i, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("case %d (%+v): accepted", i, p)
		}
	}
	if _, err := NewSpace(Int("a", 0, 1), Float("a", 0, 1)); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate names: %v", err)
	}
	if _, err := NewSpace(); err == nil {
		t.Error("empty space accepted")
	}
}

func TestParamContains(t *testing.T) {
	tests := []struct {
		p    Param
		in   any
		want any
		ok   bool
	}{
		{Int("a", 0, 10), 3, 3, true},
		{Int("a", 0, 10), 3.0, 3, true}, // JSON-decoded
		{Int("a", 0, 10), 11, nil, false},
		{IntStep("a", 16, 512, 16), 48, 48, true},
		{IntStep("a", 16, 512, 16), 50, nil, false},
		{FloatStep("a", 0.8, 0.95, 0.01), 0.87, 0.87, true},
		{FloatStep("a", 0.8, 0.95, 0.01), 0.875, nil, false},
		{Float("a", 0, 1), "x", nil, false},
		{Bool("a"), true, true, true},
		{Bool("a"), "true", nil, false},
		{Categorical("a", 1, 2, 4), 4.0, 4, true},
		{Categorical("a", "x", "y"), "z", nil, false},
	}
	for i, tt := range tests {
		got, err := tt.p.Contains(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("case %d: err = %v, want ok=%v", i, err, tt.ok)
			continue
		}
		if tt.ok && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("case %d: got %#v, want %#v", i, got, tt.want)
		}
	}
}

func TestUniformStaysInSpace(t *testing.T) {
	s := vllmSpace(t)
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[string]map[any]bool{}
	for i := 0; i < 5000; i++ {
		p := Params{}
		for _, sp := range s.Params {
			p[sp.Name] = sp.Uniform(r)
			if seen[sp.Name] == nil {
				seen[sp.Name] = map[any]bool{}
			}
			seen[sp.Name][p[sp.Name]] = true
		}
		if _, err := s.Normalize(p); err != nil {
			t.Fatalf("sample %d %v: %v", i, p, err)
		}
	}
	// Every choice and every step of the small grids is reachable, including
	// both ends of the log-int range.
	if len(seen["tp"]) != 3 || len(seen["enable_chunked_prefill"]) != 2 || len(seen["gpu_memory_utilization"]) != 16 {
		t.Errorf("coverage: tp %d, bool %d, gmu %d", len(seen["tp"]), len(seen["enable_chunked_prefill"]), len(seen["gpu_memory_utilization"]))
	}
	if !seen["max_num_seqs"][16] || !seen["max_num_seqs"][512] {
		t.Error("step-int endpoints never sampled")
	}
	small := IntLog("small", 1, 8)
	hits := map[any]int{}
	for i := 0; i < 2000; i++ {
		hits[small.Uniform(r)]++
	}
	if len(hits) != 8 || hits[1] < hits[8] {
		t.Errorf("log-int coverage: %v (want all of 1..8, small values more often)", hits)
	}
}

func TestFromInternalRoundTrip(t *testing.T) {
	s := vllmSpace(t)
	p := Params{"max_num_batched_tokens": 2048, "max_num_seqs": 64, "gpu_memory_utilization": 0.9, "lr": 0.001, "enable_chunked_prefill": true, "kv_cache_dtype": "fp8", "tp": 2}
	for _, sp := range s.Params {
		got := sp.FromInternal(sp.ToInternal(p[sp.Name]))
		if g, ok := got.(float64); ok {
			if w := p[sp.Name].(float64); g-w > 1e-12 || w-g > 1e-12 {
				t.Errorf("%s: %v → %v", sp.Name, p[sp.Name], got)
			}
			continue
		}
		if got != p[sp.Name] {
			t.Errorf("%s: %v → %v", sp.Name, p[sp.Name], got)
		}
	}
	// Out-of-range internal values clip.
	if got := Int("a", 1, 5).FromInternal(99); got != 5 {
		t.Errorf("clip high: %v", got)
	}
	if got := Categorical("a", "x", "y").FromInternal(-3); got != "x" {
		t.Errorf("clip categorical: %v", got)
	}
}

func TestSpaceCheckRules(t *testing.T) {
	s := vllmSpace(t)
	ok := Params{"max_num_batched_tokens": 8192, "max_num_seqs": 64, "gpu_memory_utilization": 0.9, "lr": 0.001, "enable_chunked_prefill": false, "kv_cache_dtype": "fp8", "tp": 2}
	if _, err := s.Check(ok); err != nil {
		t.Fatalf("valid params rejected: %v", err)
	}
	bad := ok.Clone()
	bad["max_num_batched_tokens"] = 1024
	_, err := s.Check(bad)
	var re *RuleError
	if !errors.As(err, &re) || re.Rule != "no_chunked_needs_model_len" {
		t.Fatalf("want rule error, got %v", err)
	}
	extra := ok.Clone()
	extra["unknown"] = 1
	if _, err := s.Check(extra); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("extra parameter: %v", err)
	}
	missing := ok.Clone()
	delete(missing, "tp")
	if _, err := s.Check(missing); err == nil || !strings.Contains(err.Error(), "tp") {
		t.Fatalf("missing parameter: %v", err)
	}
}

type uniformSampler struct{ r *rand.Rand }

func (u uniformSampler) Sample(_ context.Context, _ []Trial, s Space) (Params, error) {
	p := Params{}
	for _, sp := range s.Params {
		p[sp.Name] = sp.Uniform(u.r)
	}
	return p, nil
}

func TestSampleValid(t *testing.T) {
	s := vllmSpace(t)
	u := uniformSampler{rand.New(rand.NewPCG(7, 7))}
	for i := 0; i < 100; i++ {
		p, err := SampleValid(context.Background(), u, nil, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Check(p); err != nil {
			t.Fatal(err)
		}
	}
	never := s.WithRule("never", func(Params) error { return errors.New("no") })
	if _, err := SampleValid(context.Background(), u, nil, never, 10); err == nil || !strings.Contains(err.Error(), `"never"`) {
		t.Fatalf("impossible rules: %v", err)
	}
}

func TestSpaceJSON(t *testing.T) {
	s := vllmSpace(t)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Space
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(back.Rules) != 2 || back.Rules[0].Name != "batched_tokens_ge_seqs" {
		t.Fatalf("rules: %+v", back.Rules)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Fatalf("not stable:\n%s\n%s", b, b2)
	}
	// A JSON-decoded categorical int still matches.
	if _, err := back.Normalize(Params{"max_num_batched_tokens": 2048.0, "max_num_seqs": 64.0, "gpu_memory_utilization": 0.9, "lr": 0.01, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "tp": 4.0}); err != nil {
		t.Fatal(err)
	}
}

func TestDirectionText(t *testing.T) {
	for _, d := range []Direction{Minimize, Maximize} {
		b, err := d.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Direction
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Fatalf("%v → %s → %v (%v)", d, b, back, err)
		}
	}
	if _, err := ParseDirection("up"); err == nil {
		t.Error("bad direction accepted")
	}
}

func TestTrialContextNilSafe(t *testing.T) {
	var tc *TrialContext
	tc.SetUserAttr("x", 1) // must not panic
	if tc.UserAttrs() != nil {
		t.Fatal("nil trial has attributes")
	}
	real := &TrialContext{Number: 3}
	real.SetUserAttr("k", "v")
	if got := real.UserAttrs(); got["k"] != "v" {
		t.Fatalf("attrs = %v", got)
	}
}

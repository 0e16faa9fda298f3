package tune

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/samplers"
)

func TestSpaceFromReferenceSpec(t *testing.T) {
	spec := referenceSpec()
	s, err := Space(spec.Space, search.Params{"max-num-seqs": 256}, spec.MaxModelLen)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Params) != len(spec.Space) || len(s.Rules) != 2 {
		t.Fatalf("space has %d params and %d rules", len(s.Params), len(s.Rules))
	}
	mnbt, _ := s.Param("max-num-batched-tokens")
	if mnbt.Kind != search.KindInt || !mnbt.Log || mnbt.Low != 256 || mnbt.High != 16384 || mnbt.Step != 1 {
		t.Errorf("max-num-batched-tokens = %+v", mnbt)
	}
	bs, _ := s.Param("block-size")
	if bs.Kind != search.KindCategorical || bs.Choices[0] != 16 {
		t.Errorf("block-size choices = %#v", bs.Choices)
	}
	pc, _ := s.Param("enable-prefix-caching")
	if pc.Kind != search.KindCategorical || len(pc.Choices) != 2 {
		t.Errorf("enable-prefix-caching = %+v", pc)
	}
	ok := search.Params{"max-num-batched-tokens": 2048, "max-num-seqs": 64, "gpu-memory-utilization": 0.9,
		"enable-prefix-caching": true, "enable-chunked-prefill": true, "long-prefill-token-threshold": 0,
		"block-size": 16, "async-scheduling": false}
	if _, err := s.Check(ok); err != nil {
		t.Errorf("valid params rejected: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  search.Params
		rule string
	}{
		{"fewer tokens than seqs", search.Params{"max-num-batched-tokens": 256, "max-num-seqs": 512}, "max-num-seqs"},
		{"chunked prefill off", search.Params{"enable-chunked-prefill": false}, "chunked prefill"},
	} {
		p := ok.Clone()
		for k, v := range tc.mod {
			p[k] = v
		}
		if _, err := s.Check(p); err == nil || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("%s: Check = %v, want rule %q", tc.name, err, tc.rule)
		}
	}
}

func TestSpaceRulesUseBaseParams(t *testing.T) {
	params := []search.ParamSpec{{Name: "max-num-batched-tokens", Type: "int", Low: 64, High: 8192}, {Name: "enable-chunked-prefill", Type: "bool"}}
	s, err := Space(params, search.Params{"max_num_seqs": 128}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p  search.Params
		ok bool
	}{
		{search.Params{"max-num-batched-tokens": 100, "enable-chunked-prefill": true}, false}, // < base max-num-seqs 128
		{search.Params{"max-num-batched-tokens": 128, "enable-chunked-prefill": true}, true},
		{search.Params{"max-num-batched-tokens": 2048, "enable-chunked-prefill": false}, false},
		{search.Params{"max-num-batched-tokens": 4096, "enable-chunked-prefill": false}, true},
	} {
		if _, err := s.Check(tc.p); (err == nil) != tc.ok {
			t.Errorf("Check(%v) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
	// Without the flag anywhere, vLLM's default applies and no rule fires.
	s, _ = Space([]search.ParamSpec{{Name: "enable-chunked-prefill", Type: "bool"}}, nil, 4096)
	if _, err := s.Check(search.Params{"enable-chunked-prefill": false}); err != nil {
		t.Errorf("rule fired without max-num-batched-tokens: %v", err)
	}
}

func TestSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		p    search.ParamSpec
		want string
	}{
		{search.ParamSpec{Name: "x", Type: "complex"}, "unknown type"},
		{search.ParamSpec{Name: "x", Type: "bool", Choices: []any{"yes"}}, "not true or false"},
		{search.ParamSpec{Name: "x", Type: "int", Low: 0, High: 10, Log: true}, "log scale"},
		{search.ParamSpec{Name: "x", Type: "categorical", Choices: []any{[]int{1}}}, "unsupported type"},
	} {
		if _, err := Space([]search.ParamSpec{tc.p}, nil, 0); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "search.space[0]") {
			t.Errorf("Space(%+v) = %v, want %q naming search.space[0]", tc.p, err, tc.want)
		}
	}
	if _, err := Directions([]search.ObjectiveSpec{{Metric: "x", Direction: "up"}}); err == nil || !strings.Contains(err.Error(), "objectives[0]") {
		t.Errorf("bad direction: %v", err)
	}
	if _, err := Sampler(Spec{Sampler: "cmaes"}, []search.Direction{search.Minimize}); err == nil {
		t.Error("unknown sampler accepted")
	}
}

func TestCanonicalChoice(t *testing.T) {
	for in, want := range map[any]any{int64(4): 4, uint64(8): 8, 16.0: 16, 0.5: 0.5, "a": "a", true: true} {
		if got := canonicalChoice(in); got != want {
			t.Errorf("canonicalChoice(%#v) = %#v, want %#v", in, got, want)
		}
	}
}

func TestResolveSampler(t *testing.T) {
	for _, c := range []struct {
		sampler, stored string
		trials          int
		want            string
	}{
		{"auto", "", 60, "tpe"},
		{"", "", 100, "tpe"},
		{"auto", "", 101, "nsga2"},
		{"auto", "tpe", 500, "tpe"}, // a resumed study keeps its sampler
		{"nsga2", "", 30, "nsga2"},
		{"random", "tpe", 30, "random"},
	} {
		if got := ResolveSampler(Spec{Sampler: c.sampler, Trials: c.trials}, c.stored); got != c.want {
			t.Errorf("ResolveSampler(%q, %d trials, stored %q) = %q, want %q", c.sampler, c.trials, c.stored, got, c.want)
		}
	}
}

// Every sampler of the registry is a sampler a study can run, built by the
// registry's own constructor: tune has no list of its own.
func TestSamplerIsTheRegistrys(t *testing.T) {
	dirs := []search.Direction{search.Maximize, search.Minimize}
	for _, name := range samplers.Names() {
		got, err := Sampler(Spec{Sampler: name, Population: 8, Seed: 7}, dirs)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, err := samplers.New(name, samplers.Config{Directions: dirs, PopulationSize: 8, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("%s: tune built a %T, the registry a %T", name, got, want)
		}
	}
}

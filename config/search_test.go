package config

import (
	"strings"
	"testing"
)

func TestSearchStorageIn(t *testing.T) {
	for _, tc := range []struct{ storage, out, want string }{
		{"sqlite:study.db", "spoc-out", "sqlite:spoc-out/study.db"},
		{"study.db", "spoc-out", "spoc-out/study.db"},
		{"sqlite:sub/study.db", "/tmp/p", "sqlite:/tmp/p/sub/study.db"},
		{"sqlite:/abs/study.db", "spoc-out", "sqlite:/abs/study.db"},
		{"/abs/study.db", "spoc-out", "/abs/study.db"},
		{"sqlite:///abs/study.db", "spoc-out", "sqlite:///abs/study.db"},
		{"postgres://u@db/spoc?sslmode=disable", "spoc-out", "postgres://u@db/spoc?sslmode=disable"},
		{"postgresql://u@h/db?x=y", "out", "postgresql://u@h/db?x=y"},
		{"sqlite:study.db", "", "sqlite:study.db"},
		{"", "spoc-out", ""},
	} {
		if got := (Search{Storage: tc.storage}).StorageIn(tc.out); got != tc.want {
			t.Errorf("Storage %q in %q = %q, want %q", tc.storage, tc.out, got, tc.want)
		}
	}
}

// TestSearchParallel: search.parallel is at least 1, at most the budget,
// and refused (naming the key, its line and what to do instead) on the
// engines that run one server spoc cannot multiply.
func TestSearchParallel(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"zero", "search: {parallel: 0}\n", "par.yaml:1:10: search.parallel: must be at least 1, got 0"},
		{"beyond the budget", "search: {trials: 4, parallel: 5}\n", "par.yaml:1:21: search.parallel: must not exceed search.trials (4), got 5"},
		{"process", "engine: {kind: process, process: {command: [vllm, serve]}}\nsearch: {parallel: 2}\n",
			"par.yaml:2:10: search.parallel: is 2, but engine.kind process runs one vLLM on this machine's GPUs (2 trials at once would need 2 disjoint GPU sets); use 1, kind kubernetes (each trial its own Deployment), or several spoc tune workers on other machines sharing a postgres:// search.storage"},
		{"external", "engine: {kind: external, external: {url: \"http://127.0.0.1:8000\"}}\nsearch: {parallel: 3}\n",
			"par.yaml:2:10: search.parallel: is 3, but engine.kind external is one server spoc does not start; a study needs kind sim, process or kubernetes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.in), "par.yaml")
			if err == nil || err.Error() != tc.want {
				t.Errorf("Load = %v\nwant %s", err, tc.want)
			}
		})
	}
	for _, in := range []string{"search: {parallel: 3}\n", "engine: {kind: kubernetes, kubernetes: {namespace: llm, image: vllm/vllm-openai}}\nsearch: {parallel: 4}\n"} {
		c, err := Load(strings.NewReader(in), "par.yaml")
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if spec := c.TuneSpec(); spec.Parallel != c.Search.Parallel || spec.Parallel < 3 {
			t.Errorf("%q: tune spec parallel %d", in, spec.Parallel)
		}
	}
	if Default().Search.Parallel != 1 {
		t.Errorf("default search.parallel = %d, want 1", Default().Search.Parallel)
	}
}

// NSGA-II settings under a sampler that ignores them are warned about,
// naming the keys and the sampler; under nsga2, or left at their
// defaults, they are not.
func TestSearchWarnsOfIgnoredNSGA2Settings(t *testing.T) {
	s := DefaultSearch()
	if w := s.Warning(); w != "" {
		t.Errorf("defaults warned: %s", w)
	}
	s.Population, s.MutationProb = 40, 0.2
	w := s.Warning()
	for _, want := range []string{"search.population", "search.mutation_prob", "tpe sampler ignores", "auto picks tpe for 60 trials", "search.sampler: nsga2"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	s.Sampler = "nsga2"
	if w := s.Warning(); w != "" {
		t.Errorf("nsga2 warned: %s", w)
	}
	s.Sampler, s.Trials = "auto", 200
	if w := s.Warning(); w != "" {
		t.Errorf("auto with 200 trials (nsga2) warned: %s", w)
	}
}

package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/samplers"
	"github.com/spoc-project/spoc/tune"
)

// Objective metrics a study can optimise.
var ObjectiveMetrics = []string{"output_throughput", "total_throughput", "request_throughput", "goodput", "ttft_p50", "ttft_p95", "ttft_p99", "itl_p50", "itl_p95", "itl_p99", "tpot_p95", "e2e_p95", "capacity"}

// Search configures the study run by spoc tune.
type Search struct {
	Sampler               string      `yaml:"sampler" doc:"auto (tpe for studies of at most 100 trials, nsga2 beyond; a resumed study keeps its sampler), tpe, nsga2, random or grid."`
	Trials                int         `yaml:"trials" doc:"Total trials of the study (a resumed study runs up to this many)."`
	StopAfterSameFailures int         `yaml:"stop_after_same_failures" doc:"Stop the study when this many trials in a row failed to start their server with the same failure (same reason and log line, numbers aside): a failure that does not depend on the flags (a leftover process holding GPU memory, a bad model path) would fail the whole budget. 0: never stop."`
	Population            int         `yaml:"population" doc:"NSGA-II population size per generation."`
	CrossoverProb         float64     `yaml:"crossover_prob" doc:"Probability that a child is produced by crossover (otherwise a copy of a parent, then mutated)."`
	MutationProb          float64     `yaml:"mutation_prob" doc:"Per-parameter mutation probability; 0 means 1/number of parameters."`
	Seed                  uint64      `yaml:"seed" doc:"Sampler seed."`
	Parallel              int         `yaml:"parallel" doc:"Trials this spoc tune (or plan) runs at once, each on its own server: on kubernetes its own Deployment on its own GPUs, in virtual time on the sim engine; the sampler proposes with the running trials known. Kind process and external run one server: use 1 there (several workers on other machines can share a postgres:// study)."`
	Users                 int         `yaml:"users" doc:"Concurrent users at which every trial is evaluated; 0 means auto: the ceiling of engine.params found by a coarse sweep before the study, so the SLA binds and the front separates configurations that serve more from those that serve fewer." assumption:"the study's tuning load was not published"`
	Duration              Duration    `yaml:"duration" doc:"Measured window of each trial."`
	Warmup                Duration    `yaml:"warmup" doc:"Warm-up before each trial's measured window."`
	Storage               string      `yaml:"storage" doc:"Study storage: sqlite:PATH (default, relative to the output folder) or postgres://... for several workers."`
	Study                 string      `yaml:"study" doc:"Study name inside the storage."`
	Objectives            []Objective `yaml:"objectives" doc:"What the study optimises; SLA clauses are constraints."`
	Space                 []Param     `yaml:"space" doc:"Engine flags to search (vLLM names)."`
}

// StorageIn returns Storage as the study database to open for output folder
// out: a relative SQLite path (sqlite:PATH or a plain path) is placed in out,
// as the field's documentation says; absolute paths, sqlite:// URLs and
// other schemes (postgres://) are returned unchanged. spoc tune, spoc sweep
// --trial and spoc plan must agree on this, or one opens a study another
// never wrote.
func (s Search) StorageIn(out string) string {
	storage := s.Storage
	if strings.Contains(storage, "://") && !strings.HasPrefix(storage, "sqlite:") {
		return storage
	}
	path, hadScheme := strings.CutPrefix(storage, "sqlite:")
	if path == "" || strings.HasPrefix(path, "//") || filepath.IsAbs(path) {
		return storage
	}
	path = filepath.Join(out, path)
	if hadScheme {
		return "sqlite:" + path
	}
	return path
}

// Objective is one optimisation target (search.objectives[]); the type is
// owned by package search.
type Objective = search.ObjectiveSpec

// Param is one dimension of the search space (search.space[]); the type is
// owned by package search.
type Param = search.ParamSpec

// DefaultSearch is a 60-trial study (TPE, picked by sampler auto) over the vLLM scheduler and
// memory flags that decide throughput against latency.
func DefaultSearch() Search {
	return Search{
		Sampler:               "auto",
		Trials:                60,
		StopAfterSameFailures: 5,
		Population:            12,
		CrossoverProb:         0.9,
		Seed:                  1,
		Parallel:              1,
		Users:                 0,
		Duration:              Duration(5 * 60e9),
		Warmup:                Duration(3 * 60e9),
		Storage:               "sqlite:study.db",
		Study:                 "default",
		Objectives: []Objective{
			{Metric: "output_throughput", Direction: "maximize"},
			{Metric: "ttft_p95", Direction: "minimize"},
			{Metric: "itl_p95", Direction: "minimize"},
		},
		Space: DefaultSpace(),
	}
}

// DefaultSpace is the documented default search space.
func DefaultSpace() []Param {
	return []Param{
		{Name: "max-num-batched-tokens", Type: "int", Low: 256, High: 16384, Log: true, Doc: "Per-step token budget: chunked prefill splits long prompts into chunks of at most this, so small values protect ITL and large ones cut TTFT."},
		{Name: "max-num-seqs", Type: "int", Low: 16, High: 1024, Log: true, Doc: "Most sequences in one batch: caps decode concurrency and KV demand."},
		{Name: "gpu-memory-utilization", Type: "float", Low: 0.80, High: 0.95, Step: 0.01, Doc: "Share of GPU memory vLLM may use; the rest of it after weights is KV cache."},
		{Name: "enable-prefix-caching", Type: "bool", Choices: []any{true, false}, Doc: "Reuse KV blocks of shared prefixes across requests (the shared monorepo root)."},
		{Name: "enable-chunked-prefill", Type: "bool", Choices: []any{true, false}, Doc: "Split long prefills across steps, mixing them with decodes."},
		{Name: "long-prefill-token-threshold", Type: "categorical", Choices: []any{0, 2048, 8192}, Doc: "Prompts longer than this count as long and are limited per step (0: off)."},
		{Name: "block-size", Type: "categorical", Choices: []any{16, 32, 64}, Doc: "KV-cache block size in tokens; prefix sharing is in whole blocks."},
		{Name: "async-scheduling", Type: "bool", Choices: []any{true, false}, Doc: "Overlap scheduling of step n+1 with execution of step n."},
	}
}

// DefaultSGLangSpace is the default search space of engine.flavor sglang:
// SGLang's scheduler and memory knobs (package sglang's catalogue).
// Replicas (--dp-size) come from engine.gpus / engine.tensor_parallel_size,
// not from the search.
func DefaultSGLangSpace() []Param {
	return []Param{
		{Name: "max-running-requests", Type: "int", Low: 16, High: 1024, Log: true, Doc: "Most requests in the running batch: caps decode concurrency and KV demand (vLLM's max-num-seqs)."},
		{Name: "chunked-prefill-size", Type: "categorical", Choices: []any{2048, 4096, 8192, 16384}, Doc: "Most prompt tokens of one request prefilled per step: small values protect ITL, large ones cut TTFT."},
		{Name: "max-prefill-tokens", Type: "categorical", Choices: []any{8192, 16384, 32768}, Doc: "Most prompt tokens admitted in one prefill batch."},
		{Name: "mem-fraction-static", Type: "float", Low: 0.75, High: 0.92, Step: 0.01, Doc: "Share of GPU memory for weights and the KV-cache pool; the rest is left for activations and CUDA graphs (not vLLM's gpu-memory-utilization, docs/engines.md)."},
		{Name: "schedule-policy", Type: "categorical", Choices: []any{"fcfs", "lpm"}, Doc: "Admission order: arrival (fcfs) or longest cached prefix first (lpm)."},
		{Name: "disable-radix-cache", Type: "bool", Choices: []any{false, true}, Doc: "Turn the radix (prefix) cache off."},
	}
}

func (s *Search) validate(p string, errs *Errors) {
	// the samplers are search/samplers' registry, and auto picks one of them
	if names := append([]string{tune.SamplerAuto}, samplers.Names()...); !oneOf(s.Sampler, names) {
		errs.Addf(p+".sampler", "unknown sampler %q (one of %s)", s.Sampler, quoteList(names))
	}
	if s.Trials < 1 {
		errs.Addf(p+".trials", "must be at least 1, got %d", s.Trials)
	}
	if s.StopAfterSameFailures < 0 {
		errs.Addf(p+".stop_after_same_failures", "must be 0 (never stop) or a trial count, got %d", s.StopAfterSameFailures)
	}
	if s.Parallel < 1 {
		errs.Addf(p+".parallel", "must be at least 1, got %d", s.Parallel)
	} else if s.Trials >= 1 && s.Parallel > s.Trials {
		errs.Addf(p+".parallel", "must not exceed search.trials (%d), got %d", s.Trials, s.Parallel)
	}
	if s.Population < 2 {
		errs.Addf(p+".population", "must be at least 2, got %d", s.Population)
	}
	if s.CrossoverProb < 0 || s.CrossoverProb > 1 {
		errs.Addf(p+".crossover_prob", "must be in [0, 1], got %v", s.CrossoverProb)
	}
	if s.MutationProb < 0 || s.MutationProb > 1 {
		errs.Addf(p+".mutation_prob", "must be in [0, 1], got %v", s.MutationProb)
	}
	if s.Users < 0 {
		errs.Addf(p+".users", "must be 0 (auto) or a user count, got %d", s.Users)
	}
	if s.Duration <= 0 {
		errs.Addf(p+".duration", "must be positive")
	}
	if s.Warmup < 0 {
		errs.Addf(p+".warmup", "must not be negative")
	}
	if s.Study == "" {
		errs.Addf(p+".study", "must be set")
	}
	if len(s.Objectives) == 0 {
		errs.Addf(p+".objectives", "at least one objective is needed")
	}
	for i, o := range s.Objectives {
		op := fmt.Sprintf("%s.objectives[%d]", p, i)
		if !oneOf(o.Metric, ObjectiveMetrics) {
			errs.Addf(op+".metric", "unknown metric %q (one of %s)", o.Metric, quoteList(ObjectiveMetrics))
		}
		if o.Direction != "maximize" && o.Direction != "minimize" {
			errs.Addf(op+".direction", "must be maximize or minimize, got %q", o.Direction)
		}
	}
	seen := map[string]bool{}
	for i, q := range s.Space {
		qp := fmt.Sprintf("%s.space[%d]", p, i)
		if q.Name == "" {
			errs.Addf(qp+".name", "must be set")
		} else if seen[q.Name] {
			errs.Addf(qp+".name", "duplicate parameter %q", q.Name)
		}
		seen[q.Name] = true
		switch q.Type {
		case "int", "float":
			if q.High < q.Low {
				errs.Addf(qp+".high", "must be >= low (%v), got %v", q.Low, q.High)
			}
			if q.Log && q.Low <= 0 {
				errs.Addf(qp+".low", "log scale needs low > 0, got %v", q.Low)
			}
			if q.Step < 0 {
				errs.Addf(qp+".step", "must not be negative, got %v", q.Step)
			}
		case "bool", "categorical":
			if len(q.Choices) == 0 {
				errs.Addf(qp+".choices", "%s parameter needs choices", q.Type)
			}
		default:
			errs.Addf(qp+".type", "unknown parameter type %q (one of \"int\", \"float\", \"bool\", \"categorical\")", q.Type)
		}
	}
}

// validateParallel refuses parallel trials on an engine that runs one
// server spoc cannot multiply: a local process owns this machine's GPUs
// (N servers would need N disjoint GPU sets and ports), an external
// server is one server whatever the flags.
func (s *Search) validateParallel(p string, e Engine, errs *Errors) {
	if s.Parallel <= 1 {
		return
	}
	switch e.Kind {
	case EngineProcess:
		errs.Addf(p+".parallel", "is %d, but engine.kind process runs one vLLM on this machine's GPUs (%d trials at once would need %d disjoint GPU sets); use 1, kind kubernetes (each trial its own Deployment), or several spoc tune workers on other machines sharing a postgres:// search.storage", s.Parallel, s.Parallel, s.Parallel)
	case EngineExternal:
		errs.Addf(p+".parallel", "is %d, but engine.kind external is one server spoc does not start; a study needs kind sim, process or kubernetes", s.Parallel)
	}
}

// Warning says which NSGA-II settings the study's sampler ignores: set
// away from their defaults under a sampler that is not NSGA-II (TPE, which
// search.sampler: auto picks up to tune.AutoMaxTrials trials), they would
// read as used. "" when there are none.
func (s Search) Warning() string {
	sampler := tune.ResolveSampler(tune.Spec{Sampler: s.Sampler, Trials: s.Trials}, "")
	if sampler == "nsga2" {
		return ""
	}
	d := DefaultSearch()
	var keys []string
	if s.Population != d.Population {
		keys = append(keys, "search.population")
	}
	if s.CrossoverProb != d.CrossoverProb {
		keys = append(keys, "search.crossover_prob")
	}
	if s.MutationProb != d.MutationProb {
		keys = append(keys, "search.mutation_prob")
	}
	if len(keys) == 0 {
		return ""
	}
	why := "search.sampler: " + s.Sampler
	if s.Sampler == tune.SamplerAuto {
		why = fmt.Sprintf("search.sampler: auto picks %s for %d trials (NSGA-II beyond %d)", sampler, s.Trials, tune.AutoMaxTrials)
	}
	return fmt.Sprintf("%s set NSGA-II's settings, which the %s sampler ignores (%s); set search.sampler: nsga2 to use them", strings.Join(keys, ", "), sampler, why)
}

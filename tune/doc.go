// Package tune runs spoc's parameter study: an NSGA-II (or random, or grid)
// search over engine flags where every trial starts a server with the
// sampled flags, loads it with the workload at the study's user count, and
// scores it on the configured objectives (output throughput, TTFT p95,
// ITL p95, … or the capacity ceiling), with the SLA clauses as constraints.
//
// The study is durable (package study): running the same tune again
// continues it up to its trial budget, and several workers may share one
// PostgreSQL study. A trial whose server cannot start because of its
// parameters (CUDA out of memory, not enough KV cache, rejected flags) is
// INFEASIBLE; the study carries on.
//
// tune does not measure anything itself: the caller supplies an Evaluator
// (capacity.Evaluator.TuneEvaluator in spoc) that starts the engine, runs
// the load and returns the run's summary.
package tune

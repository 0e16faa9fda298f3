// Package problems holds standard multi-objective test problems for
// benchmarking samplers: ZDT1, ZDT2, ZDT3 (30 variables), DTLZ2 (3
// objectives, 12 variables), Deb's constrained CONSTR problem, and a
// synthetic mixed int/float/log/categorical problem with a cross-parameter
// rule that mimics a small engine-flag search. Each Problem knows its
// reference point and the hypervolume of its true Pareto front, so results
// can be reported as a ratio.
package problems

// Package search holds the core types of spoc's multi-objective parameter
// search: the parameter Space (int, float, log scale, step, categorical) with
// named cross-parameter Rules, objective Directions, Trials and their states,
// the Sampler and Objective contracts, Pareto dominance (plain and
// constrained), non-dominated sorting and exact hypervolume.
//
// Algorithms live in sibling packages (search/nsga2, search/random,
// search/grid) and never import each other; durable storage lives in package
// study. Every value in this package uses the minimisation convention
// internally: Directions are applied by Oriented before comparing values.
package search

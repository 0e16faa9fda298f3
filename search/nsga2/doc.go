// Package nsga2 implements the NSGA-II multi-objective sampler (Deb et al.,
// 2002) over a search.Space, with Optuna's NSGAIISampler as the reference for
// study semantics:
//
//   - generation 0 is drawn at random; a generation is complete once
//     PopulationSize of its trials are COMPLETE, and later trials belong to
//     the next generation;
//   - the parent population of generation g is the elite of generation g-1's
//     parents and the first PopulationSize trials of generation g-1 to
//     complete, chosen by fast non-dominated sort under constrained
//     domination (feasible first, then smaller total violation) and crowding
//     distance; it depends only on stored trials, so several workers sharing
//     a study agree on it;
//   - a child comes from two binary-tournament winners (crowded comparison),
//     crossover with probability CrossoverProb (uniform by default, SBX
//     available; categoricals are always inherited from one parent), then
//     per-parameter mutation (polynomial for numbers, a different choice for
//     categoricals);
//   - FAIL and INFEASIBLE trials never enter a population.
package nsga2

// Package tpe implements a multivariate, multi-objective Tree-structured
// Parzen Estimator sampler (Bergstra et al. 2011; Optuna's multivariate
// TPESampler with constraints as the reference for study semantics) over a
// search.Space of int, float, log-scale, stepped and categorical
// parameters with SLA constraints. It is spoc's sampler for low budgets:
// a study of tens of live trials, each of which costs GPU-minutes.
//
//   - The first StartupTrials trials (the study's seeds included) come from
//     a Latin hypercube drawn from the seed: every stratum of every numeric
//     parameter and every choice of every categorical is covered before the
//     model takes over, where independent uniform draws cluster.
//   - Then the finished trials are ranked: feasible before infeasible; the
//     feasible ones by non-dominated front and, within the front that is
//     cut, by greedy hypervolume contribution (Optuna's HSSP); infeasible
//     ones by total violation; INFEASIBLE trials (the server did not start)
//     last. The best Gamma(n) trials are "good", the rest "bad"; trials
//     still running count as bad (a constant liar), so that several
//     workers sharing a study do not all propose the same point.
//   - Two joint Parzen densities are fitted, l over the good and g over the
//     bad trials: one kernel per trial, the product over parameters of a
//     truncated Gaussian (numbers, in internal coordinates: log for log
//     parameters; integer and stepped parameters use the probability of
//     their grid cell) or a smoothed one-hot distribution (categoricals),
//     plus a broad prior kernel. Candidates are drawn from l and the one
//     with the largest l(x)/g(x) that passes the space's rules and is not
//     a canonical duplicate of an evaluated trial is proposed.
//   - Deterministic: the random stream of each sample depends only on the
//     seed, the length of the history and the attempt (search.TrialRand).
package tpe

// Package capacity answers spoc's question for one configuration: how many
// concurrent users of a workload it serves within the SLA. It evaluates one
// configuration at one load (Evaluate) and sweeps user counts to the
// capacity ceiling (Sweep: a coarse grid, then bisection; SweepConfig,
// CandidateSweep). Package plan composes these into the whole methodology.
package capacity

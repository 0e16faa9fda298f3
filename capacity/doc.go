// Package capacity answers spoc's question: how many concurrent users of a
// workload a configuration serves within the SLA. It evaluates one
// configuration at one load (Evaluate), sweeps user counts to the capacity
// ceiling (Sweep: a coarse grid, then bisection), and runs the whole
// methodology end to end (Plan: inspect → tune → choose → sweep → trace →
// report).
package capacity

// Package plan runs spoc's whole methodology for one deployment and owns its
// answer, the Summary: inspect the workload, sweep the configured engine
// flags as a baseline, tune the flags (a TPE or NSGA-II study), choose a
// configuration from the feasible front by short sweeps, sweep it to the
// capacity ceiling, analyse a kernel trace when one is configured, and
// compare hardware targets when asked.
//
// Run computes; it writes the study and the sweep's records into the output
// folder but no report file. The report package renders a Summary (HTML,
// Markdown, summary.json) and never runs anything; package capacity provides
// the single-configuration steps (evaluate, sweep) the phases are made of.
package plan

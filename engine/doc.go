// Package engine starts and stops one inference server per trial.
//
// An Engine is a launcher: Start brings up a server configured with a trial's
// parameters (vLLM flag names, rendered by Flags) and returns the Endpoint the
// load runner talks to; Stop tears it down. Launchers:
//
//   - Sim: the built-in simulator on a loopback port. It also implements
//     Virtual, so an evaluation can skip HTTP and run in virtual time.
//   - Process: a local command (argv template, no shell) in its own process
//     group, awaited on its health path and stopped with SIGTERM then SIGKILL.
//   - External: a server spoc does not manage; parameters are not applied.
//   - Kubernetes: a Deployment and Service per trial applied with kubectl.
//
// A server that cannot start is reported as a *Failure with a Reason (exited
// early, CUDA out of memory, not enough KV cache, configuration rejected,
// health timeout). Failures caused by the parameters themselves match
// search.ErrInfeasible with errors.Is, so a study records the trial as
// INFEASIBLE and carries on; the others are plain trial failures.
//
// Each trial's server log is written to its artefact directory (ArtifactsDir)
// as server.log.
package engine

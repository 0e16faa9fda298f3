// Package engine starts and stops inference servers.
//
// A Launcher starts a Server configured with a set of flags (Params, vLLM
// names, rendered by package vllm) and returns once it is ready; the
// Server says where it listens (Endpoint), empties its prefix cache between
// runs (ResetCache: vLLM's POST /reset_prefix_cache) and stops (Stop).
// Launchers:
//
//   - Sim: the built-in simulator on a loopback port. It also implements
//     Virtual, so an evaluation can skip HTTP and run in virtual time.
//   - Process: a local command (argv template, no shell) in its own process
//     group, awaited on its health path and stopped with SIGTERM then SIGKILL.
//   - External: a server spoc does not manage; its flags are not applied.
//   - Kubernetes: a Deployment and Service per server, applied with kubectl.
//
// A server that cannot start is reported as a *Failure with a Reason (exited
// early, CUDA out of memory, not enough KV cache, configuration rejected,
// health timeout). Failures caused by the flags themselves match
// ErrInfeasible with errors.Is, so a study records the trial as INFEASIBLE
// and carries on; the others are plain failures. Alive tells whether a
// started server still serves; one that stopped is ErrServerGone, with the
// end of its log.
//
// Every server gets its own folder under the launcher's Dir
// (server-001, server-002, …) holding its server.log. Package engine knows
// nothing of studies or configuration files: config builds launchers, and
// package capacity decides when to start, reuse and stop servers.
package engine

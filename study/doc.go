// Package study stores search studies and their trials durably and runs the
// optimisation loop over them.
//
// A study is a named search (objective directions, parameter space, sampler
// name and seed) with numbered trials. Storage is SQLite by default
// (modernc.org/sqlite, WAL journal; one machine, any number of processes)
// or PostgreSQL (jackc/pgx) for several workers on different machines
// sharing one study, the Optuna RDB model. The schema is created and
// upgraded by embedded migrations when a database is opened.
//
// Optimize is the loop every worker runs: claim a trial atomically (a
// queued WAITING trial, or a new one sampled while holding the study's lock,
// so that generation bookkeeping is consistent across workers), evaluate
// the objective while sending heartbeats, record the outcome. A RUNNING
// trial whose heartbeat is older than StaleAfter belongs to a dead worker:
// the next worker marks it FAIL and queues a WAITING copy with the same
// parameters, which re-runs its slot. Running the same command again after a
// crash or Ctrl-C therefore continues the study up to its trial budget
// without losing or duplicating a trial.
//
// Stored encodings: times are Unix nanoseconds UTC; params, values,
// constraints and attributes are JSON; objective and constraint values must
// be finite.
package study

// Package result holds spoc's narrow waist: the per-request Record that every
// executor (the HTTP load runner and the simulator) writes and every analysis
// (summary, SLA, report) reads, its JSONL codec, and streaming summaries.
//
// The package never performs I/O beyond the io.Reader and io.Writer it is given.
package result

// Package loadgen drives an OpenAI-compatible inference server with closed-loop
// virtual users executing stateful multi-turn session scripts, and records
// every request as a result.Record with client-side timing that can be trusted:
//
//   - Each user sends a turn, reads the streamed reply, appends the server's
//     actual reply to its history, thinks, and sends the next turn; a new
//     session starts when a script ends.
//   - Users start staggered over a ramp; requests scheduled in the warm-up are
//     flagged; at the end of the measured window in-flight requests are
//     cancelled and recorded as cancelled, never dropped.
//   - Latencies count from the scheduled send time (no coordinated omission);
//     the client's own dispatch lag, CPU use and Go scheduling latency are
//     measured so that a client-bound run is flagged, not trusted.
//   - The SSE stream is parsed by hand over net/http; every chunk is
//     timestamped when its bytes are read, before JSON decoding.
//
// The testserver subpackage is a fault-injecting streaming server that logs its
// own emission times, for tests and for measuring the client's accuracy.
package loadgen

// Package testserver is a streaming OpenAI-compatible server for tests and
// client benchmarks. It emits tokens at controlled times, logs the time each
// chunk was actually written to the connection (timers jitter, so accuracy is
// judged against actual emission, not nominal pacing), records what every
// request carried, and injects faults on demand: HTTP 429/500/503, a
// connection reset mid-stream, a malformed SSE line, a stall beyond the
// client's timeout, and a slow first byte.
package testserver

// Package workload models the stateful multi-turn sessions spoc sends: user
// profiles (share of users, context at session start, growth per turn,
// output budget, think time, maximum context), the prefix geometry that
// decides which prompt prefixes users share (a monorepo root for everyone,
// team subtrees, private files, then the conversation), and deterministic
// session scripts.
//
// A Generator is both a Source (Session(user, n) computes lengths and
// segment layout only, cheaply, from independent random streams, so any
// session can be generated lazily in any order) and a Renderer (the only
// place text is produced: each segment is cut from a corpus to its exact
// token length under the workload's tokenizer). Importers replay vLLM
// multi-turn conversations, AIPerf multi-turn JSONL and Mooncake/Bailian
// block-hash traces through the same two interfaces. Inspect computes
// per-profile statistics and the ideal prefix-cache hit rate. Schedule is
// the closed-loop user schedule (ramp, think time, session roll-over,
// windows) that both executors, loadgen and sim, follow.
package workload

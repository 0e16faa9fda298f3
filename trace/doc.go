// Package trace explains where GPU time goes in a captured kernel trace.
//
// A trace reader (see trace/nsys) turns an Nsight Systems export into a
// Profile: per device, the distinct kernel names with their launch counts and
// summed durations, plus the device's busy time inside the analysis window.
// Aggregation happens in the reader (in SQL for SQLite exports), so a Profile
// stays small however many million kernels the capture holds.
//
// Analyze categorises every kernel name with an ordered regular-expression
// RuleSet (DefaultRules, overridable by a YAML file) into the canonical
// categories (attention, kv_cache, moe_gemm, moe_routing, gemm, communication,
// elementwise, sampling, memory, other) and returns a Breakdown: each
// category's time and share overall and per GPU, idle fractions, the top
// kernels per category, rank imbalance and the kernels no rule knew. Compare
// puts a predicted split (plain data, for example from a roofline model) beside
// the measured one.
package trace

// Package telemetry collects the engine's and the GPUs' own metrics during a
// load run and derives from them the signals the methodology correlates with
// the client-side latencies: queueing, KV-cache and prefix-cache use,
// preemptions, server-side TTFT/ITL percentiles, and per-GPU SM/DRAM/tensor
// activity, clocks, power and throttle reasons.
//
// Two sources feed the same bounded Store:
//
//   - Collector scrapes Prometheus text endpoints (vLLM /metrics,
//     dcgm-exporter) at an interval while a run goes on, and can write every
//     scrape to a telemetry.jsonl file beside the run's records.
//   - QueryRange asks an existing Prometheus server over its HTTP API for the
//     run window, one editable PromQL expression per catalog metric.
//
// Samples are normalised through the Catalog, which knows old and new vLLM
// metric names, the counters' _total suffix and the DCGM field names, so that
// Store.Window derives the same Signals from either source. Window also flags
// stragglers: a GPU whose SM clock falls a set fraction below its
// tensor-parallel peers', or whose throttle bits show thermal or power
// slowdown, with the time window in which it did.
package telemetry

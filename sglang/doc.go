// Package sglang is spoc's one place for what it knows about SGLang's
// outside, as package vllm is for vLLM's: the server's command-line flags
// (a catalogue read from SGLang's python/sglang/srt/server_args.py, with
// their defaults and types), how engine parameters become those flags,
// the names of its Prometheus metrics, and the HTTP routes spoc uses.
//
// The facts were read from SGLang's own source at commit 001067ff of
// sgl-project/sglang (main after release 0.5.3, where ServerArgs is a
// dataclass whose field names give the flags: tp_size → --tp-size), and
// its metrics collector (python/sglang/srt/metrics/collector.py) and HTTP
// server (python/sglang/srt/entrypoints/http_server.py) of the same
// period. Each constant's comment says which SGLang behaviour it records;
// older releases differ where noted (the default --schedule-policy was
// lpm before it became fcfs).
//
// Parameter names are normalised by vllm.FlagName, spoc's one rule
// (max_running_requests and --max-running-requests are the same flag).
package sglang

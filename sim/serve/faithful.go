package serve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/vllm"
)

// Chunking of streamed replies: after the first token, which is always sent
// alone (as vLLM sends a request's first output at once), each SSE chunk
// carries TokensPerChunk tokens.
const (
	// DefaultTokensPerChunk is the chunk size of the default mode: one
	// token per chunk.
	DefaultTokensPerChunk = 1
	// FaithfulTokensPerChunk is the chunk size of the vLLM-faithful mode:
	// vLLM with speculative decoding, a stream interval or coalesced async
	// outputs sends several tokens per chunk, so a client must count tokens
	// from usage, not from chunks.
	FaithfulTokensPerChunk = 2
)

// ReasoningShare is the fraction of a reasoning model's reply that is chain
// of thought in the vLLM-faithful mode (see ReasoningTokens).
const ReasoningShare = 0.5

// ReasoningTokens is how many of a reasoning model's n output tokens are
// reasoning in the vLLM-faithful mode: ⌊n × ReasoningShare⌋, but at most
// n − 1, so that every reply ends with at least one content token. A fixed
// share (rather than a draw) keeps replies of equal length identical.
func ReasoningTokens(n int) int {
	if n <= 1 {
		return 0
	}
	return min(int(float64(n)*ReasoningShare), n-1)
}

// reasoningModel reports whether vLLM streams a chain of thought for the
// model: the gpt-oss family, whose harmony format always separates the
// analysis channel (reasoning) from the final answer (content).
func reasoningModel(names ...string) bool {
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), "gpt-oss") {
			return true
		}
	}
	return false
}

// DevMode reports whether a value of vllm.EnvServerDevMode turns vLLM's
// development routes on: vLLM reads it as an integer, and any non-zero
// one enables them.
func DevMode(value string) bool {
	v, err := strconv.Atoi(strings.TrimSpace(value))
	return err == nil && v != 0
}

// IgnoredFlag is a vLLM command-line flag that `spoc sim serve
// --vllm-faithful` accepts and ignores (with a log line) because the
// simulator does not model it, so that a real `vllm serve` command line
// runs unchanged. Flags that are neither modelled nor listed still fail.
type IgnoredFlag struct {
	// Name is the flag without dashes.
	Name string
	// Boolean flags take no value; vLLM also accepts their "no-" form.
	Boolean bool
}

// IgnoredFlags are the vLLM flags the vLLM-faithful mode ignores: logging,
// security, tokenizer and chat-template plumbing, loading, parsers for tools
// and reasoning (the simulator's reasoning split does not depend on them),
// and a few performance options whose effect the cost model does not
// represent (the log line says so). Pipeline parallelism is deliberately
// absent: it changes the deployment, and ignoring it would simulate a
// different one.
var IgnoredFlags = []IgnoredFlag{
	{Name: "trust-remote-code", Boolean: true},
	{Name: "disable-log-requests", Boolean: true},
	{Name: "enable-log-requests", Boolean: true},
	{Name: "disable-log-stats", Boolean: true},
	{Name: "enable-log-outputs", Boolean: true},
	{Name: "disable-uvicorn-access-log", Boolean: true},
	{Name: "disable-fastapi-docs", Boolean: true},
	{Name: "enable-auto-tool-choice", Boolean: true},
	{Name: "enable-expert-parallel", Boolean: true},
	{Name: "disable-custom-all-reduce", Boolean: true},
	{Name: "api-key"},
	{Name: "chat-template"},
	{Name: "compilation-config"},
	{Name: "dtype"},
	{Name: "download-dir"},
	{Name: "generation-config"},
	{Name: "hf-overrides"},
	{Name: "load-format"},
	{Name: "max-log-len"},
	{Name: "quantization"},
	{Name: "reasoning-parser"},
	{Name: "revision"},
	{Name: "speculative-config"},
	{Name: "swap-space"},
	{Name: "tokenizer-mode"},
	{Name: "tool-call-parser"},
	{Name: "uvicorn-log-level"},
}

// reasoningField validates the configured name of the streamed chain of
// thought; empty means vllm.FieldReasoning.
func reasoningField(f string) (string, error) {
	switch f {
	case "":
		return vllm.FieldReasoning, nil
	case vllm.FieldReasoning, vllm.FieldReasoningContent:
		return f, nil
	}
	return "", fmt.Errorf("sim server: reasoning field %q is neither %q nor %q", f, vllm.FieldReasoning, vllm.FieldReasoningContent)
}

package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Reason classifies why a server did not come up.
type Reason string

// Failure reasons. OutOfMemory, KVCache and Rejected are caused by the
// trial's parameters (INFEASIBLE); Exited and HealthTimeout are not known to
// be (FAIL).
const (
	// ReasonOutOfMemory: the log shows a CUDA out-of-memory error.
	ReasonOutOfMemory Reason = "out_of_memory"
	// ReasonKVCache: the weights fit but no (or not enough) memory is left
	// for the KV cache blocks the configuration needs.
	ReasonKVCache Reason = "kv_cache"
	// ReasonRejected: the server refused the flag combination (an invalid
	// value or a failed configuration check).
	ReasonRejected Reason = "rejected_config"
	// ReasonExited: the server exited before becoming healthy for another
	// reason (see the log).
	ReasonExited Reason = "exited"
	// ReasonHealthTimeout: the server did not become healthy in time.
	ReasonHealthTimeout Reason = "health_timeout"
)

// ErrInfeasible is matched (errors.Is) by every failure caused by the
// server's flags themselves (out of memory, no room for the KV cache, a
// rejected flag combination): another set of flags may run. A study records
// such a trial as INFEASIBLE instead of FAIL.
var ErrInfeasible = errors.New("configuration cannot run")

// Sentinel errors matching a *Failure of the corresponding Reason with
// errors.Is.
var (
	ErrOutOfMemory   = errors.New("CUDA out of memory")
	ErrKVCache       = errors.New("not enough memory for the KV cache")
	ErrRejected      = errors.New("configuration rejected by the server")
	ErrExited        = errors.New("server exited early")
	ErrHealthTimeout = errors.New("server did not become healthy in time")
)

func (r Reason) sentinel() error {
	switch r {
	case ReasonOutOfMemory:
		return ErrOutOfMemory
	case ReasonKVCache:
		return ErrKVCache
	case ReasonRejected:
		return ErrRejected
	case ReasonExited:
		return ErrExited
	case ReasonHealthTimeout:
		return ErrHealthTimeout
	}
	return nil
}

// Infeasible reports whether the reason is caused by the parameters, so the
// trial is INFEASIBLE rather than FAIL.
func (r Reason) Infeasible() bool {
	return r == ReasonOutOfMemory || r == ReasonKVCache || r == ReasonRejected
}

// Failure is a server that did not come up. errors.Is matches the Reason's
// sentinel (ErrOutOfMemory, …) and, for infeasible reasons, ErrInfeasible.
type Failure struct {
	Reason Reason `json:"reason"`
	// Detail is the log line that decided the reason, or what happened
	// ("exit status 1", "no answer on /health after 20m0s").
	Detail string `json:"detail,omitempty"`
	// ExitCode is the server's exit status when it exited; -1 otherwise.
	ExitCode int `json:"exit_code"`
	// Log is the path of the captured server log.
	Log string `json:"log,omitempty"`
}

// Error describes the failure in one line.
func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString(f.Reason.sentinel().Error())
	if f.ExitCode >= 0 {
		fmt.Fprintf(&b, " (exit status %d)", f.ExitCode)
	}
	if f.Detail != "" {
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	if f.Log != "" {
		fmt.Fprintf(&b, " [log: %s]", f.Log)
	}
	return b.String()
}

// Is matches the reason's sentinel and, when infeasible, ErrInfeasible.
func (f *Failure) Is(target error) bool {
	if target == f.Reason.sentinel() {
		return true
	}
	return target == ErrInfeasible && f.Reason.Infeasible()
}

// logPattern maps a log substring (compared case-insensitively) to a reason.
type logPattern struct {
	substr string
	reason Reason
}

// logPatterns are checked in order against each log line; the first pattern
// a line matches decides that line's reason (see Classify for the ranking).
var logPatterns = []logPattern{
	{"outofmemoryerror", ReasonOutOfMemory}, // torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
	{"cuda out of memory", ReasonOutOfMemory},
	{"cuda error: out of memory", ReasonOutOfMemory},
	{"cudaerrormemoryallocation", ReasonOutOfMemory},
	{"no available memory for the cache blocks", ReasonKVCache},
	{"insufficient memory for kv cache", ReasonKVCache},
	{"larger than the available kv cache memory", ReasonKVCache},
	{"larger than the maximum number of tokens that can be stored in kv cache", ReasonKVCache},
	{"error: argument", ReasonRejected}, // argparse: invalid choice / invalid int value
	{"validationerror", ReasonRejected}, // pydantic config checks (vLLM ≥ 0.10)
	{"valueerror:", ReasonRejected},     // EngineArgs / SchedulerConfig checks
	{"kv cache size:", ReasonKVCache},   // spoc sim serve: weights leave no KV cache
	{"engine params:", ReasonRejected},  // spoc sim serve: impossible flag value
	{"(engine.params.", ReasonRejected}, // spoc sim serve: a value its config check refuses
}

// notRejected are argparse errors that mean the command itself is wrong for
// this server version (a flag it does not know): a setup problem, not a bad
// parameter value, so every trial would "fail" the same way.
var notRejected = []string{"unrecognized arguments", "no such option",
	"unknown vllm flag", "unknown sglang flag", "(did you mean --"} // spoc sim serve's config check

// Classify returns the reason a server exited early judging by its log, and
// the deciding line. A KV-cache shortage beats a plain out-of-memory error
// (it names the cause), which beats a rejected configuration; a log naming
// an unknown flag, or matching nothing, gives ReasonExited with the last
// line as detail.
func Classify(log string) (reason Reason, detail string) {
	rank := map[Reason]int{ReasonExited: 0, ReasonRejected: 1, ReasonOutOfMemory: 2, ReasonKVCache: 3}
	best, bestLine := ReasonExited, ""
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		for _, s := range notRejected {
			if strings.Contains(l, s) {
				return ReasonExited, strings.TrimSpace(line)
			}
		}
		for _, p := range logPatterns {
			if strings.Contains(l, p.substr) {
				if rank[p.reason] > rank[best] {
					best, bestLine = p.reason, line
				}
				break
			}
		}
	}
	if best == ReasonExited {
		bestLine = lastLine(log)
	}
	return best, strings.TrimSpace(bestLine)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			return t
		}
	}
	return ""
}

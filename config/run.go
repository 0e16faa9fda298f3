package config

import (
	"fmt"
	"net/url"
	"os"
)

// Run configures one load run.
type Run struct {
	Target            string         `yaml:"target,omitempty" doc:"Base URL for spoc run (overrides the engine's endpoint)."`
	Users             int            `yaml:"users" doc:"Concurrent closed-loop virtual users."`
	Duration          Duration       `yaml:"duration" doc:"Measured window."`
	Warmup            Duration       `yaml:"warmup" doc:"Window before the measured one, excluded from the summary: the prefix cache fills and the cold first prompts of mid-session starts drain. On the simulated reference case 1 minute already gives the 3-8 minute ceiling; a real deployment's cache and queues take longer to settle, so watch them in the report's telemetry before shortening it; a run whose measured window is still settling says so (docs/capacity.md)."`
	Ramp              Duration       `yaml:"ramp" doc:"Users start staggered over this period: no burst at t=0."`
	ThinkTimeScale    float64        `yaml:"think_time_scale" doc:"Multiplier on think times; 0 sends turns back to back."`
	MidSessionStart   bool           `yaml:"mid_session_start" doc:"Each user's first session joins in progress at a random turn (earlier turns folded into its prefix), so a run starts near steady state instead of with every context at its minimum."`
	Endpoint          string         `yaml:"endpoint" doc:"chat (/v1/chat/completions) or completions (/v1/completions)."`
	RequestTimeout    Duration       `yaml:"request_timeout" doc:"Longest a request may take before it counts as a timeout."`
	FirstByteTimeout  Duration       `yaml:"first_byte_timeout" doc:"Longest wait for the first response byte."`
	ClientBoundLagP99 Duration       `yaml:"client_bound_lag_p99" doc:"The run is marked client-bound (untrustworthy) when dispatch lag p99 exceeds this, or when more than 1 % of the window's requests were due for longer than this and never sent (a stalled client sends nothing)."`
	APIKeyEnv         string         `yaml:"api_key_env" doc:"Environment variable holding the API key sent as a bearer token; empty (the default) sends none. The key goes only over https or to a server on this machine (loopback) unless api_key_plain_http is set; it is never logged or recorded."`
	APIKeyPlainHTTP   bool           `yaml:"api_key_plain_http" doc:"Send the API key over plain http to another machine too, e.g. to an in-cluster Kubernetes Service (plain http, not loopback), where anyone on the path can read it."`
	HistoryPolicy     string         `yaml:"history_policy" doc:"What a reasoning model's turn leaves in the conversation for the next turn: final (its final content only; the reasoning is dropped, as the harmony format does for gpt-oss) or keep (reasoning and content)."`
	PromptDriftLimit  float64        `yaml:"prompt_drift_limit" doc:"Largest mean relative difference between the prompt tokens the server reports and the workload's targets before a profile's run is flagged for prompt drift (docs/loadgen.md)."`
	Clients           int            `yaml:"clients" doc:"Client processes that drive one live run together (--clients): the users are split into this many shards (a user's sessions on one shard, profiles spread evenly, open-loop sessions dealt as they arrive), each shard its own spoc process started at one agreed instant, their records merged into one stream. One machine drives the load until the client-bound check says it cannot; then shards (docs/loadgen.md, Several clients). Live engines only: the simulator runs in virtual time and has no client."`
	Kubernetes        *RunKubernetes `yaml:"kubernetes,omitempty" doc:"Run the client in a Kubernetes cluster: the run.clients shards are the pods of one Indexed Job (spoc's image, backoffLimit 0), started at one instant through a ConfigMap, their records streamed back on their logs and merged (docs/loadgen.md, Client pods on Kubernetes; RBAC in deploy/kubernetes/spoc-run-job.yaml)."`
	Arrivals          *Arrivals      `yaml:"arrivals,omitempty" doc:"Open-loop sessions for spoc run and spoc sim run: sessions arrive by a rate curve or at a trace's timestamps and users, ramp and mid_session_start do not apply; the sessions in progress are the run's outcome (docs/loadgen.md, Open-loop arrivals). Capacity runs (sweep, tune, plan) stay closed-loop."`
}

// DefaultRun: 100 users, 1 minute ramp, 3 minutes warm-up (the prefix
// cache fills and mid-session users' cold first prompts drain; a margin over
// the simulator, where 1 minute already suffices, for real deployments), 10
// minutes measured.
func DefaultRun() Run {
	return Run{
		Users:             100,
		Duration:          Duration(10 * 60e9),
		Warmup:            Duration(3 * 60e9),
		Ramp:              Duration(60e9),
		ThinkTimeScale:    1,
		MidSessionStart:   true,
		Endpoint:          "chat",
		RequestTimeout:    Duration(10 * 60e9),
		FirstByteTimeout:  Duration(5 * 60e9),
		ClientBoundLagP99: Duration(10e6),
		HistoryPolicy:     "final",
		PromptDriftLimit:  0.10,
		Clients:           1,
	}
}

func (r *Run) validate(p string, imported bool, errs *Errors) {
	if r.Arrivals != nil {
		r.Arrivals.validate(p+".arrivals", imported, errs)
	}
	if r.Target != "" {
		// without the check "localhost:8000" is accepted and every request
		// fails with "unsupported protocol scheme", which reads as an
		// overloaded server
		if u, err := url.Parse(r.Target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf(p+".target", "want an http:// or https:// base URL such as http://localhost:8000, got %q", r.Target)
		}
	}
	if r.Clients < 1 {
		errs.Addf(p+".clients", "must be at least 1, got %d", r.Clients)
	}
	if r.Users < 1 && r.Arrivals == nil {
		errs.Addf(p+".users", "must be at least 1, got %d", r.Users)
	}
	if r.Duration <= 0 {
		errs.Addf(p+".duration", "must be positive")
	}
	if r.Warmup < 0 {
		errs.Addf(p+".warmup", "must not be negative")
	}
	if r.Ramp < 0 {
		errs.Addf(p+".ramp", "must not be negative")
	}
	if r.ThinkTimeScale < 0 {
		errs.Addf(p+".think_time_scale", "must not be negative, got %v", r.ThinkTimeScale)
	}
	if r.Endpoint != "chat" && r.Endpoint != "completions" {
		errs.Addf(p+".endpoint", "must be chat or completions, got %q", r.Endpoint)
	}
	if r.RequestTimeout <= 0 {
		errs.Addf(p+".request_timeout", "must be positive")
	}
	if r.FirstByteTimeout <= 0 || r.FirstByteTimeout > r.RequestTimeout {
		errs.Addf(p+".first_byte_timeout", "must be positive and at most request_timeout (%s)", r.RequestTimeout)
	}
	if r.ClientBoundLagP99 <= 0 {
		errs.Addf(p+".client_bound_lag_p99", "must be positive")
	}
	if r.HistoryPolicy != "final" && r.HistoryPolicy != "keep" {
		errs.Addf(p+".history_policy", "must be final or keep, got %q", r.HistoryPolicy)
	}
	if !(r.PromptDriftLimit > 0) {
		errs.Addf(p+".prompt_drift_limit", "must be positive, got %v", r.PromptDriftLimit)
	}
}

// apiKey reads the key from the environment variable env; no variable
// named, no key.
func apiKey(env string) string {
	if env == "" {
		return ""
	}
	return os.Getenv(env)
}

// UseRunTarget makes the engine the server at run.target: spoc run measures
// a server spoc does not start, an evaluation on an external engine like
// any other engine's. Without run.target, a configured external engine's
// URL is the target; otherwise it fails.
func (c *Config) UseRunTarget() error {
	if c.Run.Target == "" && c.Engine.Kind == EngineExternal && c.Engine.External.URL != "" {
		c.Run.Target = c.Engine.External.URL
	}
	if c.Run.Target == "" {
		return &Errors{List: []*FieldError{{Path: "run.target", Msg: "spoc run needs the server's base URL: --target URL, run.target, or engine.kind: external with engine.external.url in the configuration"}}}
	}
	c.Engine.Kind = EngineExternal
	c.Engine.External.URL = c.Run.Target
	return nil
}

// Warning says what in the run section makes a run measure less than it
// seems to, or "" when nothing does.
func (r Run) Warning() string {
	if r.Ramp > r.Warmup && r.Arrivals == nil {
		return fmt.Sprintf("ramp (%s) is longer than warm-up (%s); the measured window starts before every user is running", r.Ramp, r.Warmup)
	}
	return ""
}

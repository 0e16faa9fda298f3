package capacity

import (
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/tune"
	"github.com/spoc-project/spoc/vllm"
	"github.com/spoc-project/spoc/workload"
)

// Setup is one resolved configuration: everything the use cases of this
// package (run, sweep, tune) and of package plan need, built once from the
// configuration file and the command line by config (Config.Setup) and
// passed by value. No use case changes it: a phase that decides something
// (the tuning load found by the baseline sweep) passes its decision on as an
// argument or in its own copy.
type Setup struct {
	// Deployment is what is served, on which GPUs, with which flags.
	Deployment Deployment
	// Launcher starts the servers every evaluation runs on: the engine the
	// configuration names, never a substitute (a simulated plan's is the
	// simulator, because the configuration asks for it).
	Launcher engine.Launcher
	// Virtual is set when evaluations run in the simulator's virtual time
	// (sim.RunVirtual) instead of on a server over HTTP: the Launcher is
	// then the simulator (an engine.Virtual). A simulator launcher
	// without it serves its deployment over HTTP like any engine.
	Virtual bool
	// Workload generates the sessions; MidSessionStart starts each user
	// inside a session, as on a service that has been running for a while.
	Workload        workload.Spec
	MidSessionStart bool
	// SLA judges every run.
	SLA result.SLA
	// Client is how the load client talks to a live server.
	Client Client
	// Windows are the loads of one run, a tuning trial and a sweep level
	// (their Users is the count the configuration gives; sweeps and trials
	// replace it).
	Windows Windows
	// Sweep is how a sweep walks user counts and how plan picks candidates.
	Sweep SweepPolicy
	// Search is the study over the engine flags.
	Search tune.Spec
	// Telemetry is what is scraped or queried during live runs.
	Telemetry Telemetry
}

// Deployment is the served model and its hardware.
type Deployment struct {
	// Kind is the engine kind: sim, process, external or kubernetes.
	Kind string
	// Flavor is the server's dialect (engine.flavor): vllm, sglang or
	// generic; empty means vllm.
	Flavor string
	// Model is the model (catalog name or path); ServedModelName the name
	// requests use when it differs.
	Model           string
	ServedModelName string
	GPU             string
	GPUs            int
	// TensorParallelSize GPUs form one replica; GPUs/TensorParallelSize
	// replicas serve in parallel.
	TensorParallelSize int
	WeightFormat       string
	MaxModelLen        int
	// Params are the configured engine flags (engine.params): what every
	// candidate configuration is applied over.
	Params map[string]any
	// Sim is the deployment as the cost model prices it, resolved once
	// (model, GPU, flags, calibration and correction files): the
	// simulator's input for sim engines, and the roofline's for any
	// engine. SimErr, when set, is why a real engine's deployment has no
	// simulated counterpart (flags the simulator does not model); Sim is
	// then zero.
	Sim    sim.Deployment
	SimErr error
	// SimErrorRate injects server errors into simulated runs.
	SimErrorRate float64
}

// RequestModel is the model name requests carry: the served name, else the
// model.
func (d Deployment) RequestModel() string { return vllm.ServedName(d.Model, d.ServedModelName) }

// Replicas is the number of data-parallel replicas (at least 1).
func (d Deployment) Replicas() int { return max(d.GPUs/max(d.TensorParallelSize, 1), 1) }

// Client configures the load client of live runs.
type Client struct {
	// Endpoint is "chat" or "completions".
	Endpoint string
	// APIKey is sent as a bearer token (resolved from run.api_key_env;
	// empty, the default, sends none). It goes only over https or to a
	// loopback server unless APIKeyPlainHTTP is set
	// (loadgen.CheckKeyTransport), and never into a log or a file.
	APIKey          string
	APIKeyPlainHTTP bool
	// RequestTimeout bounds a whole request; FirstByteTimeout the wait for
	// the first byte of the answer.
	RequestTimeout   time.Duration
	FirstByteTimeout time.Duration
	// ExactOutputLength asks the server for exactly max_tokens tokens.
	ExactOutputLength bool
	// ClientBoundLagP99 is the dispatch lag above which a run is marked
	// client-bound.
	ClientBoundLagP99 time.Duration
	// HistoryPolicy is loadgen.HistoryFinal or loadgen.HistoryKeep: what a
	// reasoning model's reply leaves in the next turn's history.
	HistoryPolicy string
	// PromptDriftLimit flags a profile whose server-reported prompts differ
	// from the plan's targets by more than this fraction on average.
	PromptDriftLimit float64
	// SessionHeader and SessionKey: every request carries the header with
	// its session's key (fleet.session_header, fleet.session_key).
	SessionHeader string
	SessionKey    string
	// Clients splits every live run over this many client processes
	// (run.clients; 0 or 1: one). loadgen.Splitter owns the shards.
	Clients int
	// Pods, when set (run.kubernetes), runs the client shards (Clients of
	// them, one included) as the pods of one Kubernetes Job.
	Pods loadgen.PodLauncher
}

// Windows are the loads of the three kinds of evaluation.
type Windows struct {
	// Run is one run (spoc run, spoc sim run); its Users is run.users.
	Run Load
	// Tune is one trial of the study; its Users is search.users (0: found
	// by the baseline sweep).
	Tune Load
	// Sweep is one sweep level.
	Sweep Load
}

// At returns l with users users.
func (l Load) At(users int) Load {
	l.Users = users
	return l
}

// SweepPolicy is how a sweep walks user counts and how plan chooses among
// candidate configurations.
type SweepPolicy struct {
	SweepOptions
	// TopK feasible front members get a short sweep in plan's choose phase.
	TopK int
	// Choose is the rule that picks one: "highest-ceiling" or "max-throughput".
	Choose string
}

// Telemetry is what live runs collect.
type Telemetry struct {
	Enabled bool
	// Interval spaces scrapes (or the query step).
	Interval time.Duration
	// Targets are extra Prometheus endpoints (GPU exporters) beside the
	// server's own.
	Targets []telemetry.Target
	// Prometheus, when set, is queried for the run's window instead of
	// scraping the targets directly; Queries override catalog queries.
	Prometheus string
	Queries    telemetry.Queries
	// StragglerClockDrop is the SM clock fraction below the group's median
	// that marks a straggling GPU.
	StragglerClockDrop float64
	// ServerMetrics are the server's own metric names by telemetry role,
	// for a server whose names the catalog does not know (flavor
	// generic, engine.Flavor.ServerMetrics): its metrics endpoints are
	// read by them. Nil: by the catalog's names.
	ServerMetrics map[string]string
	// NoServerMetrics, when set, says why the server's own metrics are
	// not read at all (engine.NoGenericMetrics); the GPU exporters
	// (Targets) still are, and every live evaluation carries the reason.
	NoServerMetrics string
}

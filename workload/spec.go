package workload

import (
	"math"
	"time"
)

// Prefix geometries.
const (
	GeometryPartialCommonGround = "partial-common-ground"
	GeometrySharedSystem        = "shared-system"
	GeometryNone                = "none"
)

// Geometries lists every prefix geometry.
var Geometries = []string{GeometryPartialCommonGround, GeometrySharedSystem, GeometryNone}

// ImportFormats lists the trace formats workload.import accepts.
var ImportFormats = []string{FormatVLLM, FormatAIPerf, FormatMooncake, FormatBailian}

// Spec is the stateful multi-turn workload as configured: the workload
// section of a plan file, which package config decodes and validates.
type Spec struct {
	Seed              uint64    `yaml:"seed" doc:"Seed of every random choice; same config and seed give byte-identical session scripts."`
	Tokenizer         string    `yaml:"tokenizer" doc:"Tokenizer used to cut content to exact token lengths: o200k_base (gpt-oss), cl100k_base, or a path to a tokenizer.json."`
	Corpus            string    `yaml:"corpus,omitempty" doc:"Corpus file from spoc corpus build; empty uses the built-in corpus shipped in the binary."`
	ExactOutputLength bool      `yaml:"exact_output_length" doc:"Ask the server for exactly max_tokens output tokens (ignore_eos and min_tokens), so live runs follow the script's output lengths."`
	ReasoningShare    float64   `yaml:"reasoning_share" doc:"Share of every reply a reasoning model streams as reasoning, which the next turn's prompt does not carry under run.history_policy final (gpt-oss drops it): 0 for other models. A live run's summary measures it (drift.reasoning_share)."`
	Geometry          Geometry  `yaml:"geometry" doc:"How prompts share prefixes, which decides prefix-cache hits."`
	Profiles          []Profile `yaml:"profiles" doc:"User profiles; weights are shares of users and must sum to 1."`
	Import            *Import   `yaml:"import,omitempty" doc:"Replay sessions from a trace file instead of generating them from profiles."`
}

// Geometry is the prefix-sharing structure of prompts. In
// partial-common-ground a session's starting context is, in order: the
// system prompt, a prefix of the shared monorepo root, a prefix of its team's
// subtree, then user-private files; two users share the shorter of their root
// prefixes, and team members also share the shorter of their team prefixes.
type Geometry struct {
	Kind         string  `yaml:"kind" doc:"partial-common-ground (monorepo root shared by all, team subtrees, private files), shared-system (one common system prompt), none (nothing shared)."`
	SystemTokens int     `yaml:"system_tokens" doc:"Length of the common system prompt." assumption:"not published; a typical coding-assistant system prompt with tool definitions"`
	RootTokens   int     `yaml:"root_tokens" doc:"Size of the shared monorepo root document (the most any session takes from it)." assumption:"not published; chosen so that a whole-codebase session (P2) is mostly shared root"`
	RootFraction float64 `yaml:"root_fraction" doc:"Share of a session's starting context (after the system prompt) taken from the root, capped at root_tokens." assumption:"not published"`
	Teams        int     `yaml:"teams" doc:"Number of teams, each with its own subtree of the monorepo." assumption:"not published"`
	TeamZipfS    float64 `yaml:"team_zipf_s" doc:"Zipf exponent of team sizes: users are assigned to team t with weight 1/(t+1)^s; 0 gives equal teams." assumption:"not published"`
	TeamTokens   int     `yaml:"team_tokens" doc:"Size of each team's subtree document." assumption:"not published"`
	TeamFraction float64 `yaml:"team_fraction" doc:"Share of a session's starting context taken from its team subtree, capped at team_tokens; the rest is user-private." assumption:"not published"`
}

// Profile is one kind of user.
type Profile struct {
	Name         string   `yaml:"name" doc:"Profile name (P0, P1, ...)."`
	Weight       float64  `yaml:"weight" doc:"Share of users with this profile."`
	ContextStart DistSpec `yaml:"context_start" doc:"Prompt tokens at the first turn of a session."`
	MaxContext   int      `yaml:"max_context" doc:"Context at which the session ends and a new one starts; 0 means the model's context limit minus the output budget."`
	Growth       DistSpec `yaml:"growth" doc:"New user tokens per turn (pasted files, tool output, questions)." assumption:"not published; lognormal fitted by eye to coding-agent tool outputs"`
	OutputTokens DistSpec `yaml:"output_tokens" doc:"Output budget per turn (max_tokens)." assumption:"output budgets were not published"`
	ThinkTime    DistSpec `yaml:"think_time_s" doc:"Seconds a user waits after a reply before the next turn." assumption:"think times were not published"`
	AtMax        string   `yaml:"at_max" doc:"What happens when the next turn would exceed max_context: new-session (start a fresh session with the same profile)."`
}

// Import replays an existing trace.
type Import struct {
	Format string `yaml:"format" doc:"vllm-multiturn, aiperf, mooncake or bailian."`
	Path   string `yaml:"path" doc:"File to read."`
}

// DefaultSpec is the reference coding-assistant mix: P0 70 % starting at
// ~5,000 tokens growing to 50,000; P1 20 % from ~15,000 to 120,000; P2 10 %
// whole-codebase sessions from ~75,000 to the context limit.
func DefaultSpec() Spec {
	return Spec{
		Seed:              1,
		Tokenizer:         "o200k_base",
		ExactOutputLength: true,
		Geometry: Geometry{
			Kind:         GeometryPartialCommonGround,
			SystemTokens: 1500,
			RootTokens:   60000,
			RootFraction: 0.5,
			Teams:        8,
			TeamZipfS:    1.0,
			TeamTokens:   24000,
			TeamFraction: 0.3,
		},
		Profiles: []Profile{
			{
				Name: "P0", Weight: 0.70,
				ContextStart: Lognormal(5000, 0.25).Clip(2500, 12000),
				MaxContext:   50000,
				Growth:       Lognormal(1200, 0.8).Clip(50, 16000),
				OutputTokens: Lognormal(400, 0.6).Clip(16, 4096),
				ThinkTime:    Lognormal(20, 0.7).Clip(2, 300),
				AtMax:        "new-session",
			},
			{
				Name: "P1", Weight: 0.20,
				ContextStart: Lognormal(15000, 0.25).Clip(7000, 30000),
				MaxContext:   120000,
				Growth:       Lognormal(2500, 0.8).Clip(100, 24000),
				OutputTokens: Lognormal(600, 0.6).Clip(16, 4096),
				ThinkTime:    Lognormal(30, 0.7).Clip(3, 300),
				AtMax:        "new-session",
			},
			{
				Name: "P2", Weight: 0.10,
				ContextStart: Lognormal(75000, 0.15).Clip(50000, 100000),
				MaxContext:   0,
				Growth:       Lognormal(3000, 0.8).Clip(100, 24000),
				OutputTokens: Lognormal(800, 0.6).Clip(16, 4096),
				ThinkTime:    Lognormal(45, 0.7).Clip(5, 600),
				AtMax:        "new-session",
			},
		},
	}
}

// EffectiveMaxContext is p's session limit under a model context limit:
// max_context, or the context limit minus the output budget's upper bound.
func (p *Profile) EffectiveMaxContext(modelMaxLen int) int {
	budget := p.OutputTokens.UpperBound()
	if math.IsInf(budget, 1) {
		budget = 4096
	}
	limit := modelMaxLen - int(budget)
	if p.MaxContext > 0 && p.MaxContext < limit {
		return p.MaxContext
	}
	return limit
}

// TypicalThinkTime is the profiles' typical think times weighted by their
// shares (DistSpec.Typical): the scale of the random phase at which each
// user starts (ScheduleOptions.Phase). 0 for an imported trace, whose
// start times are recorded.
func (s Spec) TypicalThinkTime() time.Duration {
	if s.Import != nil {
		return 0
	}
	var sum, w float64
	for i := range s.Profiles {
		p := &s.Profiles[i]
		sum += p.Weight * p.ThinkTime.Typical()
		w += p.Weight
	}
	if w <= 0 {
		return 0
	}
	return time.Duration(sum / w * float64(time.Second))
}

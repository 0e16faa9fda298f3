package config

import (
	"fmt"
	"math"
	"strings"
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
var ImportFormats = []string{"vllm-multiturn", "aiperf", "mooncake", "bailian"}

// Workload is the stateful multi-turn workload.
type Workload struct {
	Seed              uint64    `yaml:"seed" doc:"Seed of every random choice; same config and seed give byte-identical session scripts."`
	Tokenizer         string    `yaml:"tokenizer" doc:"Tokenizer used to cut content to exact token lengths: o200k_base (gpt-oss), cl100k_base, or a path to a tokenizer.json."`
	Corpus            string    `yaml:"corpus,omitempty" doc:"Corpus file from spoc corpus build; empty uses the built-in corpus shipped in the binary."`
	ExactOutputLength bool      `yaml:"exact_output_length" doc:"Ask the server for exactly max_tokens output tokens (ignore_eos and min_tokens), so live runs follow the script's output lengths."`
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
	Name         string  `yaml:"name" doc:"Profile name (P0, P1, ...)."`
	Weight       float64 `yaml:"weight" doc:"Share of users with this profile."`
	ContextStart Dist    `yaml:"context_start" doc:"Prompt tokens at the first turn of a session."`
	MaxContext   int     `yaml:"max_context" doc:"Context at which the session ends and a new one starts; 0 means the model's context limit minus the output budget."`
	Growth       Dist    `yaml:"growth" doc:"New user tokens per turn (pasted files, tool output, questions)." assumption:"not published; lognormal fitted by eye to coding-agent tool outputs"`
	OutputTokens Dist    `yaml:"output_tokens" doc:"Output budget per turn (max_tokens)." assumption:"output budgets were not published"`
	ThinkTime    Dist    `yaml:"think_time_s" doc:"Seconds a user waits after a reply before the next turn." assumption:"think times were not published"`
	AtMax        string  `yaml:"at_max" doc:"What happens when the next turn would exceed max_context: new-session (start a fresh session with the same profile)."`
}

// Import replays an existing trace.
type Import struct {
	Format string `yaml:"format" doc:"vllm-multiturn, aiperf, mooncake or bailian."`
	Path   string `yaml:"path" doc:"File to read."`
}

// DefaultWorkload is the reference coding-assistant mix: P0 70 % starting at
// ~5,000 tokens growing to 50,000; P1 20 % from ~15,000 to 120,000; P2 10 %
// whole-codebase sessions from ~75,000 to the context limit.
func DefaultWorkload() Workload {
	return Workload{
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

func (w *Workload) validate(p string, errs *Errors, modelMaxLen int) {
	if w.Tokenizer == "" {
		errs.Addf(p+".tokenizer", "must be set (o200k_base, cl100k_base or a tokenizer.json path)")
	}
	g := &w.Geometry
	gp := p + ".geometry"
	if !oneOf(g.Kind, Geometries) {
		errs.Addf(gp+".kind", "unknown prefix geometry %q (one of %s)", g.Kind, quoteList(Geometries))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"system_tokens", g.SystemTokens}, {"root_tokens", g.RootTokens}, {"team_tokens", g.TeamTokens}} {
		if f.v < 0 {
			errs.Addf(gp+"."+f.name, "must not be negative, got %d", f.v)
		}
	}
	if g.Kind == GeometryPartialCommonGround && g.Teams < 1 {
		errs.Addf(gp+".teams", "must be at least 1, got %d", g.Teams)
	}
	if g.TeamZipfS < 0 {
		errs.Addf(gp+".team_zipf_s", "must not be negative, got %v", g.TeamZipfS)
	}
	if g.RootFraction < 0 || g.TeamFraction < 0 || g.RootFraction+g.TeamFraction > 1 {
		errs.Addf(gp+".root_fraction", "root_fraction (%v) and team_fraction (%v) must be non-negative and sum to at most 1", g.RootFraction, g.TeamFraction)
	}
	if w.Import != nil {
		if !oneOf(w.Import.Format, ImportFormats) {
			errs.Addf(p+".import.format", "unknown import format %q (one of %s)", w.Import.Format, quoteList(ImportFormats))
		}
		if w.Import.Path == "" {
			errs.Addf(p+".import.path", "must name a file")
		}
		return
	}
	if len(w.Profiles) == 0 {
		errs.Addf(p+".profiles", "at least one profile is needed")
		return
	}
	sum := 0.0
	seen := map[string]bool{}
	for i := range w.Profiles {
		pr := &w.Profiles[i]
		pp := fmt.Sprintf("%s.profiles[%d]", p, i)
		if strings.TrimSpace(pr.Name) == "" {
			errs.Addf(pp+".name", "must be set")
		} else if seen[pr.Name] {
			errs.Addf(pp+".name", "duplicate profile name %q", pr.Name)
		}
		seen[pr.Name] = true
		if pr.Weight < 0 || math.IsNaN(pr.Weight) {
			errs.Addf(pp+".weight", "must not be negative, got %v", pr.Weight)
		}
		sum += pr.Weight
		pr.ContextStart.validate(pp+".context_start", errs)
		pr.Growth.validate(pp+".growth", errs)
		pr.OutputTokens.validate(pp+".output_tokens", errs)
		pr.ThinkTime.validate(pp+".think_time_s", errs)
		if pr.MaxContext < 0 {
			errs.Addf(pp+".max_context", "must not be negative, got %d", pr.MaxContext)
		} else if modelMaxLen > 0 && pr.MaxContext > modelMaxLen {
			errs.Addf(pp+".max_context", "must not exceed engine.max_model_len (%d), got %d", modelMaxLen, pr.MaxContext)
		}
		if ob := pr.OutputTokens.UpperBound(); modelMaxLen > 0 && ob >= float64(modelMaxLen) {
			errs.Addf(pp+".output_tokens", "upper bound %v must be below engine.max_model_len (%d)", ob, modelMaxLen)
		}
		if max := pr.EffectiveMaxContext(modelMaxLen); modelMaxLen > 0 && pr.ContextStart.Typical() >= float64(max) {
			errs.Addf(pp+".context_start", "typical start context %v is not below the profile's maximum context %d", pr.ContextStart.Typical(), max)
		}
		if pr.AtMax != "new-session" {
			errs.Addf(pp+".at_max", "unknown action %q (one of \"new-session\")", pr.AtMax)
		}
	}
	if math.Abs(sum-1) > 1e-6 {
		errs.Addf(p+".profiles", "profile weights must sum to 1, got %.6g", sum)
	}
}

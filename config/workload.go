package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/spoc-project/spoc/workload"
)

// Prefix geometries.
const (
	GeometryPartialCommonGround = workload.GeometryPartialCommonGround
	GeometrySharedSystem        = workload.GeometrySharedSystem
	GeometryNone                = workload.GeometryNone
)

// Geometries lists every prefix geometry.
var Geometries = workload.Geometries

// ImportFormats lists the trace formats workload.import accepts.
var ImportFormats = workload.ImportFormats

// Workload is the workload section: stateful multi-turn sessions. The type is
// owned by package workload; config decodes and validates it.
type Workload = workload.Spec

// Geometry is the prefix-sharing structure of prompts (workload.geometry).
type Geometry = workload.Geometry

// Profile is one kind of user (workload.profiles[]).
type Profile = workload.Profile

// Import replays an existing trace (workload.import).
type Import = workload.Import

// DefaultWorkload is the reference coding-assistant mix (workload.DefaultSpec).
func DefaultWorkload() Workload { return workload.DefaultSpec() }

// validateWorkload reports problems with w; p names the section and
// modelMaxLen is engine.max_model_len, which bounds every profile.
func validateWorkload(w *Workload, p string, errs *Errors, modelMaxLen int) {
	if !(w.ReasoningShare >= 0 && w.ReasoningShare < 1) {
		errs.Addf(p+".reasoning_share", "must be in [0, 1), got %v", w.ReasoningShare)
	}
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
		validateDist(&pr.ContextStart, pp+".context_start", errs)
		validateDist(&pr.Growth, pp+".growth", errs)
		validateDist(&pr.OutputTokens, pp+".output_tokens", errs)
		validateDist(&pr.ThinkTime, pp+".think_time_s", errs)
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

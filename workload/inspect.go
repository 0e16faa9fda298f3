package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// InspectOptions says which sessions Inspect looks at.
type InspectOptions struct {
	// Sessions is how many sessions to generate: the first session of users
	// 0..Sessions-1, so profile shares of sessions are shares of users.
	Sessions int
	// Seed orders the sessions' arrivals for attributing prefix-cache misses.
	Seed uint64
}

// Inspection summarises a workload: per-profile shapes and prefix sharing.
type Inspection struct {
	Sessions int              `json:"sessions"`
	Requests int              `json:"requests"`
	Profiles []ProfileSummary `json:"profiles"`
	Prefix   PrefixSummary    `json:"prefix"`
}

// ProfileSummary describes the sessions of one profile. Context values are
// prompt tokens.
type ProfileSummary struct {
	Name            string  `json:"name"`
	Share           float64 `json:"share"` // of sessions
	Sessions        int     `json:"sessions"`
	Requests        int     `json:"requests"`
	ContextStartP50 int     `json:"context_start_p50"`
	ContextStartP95 int     `json:"context_start_p95"`
	ContextEndP50   int     `json:"context_end_p50"`
	ContextMax      int     `json:"context_max"`
	TurnsP50        int     `json:"turns_p50"`
	OutputBudgetP50 int     `json:"output_budget_p50"`
	ThinkTimeP50S   float64 `json:"think_time_p50_s"`
	PromptTokens    int64   `json:"prompt_tokens"`
	IdealHitRate    float64 `json:"ideal_hit_rate"`
}

// PrefixSummary is the prefix-sharing picture. Split is the share of all
// prompt tokens by segment kind (system, root, team, user, turn, assistant);
// StartSplit the same over session-start contexts only.
type PrefixSummary struct {
	// IdealHitRate is the fraction of prompt tokens an infinite prefix cache
	// would serve: tokens whose whole prefix an earlier request already
	// carried in its prompt or produced as its reply.
	IdealHitRate float64 `json:"ideal_hit_rate"`
	// FirstTurnHitRate is the same over first turns only: sharing between
	// sessions (the prefix geometry), without a session's own history.
	FirstTurnHitRate float64            `json:"first_turn_hit_rate"`
	PromptTokens     int64              `json:"prompt_tokens"`
	HitTokens        int64              `json:"hit_tokens"`
	Split            map[string]float64 `json:"split"`
	StartSplit       map[string]float64 `json:"start_split"`
}

// profileLister is implemented by sources that know their profiles' order.
type profileLister interface{ Profiles() []string }

type inspectRequest struct {
	at      time.Duration
	script  *Script
	turn    int
	profile int
}

// Inspect generates opts.Sessions sessions from src and summarises them. The
// ideal prefix-cache hit rate is computed over the sessions' requests in a
// plausible arrival order: session starts spread uniformly over one mean
// session duration (a steady state), each turn following the previous one by
// its think time (service time ignored).
func Inspect(ctx context.Context, src Source, opts InspectOptions) (*Inspection, error) {
	if opts.Sessions <= 0 {
		return nil, fmt.Errorf("inspect workload: sessions must be positive, got %d", opts.Sessions)
	}
	var names []string
	if pl, ok := src.(profileLister); ok {
		names = pl.Profiles()
	}
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	scripts := make([]*Script, 0, opts.Sessions)
	var total time.Duration
	for u := 0; u < opts.Sessions; u++ {
		if u%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s, err := src.Session(u, 0)
		if err != nil {
			return nil, fmt.Errorf("inspect workload: %w", err)
		}
		if _, ok := index[s.Profile]; !ok {
			index[s.Profile] = len(names)
			names = append(names, s.Profile)
		}
		scripts = append(scripts, s)
		for _, t := range s.Turns[:max(0, len(s.Turns)-1)] {
			total += t.ThinkTime
		}
	}
	window := total / time.Duration(len(scripts))
	r := rand.New(rand.NewPCG(opts.Seed, hashKey(opts.Seed, tagArrival)))
	var reqs []inspectRequest
	for _, s := range scripts {
		at := s.Start
		if window > 0 && s.Start == 0 {
			at = time.Duration(r.Int64N(int64(window)))
		}
		for k, t := range s.Turns {
			reqs = append(reqs, inspectRequest{at: at, script: s, turn: k, profile: index[s.Profile]})
			at += t.ThinkTime
		}
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].at < reqs[j].at })

	type acc struct {
		sessions, requests           int
		starts, ends, turns, outputs []int
		think                        []float64
		prompt, hit                  int64
	}
	accs := make([]acc, len(names))
	for _, s := range scripts {
		a := &accs[index[s.Profile]]
		a.sessions++
		if len(s.Turns) == 0 {
			continue
		}
		a.starts = append(a.starts, s.Turns[0].PromptTokens)
		a.ends = append(a.ends, s.Turns[len(s.Turns)-1].PromptTokens)
		a.turns = append(a.turns, len(s.Turns))
		for _, t := range s.Turns {
			a.outputs = append(a.outputs, t.MaxTokens)
			a.think = append(a.think, t.ThinkTime.Seconds())
		}
	}
	split := map[string]int64{}
	startSplit := map[string]int64{}
	for _, s := range scripts {
		for _, seg := range s.Prompt(nil, 0) {
			startSplit[string(seg.Kind)] += int64(seg.Tokens)
		}
	}
	var cache IdealPrefixCache
	var segs []Segment
	var firstHit, firstPrompt int64
	out := &Inspection{Sessions: len(scripts), Requests: len(reqs)}
	for _, q := range reqs {
		segs = q.script.Prompt(segs[:0], q.turn)
		t := &q.script.Turns[q.turn]
		a := &accs[q.profile]
		a.requests++
		a.prompt += int64(t.PromptTokens)
		h := int64(cache.Lookup(segs))
		a.hit += h
		if q.turn == 0 {
			firstHit += h
			firstPrompt += int64(t.PromptTokens)
		}
		if t.Reply.Tokens > 0 {
			cache.Insert(append(segs, t.Reply))
		}
		for _, seg := range segs {
			split[string(seg.Kind)] += int64(seg.Tokens)
		}
		out.Prefix.PromptTokens += int64(t.PromptTokens)
	}
	for i, name := range names {
		a := &accs[i]
		out.Profiles = append(out.Profiles, ProfileSummary{
			Name:            name,
			Share:           float64(a.sessions) / float64(len(scripts)),
			Sessions:        a.sessions,
			Requests:        a.requests,
			ContextStartP50: quantile(a.starts, 0.5),
			ContextStartP95: quantile(a.starts, 0.95),
			ContextEndP50:   quantile(a.ends, 0.5),
			ContextMax:      slices.Max(append(a.ends, 0)),
			TurnsP50:        quantile(a.turns, 0.5),
			OutputBudgetP50: quantile(a.outputs, 0.5),
			ThinkTimeP50S:   math.Round(quantileF(a.think, 0.5)*100) / 100,
			PromptTokens:    a.prompt,
			IdealHitRate:    ratio(a.hit, a.prompt),
		})
		out.Prefix.HitTokens += a.hit
	}
	out.Prefix.IdealHitRate = ratio(out.Prefix.HitTokens, out.Prefix.PromptTokens)
	out.Prefix.FirstTurnHitRate = ratio(firstHit, firstPrompt)
	out.Prefix.Split = shares(split)
	out.Prefix.StartSplit = shares(startSplit)
	return out, nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(float64(a)/float64(b)*1e4) / 1e4
}

func shares(m map[string]int64) map[string]float64 {
	var total int64
	for _, v := range m {
		total += v
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = ratio(v, total)
	}
	return out
}

// quantile is the nearest-rank q-quantile of xs (0 when empty); xs is sorted
// in place.
func quantile(xs []int, q float64) int {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[rank(len(xs), q)]
}

func quantileF(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[rank(len(xs), q)]
}

func rank(n int, q float64) int {
	return min(n-1, max(0, int(math.Ceil(q*float64(n)))-1))
}

package workload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

// Irrational steps of the additive (Weyl) sequences that assign users to
// profiles and teams: user u gets the fractional part of offset + u*step.
// Any run of consecutive users then has profile shares within a few users of
// the configured weights, and the two sequences are jointly equidistributed.
const (
	profileStep = 0.6180339887498949 // golden ratio conjugate
	teamStep    = 0.4142135623730951 // sqrt(2) - 1
)

// Generator produces session scripts from the profiles and prefix geometry of
// a workload configuration. It implements Source and Renderer and is safe for
// concurrent use.
type Generator struct {
	cfg         Spec
	maxModelLen int
	profiles    []profile
	profileCum  []float64 // cumulative profile weights, normalised to 1
	teamCum     []float64 // cumulative Zipf team weights, normalised to 1
	profileOff  float64
	teamOff     float64

	textOnce sync.Once
	text     *Text
	textErr  error
	tok      *tokenizer.Tokenizer
	corpus   *corpus.Corpus
}

// profile is a Profile with its samplers.
type profile struct {
	name                         string
	maxContext                   int // effective maximum prompt tokens
	start, growth, output, think *Dist
}

var (
	_ Source   = (*Generator)(nil)
	_ Renderer = (*Generator)(nil)
)

// Option configures a Generator.
type Option func(*Generator)

// WithText makes the generator render from an already prepared Text, so
// several generators share the cost of chunking and counting a corpus. Its
// tokenizer replaces the configured one.
func WithText(t *Text) Option { return func(g *Generator) { g.text = t } }

// WithCorpus makes the generator render from c instead of the configured
// corpus file or the built-in corpus.
func WithCorpus(c *corpus.Corpus) Option { return func(g *Generator) { g.corpus = c } }

// New prepares a generator for cfg. maxModelLen is the served model's context
// limit (engine.max_model_len); with a profile's output budget it bounds how
// far sessions grow. Text is prepared on the first Render, so a caller that
// only needs scripts (the simulator) never pays for it.
func New(cfg Spec, maxModelLen int, opts ...Option) (*Generator, error) {
	g := &Generator{cfg: cfg, maxModelLen: maxModelLen}
	for _, o := range opts {
		o(g)
	}
	if len(cfg.Profiles) == 0 {
		return nil, errors.New("workload: no profiles")
	}
	total := 0.0
	for i := range cfg.Profiles {
		p := &cfg.Profiles[i]
		pr := profile{name: p.Name}
		var err error
		for _, f := range []struct {
			field string
			spec  DistSpec
			dst   **Dist
		}{{"context_start", p.ContextStart, &pr.start}, {"growth", p.Growth, &pr.growth}, {"output_tokens", p.OutputTokens, &pr.output}, {"think_time_s", p.ThinkTime, &pr.think}} {
			if *f.dst, err = NewDist(f.spec); err != nil {
				return nil, fmt.Errorf("workload.profiles[%d] (%s).%s: %w", i, p.Name, f.field, err)
			}
		}
		switch {
		case maxModelLen > 0:
			pr.maxContext = p.EffectiveMaxContext(maxModelLen)
		case p.MaxContext > 0:
			pr.maxContext = p.MaxContext
		default:
			return nil, fmt.Errorf("workload.profiles[%d] (%s): max_context 0 needs the model's context limit", i, p.Name)
		}
		if pr.maxContext < 2 {
			return nil, fmt.Errorf("workload.profiles[%d] (%s): effective maximum context %d leaves no room for a prompt", i, p.Name, pr.maxContext)
		}
		if p.Weight < 0 || math.IsNaN(p.Weight) {
			return nil, fmt.Errorf("workload.profiles[%d] (%s): negative weight %v", i, p.Name, p.Weight)
		}
		total += p.Weight
		g.profiles = append(g.profiles, pr)
		g.profileCum = append(g.profileCum, total)
	}
	if !(total > 0) {
		return nil, errors.New("workload: profile weights sum to 0")
	}
	for i := range g.profileCum {
		g.profileCum[i] /= total
	}
	geo := cfg.Geometry
	switch geo.Kind {
	case GeometryPartialCommonGround, GeometrySharedSystem, GeometryNone:
	default:
		return nil, fmt.Errorf("workload.geometry.kind: unknown prefix geometry %q", geo.Kind)
	}
	teams := max(geo.Teams, 1)
	sum := 0.0
	for t := 0; t < teams; t++ {
		sum += math.Pow(float64(t+1), -geo.TeamZipfS)
		g.teamCum = append(g.teamCum, sum)
	}
	for i := range g.teamCum {
		g.teamCum[i] /= sum
	}
	g.profileOff = unitFloat(hashKey(cfg.Seed, tagProfile))
	g.teamOff = unitFloat(hashKey(cfg.Seed, tagTeam))
	if g.text == nil && g.corpus == nil && cfg.Corpus != "" {
		// The corpus is read lazily, on the first Render; a missing file
		// would otherwise surface mid-run, after records were written.
		if _, err := os.Stat(cfg.Corpus); err != nil {
			return nil, fmt.Errorf("workload.corpus: %w", err)
		}
	}
	if g.text == nil {
		tok, err := tokenizer.New(cfg.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("workload.tokenizer: %w", err)
		}
		g.tok = tok
	}
	return g, nil
}

// Profiles returns the profile names in configuration order.
func (g *Generator) Profiles() []string {
	out := make([]string, len(g.profiles))
	for i, p := range g.profiles {
		out[i] = p.name
	}
	return out
}

// MaxContext returns the effective maximum prompt tokens of profile i.
func (g *Generator) MaxContext(i int) int { return g.profiles[i].maxContext }

// pickCum returns the index of the first cumulative weight above x.
func pickCum(cum []float64, x float64) int {
	for i, c := range cum {
		if x < c {
			return i
		}
	}
	return len(cum) - 1
}

// UserProfile returns the index of user's profile.
func (g *Generator) UserProfile(user int) int {
	_, f := math.Modf(g.profileOff + float64(user)*profileStep)
	return pickCum(g.profileCum, f)
}

// UserTeam returns user's team (0 for geometries without teams).
func (g *Generator) UserTeam(user int) int {
	if g.cfg.Geometry.Kind != GeometryPartialCommonGround {
		return 0
	}
	_, f := math.Modf(g.teamOff + float64(user)*teamStep)
	return pickCum(g.teamCum, f)
}

// Session returns user's n-th session. It computes lengths and keys only —
// no text — from a random stream determined by the seed, user and n, so
// sessions can be generated in any order and concurrently.
func (g *Generator) Session(user, n int) (*Script, error) {
	if user < 0 || n < 0 {
		return nil, fmt.Errorf("workload session (user %d, session %d): negative index", user, n)
	}
	pi := g.UserProfile(user)
	p := &g.profiles[pi]
	seed := g.cfg.Seed
	r := newRand(seed, tagSession, uint64(user), uint64(n))
	s := &Script{User: user, Session: n, Profile: p.name, Team: g.UserTeam(user)}

	start := p.start.sampleInt(r, 2, p.maxContext)
	first := p.growth.sampleInt(r, 1, max(1, start/4))
	s.Prefix = g.prefix(s.Prefix, user, n, s.Team, start-first)

	prompt := start
	content := first
	for k := 0; ; k++ {
		out := p.output.sampleInt(r, 1, math.MaxInt32)
		if g.maxModelLen > 0 {
			out = min(out, max(1, g.maxModelLen-prompt))
		}
		think := p.think.Sample(r)
		t := Turn{
			Index:        k,
			NewContent:   []Segment{{Kind: KindTurn, Owner: user, Turn: k, Key: hashKey(seed, tagTurn, uint64(user), uint64(n), uint64(k)), Tokens: content}},
			PromptTokens: prompt,
			MaxTokens:    out,
			ReplyTokens:  out,
			ThinkTime:    time.Duration(math.Max(0, think) * float64(time.Second)),
			Reply:        Segment{Kind: KindAssistant, Owner: user, Turn: k, Key: hashKey(seed, tagAssistant, uint64(user), uint64(n), uint64(k)), Tokens: out},
		}
		s.Turns = append(s.Turns, t)
		content = p.growth.sampleInt(r, 1, math.MaxInt32)
		// under the final-content history policy a reasoning model's
		// reasoning leaves the conversation with its turn
		kept := out - int(float64(out)*g.cfg.ReasoningShare)
		s.Turns[k].Reply.Tokens = kept
		next := prompt + kept + content
		if next > p.maxContext || next < prompt { // at_max: the session ends, the next one starts fresh
			break
		}
		prompt = next
	}
	return s, nil
}

// prefix appends the session-start context of tokens tokens, split per the
// prefix geometry.
func (g *Generator) prefix(dst []Segment, user, n, team, tokens int) []Segment {
	geo := &g.cfg.Geometry
	seed := g.cfg.Seed
	add := func(kind SegmentKind, owner int, key uint64, t int) {
		if t > 0 {
			dst = append(dst, Segment{Kind: kind, Owner: owner, Key: key, Tokens: t})
		}
	}
	switch geo.Kind {
	case GeometryNone:
		add(KindUser, user, hashKey(seed, tagUserDoc, uint64(user), uint64(n)), tokens)
		return dst
	}
	sys := min(geo.SystemTokens, tokens)
	add(KindSystem, 0, hashKey(seed, tagSystem), sys)
	rest := tokens - sys
	root, tm := 0, 0
	if geo.Kind == GeometryPartialCommonGround {
		root = min(geo.RootTokens, int(math.Round(geo.RootFraction*float64(rest))))
		tm = min(geo.TeamTokens, int(math.Round(geo.TeamFraction*float64(rest))))
		add(KindRoot, 0, hashKey(seed, tagRoot), root)
		add(KindTeam, team, hashKey(seed, tagTeamDoc, uint64(team)), tm)
	}
	add(KindUser, user, hashKey(seed, tagUserDoc, uint64(user)), rest-root-tm)
	return dst
}

// textFor returns the prepared text, building it on first use.
func (g *Generator) textFor() (*Text, error) {
	g.textOnce.Do(func() {
		if g.text != nil {
			return
		}
		c := g.corpus
		if c == nil && g.cfg.Corpus != "" {
			f, err := os.Open(g.cfg.Corpus)
			if err != nil {
				g.textErr = fmt.Errorf("workload.corpus: %w", err)
				return
			}
			defer f.Close()
			if c, err = corpus.Read(f, g.cfg.Corpus); err != nil {
				g.textErr = fmt.Errorf("workload.corpus: %w", err)
				return
			}
		}
		if c == nil {
			c = corpus.Builtin()
		}
		g.text, g.textErr = NewText(c, g.tok)
	})
	return g.text, g.textErr
}

// Render appends seg's text: exactly seg.Tokens tokens under the workload's
// tokenizer, cut from the corpus (see Text.Render).
func (g *Generator) Render(dst []byte, seg Segment) ([]byte, error) {
	t, err := g.textFor()
	if err != nil {
		return dst, err
	}
	return t.Render(dst, seg)
}

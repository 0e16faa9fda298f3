package corpus

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

//go:embed builtin/words.txt
var wordsFile string

// vocabulary is the word list the generator composes text from, split by the
// "# section" headers of builtin/words.txt.
type vocabulary struct {
	nouns, verbs, adjs, connectives []string
}

var loadVocabulary = sync.OnceValue(func() *vocabulary {
	v := &vocabulary{}
	var cur *[]string
	for _, line := range strings.Split(wordsFile, "\n") {
		switch strings.TrimSpace(line) {
		case "# nouns":
			cur = &v.nouns
		case "# verbs":
			cur = &v.verbs
		case "# adjectives":
			cur = &v.adjs
		case "# prose connectives":
			cur = &v.connectives
		default:
			if cur != nil {
				*cur = append(*cur, strings.Fields(line)...)
			}
		}
	}
	return v
})

// BuiltinSeed is the seed of the built-in corpus.
const BuiltinSeed = 20261130

// BuiltinDocs is the number of documents per kind in the built-in corpus
// (about 1.3 MB of text, 350,000 o200k tokens in all).
const BuiltinDocs = 160

// Builtin returns the built-in corpus: Generate(BuiltinSeed, BuiltinDocs).
// It is generated on first use and shared; callers must not modify it.
var Builtin = sync.OnceValue(func() *Corpus { return Generate(BuiltinSeed, BuiltinDocs) })

// Generate returns a synthetic corpus of docsPerKind documents of every kind,
// fully determined by seed: Go- and Python-like source files, prose
// (questions, design notes), tool output (test runs, logs, listings, stack
// traces), unified diffs and system prompts with tool definitions. The text
// is written by this generator from its own word list; it copies nothing.
func Generate(seed uint64, docsPerKind int) *Corpus {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), v: loadVocabulary()}
	c := &Corpus{}
	add := func(k Kind, text string, i int) {
		c.Docs = append(c.Docs, Doc{Kind: k, Text: text, Source: fmt.Sprintf("builtin:%s/%d", k, i), License: "Apache-2.0"})
	}
	for i := 0; i < docsPerKind; i++ {
		if i%3 == 2 {
			add(KindCode, g.pythonFile(), i)
		} else {
			add(KindCode, g.goFile(), i)
		}
		add(KindProse, g.prose(), i)
		add(KindTool, g.toolOutput(), i)
		add(KindDiff, g.diff(), i)
		if i < max(4, docsPerKind/16) {
			add(KindSystem, g.systemPrompt(), i)
		}
	}
	return c
}

// gen holds the generator's random state.
type gen struct {
	r *rand.Rand
	v *vocabulary
	b strings.Builder
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }
func (g *gen) noun() string           { return g.pick(g.v.nouns) }
func (g *gen) verb() string           { return g.pick(g.v.verbs) }
func (g *gen) adj() string            { return g.pick(g.v.adjs) }
func (g *gen) chance(p float64) bool  { return g.r.Float64() < p }
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ident is a camelCase (exported when upper) identifier of one to three words.
func (g *gen) ident(upper bool) string {
	parts := []string{g.noun()}
	if g.chance(0.5) {
		parts = append([]string{g.adj()}, parts...)
	}
	if g.chance(0.3) {
		parts = append(parts, g.noun())
	}
	var b strings.Builder
	for i, p := range parts {
		if i == 0 && !upper {
			b.WriteString(p)
		} else {
			b.WriteString(title(p))
		}
	}
	return b.String()
}

// snake is a snake_case identifier.
func (g *gen) snake() string {
	if g.chance(0.5) {
		return g.adj() + "_" + g.noun()
	}
	return g.noun()
}

// funcName is an exported or unexported verb-noun name.
func (g *gen) funcName(upper bool) string {
	v := g.verb()
	if upper {
		v = title(v)
	}
	return v + title(g.noun())
}

// sentence is one prose sentence without the final newline.
func (g *gen) sentence() string {
	var parts []string
	switch g.r.IntN(6) {
	case 0:
		parts = []string{"The", g.adj(), g.noun(), g.verb() + "s", "the", g.noun(), "before the", g.noun(), "is", g.adj()}
	case 1:
		parts = []string{title(g.pick(g.v.connectives)) + ",", "we", g.verb(), "each", g.noun(), "and", g.verb(), "the", g.adj(), g.noun()}
	case 2:
		parts = []string{"Why does the", g.noun(), g.verb(), "the", g.noun(), "when the", g.noun(), "is", g.adj() + "?"}
		return strings.Join(parts, " ")
	case 3:
		parts = []string{"Can you", g.verb(), "the", "`" + g.funcName(g.chance(0.5)) + "`", "function so that it", g.verb() + "s", g.adj(), g.noun() + "s"}
	case 4:
		parts = []string{"A", g.noun(), "that", g.verb() + "s", "more than", fmt.Sprint(g.between(2, 5000)), g.noun() + "s", "should", g.verb(), "the", g.noun(), "first"}
	default:
		parts = []string{"This", g.verb() + "s", "the", g.adj(), g.noun(), g.pick(g.v.connectives), "the", g.noun(), g.verb() + "s", "its", g.noun()}
	}
	return strings.Join(parts, " ") + "."
}

// paragraph writes sentences wrapped at about width columns.
func (g *gen) paragraph(width, sentences int) {
	col := 0
	for i := 0; i < sentences; i++ {
		for _, w := range strings.Fields(g.sentence()) {
			if col > 0 && col+1+len(w) > width {
				g.b.WriteByte('\n')
				col = 0
			} else if col > 0 {
				g.b.WriteByte(' ')
				col++
			}
			g.b.WriteString(w)
			col += len(w)
		}
	}
	g.b.WriteString("\n\n")
}

func (g *gen) take() string {
	s := g.b.String()
	g.b.Reset()
	return s
}

func (g *gen) path(ext string) string {
	dirs := g.between(1, 3)
	var p []string
	for i := 0; i < dirs; i++ {
		p = append(p, g.noun())
	}
	return strings.Join(p, "/") + "/" + g.snake() + ext
}

package workload

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

// MaxTailTokens bounds the tokens of one chunk of prepared text: longer chunks
// (very long lines) are left out. A rendered segment ends with a filler line
// of fewer than MaxTailTokens tokens, so two segments of one key and
// different lengths share all but at most that many tokens of the shorter.
const MaxTailTokens = 96

// Text is a corpus prepared for rendering under one tokenizer: every document
// split into safe chunks with token counts, grouped by kind. It is immutable
// and safe for concurrent use; prepare it once and share it (WithText).
type Text struct {
	tok   *tokenizer.Tokenizer
	pools map[corpus.Kind]*pool
}

// pool is the chunked text of one document kind.
type pool struct {
	chunks   []tokenizer.Chunk
	docs     [][2]int32 // [first, end) chunk indexes of each document
	byTokens [MaxTailTokens][]int32
}

// NewText chunks and counts every document of c with tok, counting on all
// cores; the result does not depend on their number.
func NewText(c *corpus.Corpus, tok *tokenizer.Tokenizer) (*Text, error) {
	counted := make([][]tokenizer.Chunk, len(c.Docs))
	errs := make([]error, len(c.Docs))
	workers := max(1, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(c.Docs); i += workers {
				errs[i] = tokenizer.SplitChunks(tokenizer.Normalize(c.Docs[i].Text), func(s string) error {
					n, err := tok.Count(s)
					if err == nil && n < MaxTailTokens {
						counted[i] = append(counted[i], tokenizer.Chunk{Text: s, Tokens: n})
					}
					return err
				})
			}
		}(w)
	}
	wg.Wait()
	t := &Text{tok: tok, pools: map[corpus.Kind]*pool{}}
	for i, d := range c.Docs {
		if errs[i] != nil {
			return nil, fmt.Errorf("prepare corpus document %s: %w", d.Source, errs[i])
		}
		if len(counted[i]) == 0 {
			continue
		}
		p := t.pools[d.Kind]
		if p == nil {
			p = &pool{}
			t.pools[d.Kind] = p
		}
		first := int32(len(p.chunks))
		for _, ch := range counted[i] {
			p.byTokens[ch.Tokens] = append(p.byTokens[ch.Tokens], int32(len(p.chunks)))
			p.chunks = append(p.chunks, ch)
		}
		p.docs = append(p.docs, [2]int32{first, int32(len(p.chunks))})
	}
	if len(t.pools) == 0 {
		return nil, fmt.Errorf("prepare corpus: %w: no usable text", corpus.ErrEmpty)
	}
	return t, nil
}

// Tokenizer returns the tokenizer the text was counted with.
func (t *Text) Tokenizer() *tokenizer.Tokenizer { return t.tok }

// mixEntry is one kind of text in a segment's mix.
type mixEntry struct {
	kind   corpus.Kind
	weight float64
}

// mixes says what each segment kind is made of.
var mixes = map[SegmentKind][]mixEntry{
	KindSystem:    {{corpus.KindSystem, 1}},
	KindRoot:      {{corpus.KindCode, 0.85}, {corpus.KindProse, 0.15}},
	KindTeam:      {{corpus.KindCode, 0.85}, {corpus.KindProse, 0.15}},
	KindUser:      {{corpus.KindCode, 0.8}, {corpus.KindDiff, 0.1}, {corpus.KindProse, 0.1}},
	KindTurn:      {{corpus.KindProse, 0.35}, {corpus.KindTool, 0.3}, {corpus.KindDiff, 0.15}, {corpus.KindCode, 0.2}},
	KindAssistant: {{corpus.KindProse, 0.6}, {corpus.KindCode, 0.25}, {corpus.KindDiff, 0.15}},
}

// defaultMix is used for segment kinds without their own mix (importers).
var defaultMix = []mixEntry{{corpus.KindCode, 0.5}, {corpus.KindProse, 0.25}, {corpus.KindTool, 0.25}}

// fallbackOrder is where a kind missing from the corpus is taken from.
var fallbackOrder = []corpus.Kind{corpus.KindCode, corpus.KindProse, corpus.KindTool, corpus.KindDiff, corpus.KindSystem}

func (t *Text) pool(k corpus.Kind) *pool {
	if p := t.pools[k]; p != nil {
		return p
	}
	for _, f := range fallbackOrder {
		if p := t.pools[f]; p != nil {
			return p
		}
	}
	return nil // unreachable: NewText rejects an empty corpus
}

// Render appends seg's text to dst: exactly seg.Tokens tokens, ending with a
// newline and starting at a safe boundary, so rendered segments concatenate
// to the sum of their lengths. The text is the beginning of a document that
// depends only on seg.Key and seg.Kind: a stream of pieces (a header line,
// then a whole corpus document of a kind drawn from the segment kind's mix)
// taken while whole chunks fit, completed by a filler chunk of the exact
// remaining length.
func (t *Text) Render(dst []byte, seg Segment) ([]byte, error) {
	need := seg.Tokens
	if need <= 0 {
		return dst, nil
	}
	mix := mixes[seg.Kind]
	if mix == nil {
		mix = defaultMix
	}
	r := rand.New(rand.NewPCG(seg.Key, mix64(seg.Key^0x5851f42d4c957f2d)))
	var last *pool
	for piece := 0; need > 0; piece++ {
		p := t.pool(pickMix(mix, r.Float64()))
		last = p
		head := t.header(r, seg, piece)
		hn, err := t.tok.Count(head)
		if err != nil {
			return dst, fmt.Errorf("render %s segment: %w", seg.Kind, err)
		}
		if hn > need {
			break
		}
		dst = append(dst, head...)
		need -= hn
		doc := p.docs[r.IntN(len(p.docs))]
		full := false
		for i := doc[0]; i < doc[1]; i++ {
			c := &p.chunks[i]
			if c.Tokens > need {
				full = true
				break
			}
			dst = append(dst, c.Text...)
			need -= c.Tokens
		}
		if full {
			break
		}
	}
	if need > 0 {
		dst = append(dst, t.tail(last, seg.Key, need)...)
	}
	return dst, nil
}

// header is the first line of a piece: a file banner whose path comes from
// the stream (the first one also carries the key, so different keys diverge
// from their first line).
func (t *Text) header(r *rand.Rand, seg Segment, piece int) string {
	var b strings.Builder
	b.WriteString("==> ")
	words := [...]string{"src", "pkg", "internal", "cmd", "lib", "api", "core", "util", "service", "tools"}
	for d := r.IntN(3); d >= 0; d-- {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte('/')
	}
	if piece == 0 {
		fmt.Fprintf(&b, "%s_%012x", seg.Kind, seg.Key>>16)
	} else {
		fmt.Fprintf(&b, "part_%04x", r.Uint32()&0xffff)
	}
	b.WriteString(" <==\n")
	return b.String()
}

// tail returns a chunk of exactly n (< MaxTailTokens) tokens: a corpus chunk
// of that length chosen by key when p has one, otherwise a synthetic filler.
func (t *Text) tail(p *pool, key uint64, n int) string {
	if p == nil {
		p = t.pool(corpus.KindCode)
	}
	if n < MaxTailTokens {
		if ids := p.byTokens[n]; len(ids) > 0 {
			return p.chunks[ids[hashKey(key, uint64(n))%uint64(len(ids))]].Text
		}
	}
	return tokenizer.Filler(n)
}

func pickMix(mix []mixEntry, u float64) corpus.Kind {
	total := 0.0
	for _, m := range mix {
		total += m.weight
	}
	u *= total
	for _, m := range mix {
		if u < m.weight {
			return m.kind
		}
		u -= m.weight
	}
	return mix[len(mix)-1].kind
}

package workload

import (
	"fmt"
	"hash/fnv"
	"os"
	"sync"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

// Import formats accepted by OpenImport (ImportFormats).
const (
	FormatVLLM     = "vllm-multiturn"
	FormatAIPerf   = "aiperf"
	FormatMooncake = "mooncake"
	FormatBailian  = "bailian"
)

// DefaultImportOutputTokens is the output budget of an imported turn whose
// trace gives none (a final user message without a recorded reply).
const DefaultImportOutputTokens = 256

// Imported is a workload replayed from a trace: a fixed list of sessions.
// Segments of recorded text render to that text; segments the trace only
// describes by length (AIPerf replies, hash-id blocks) are synthesised from
// the built-in corpus, the same text for the same key. It implements Source
// and Renderer and is safe for concurrent use.
type Imported struct {
	format   string
	sessions []*Script
	texts    map[uint64]string
	profiles []string
	tok      *tokenizer.Tokenizer

	textOnce sync.Once
	text     *Text
	textErr  error
}

var (
	_ Source   = (*Imported)(nil)
	_ Renderer = (*Imported)(nil)
)

// OpenImport reads the trace at path in format (see ImportFormats).
// tokenizerName counts the tokens of recorded text.
func OpenImport(format, path, tokenizerName string, seed uint64) (*Imported, error) {
	tok, err := tokenizer.New(tokenizerName)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s trace: %w", format, err)
	}
	defer f.Close()
	switch format {
	case FormatVLLM:
		return ReadVLLM(f, path, tok)
	case FormatAIPerf:
		return ReadAIPerf(f, path, tok)
	case FormatMooncake:
		return ReadBlockTrace(f, path, tok, MooncakeBlockTokens, seed)
	case FormatBailian:
		return ReadBlockTrace(f, path, tok, BailianBlockTokens, seed)
	}
	return nil, fmt.Errorf("unknown import format %q", format)
}

func newImported(format string, tok *tokenizer.Tokenizer) *Imported {
	return &Imported{format: format, texts: map[uint64]string{}, tok: tok}
}

// Format is the trace format the sessions were read from.
func (im *Imported) Format() string { return im.format }

// Len is the number of sessions in the trace.
func (im *Imported) Len() int { return len(im.sessions) }

// Profiles lists the profile names of the imported sessions.
func (im *Imported) Profiles() []string { return im.profiles }

// Session returns the trace session (user + n*stride) mod Len, with stride
// coprime to Len near 0.618*Len: users 0..Len-1 replay every session once
// for n = 0, and each user walks through all sessions as n grows. The script
// is shared; callers must not modify it.
func (im *Imported) Session(user, n int) (*Script, error) {
	if user < 0 || n < 0 {
		return nil, fmt.Errorf("%s session (user %d, session %d): negative index", im.format, user, n)
	}
	l := len(im.sessions)
	if l == 0 {
		return nil, fmt.Errorf("%s trace has no sessions", im.format)
	}
	idx := (uint64(user) + uint64(n)*uint64(im.stride())) % uint64(l)
	s := *im.sessions[idx]
	s.User, s.Session = user, n
	return &s, nil
}

func (im *Imported) stride() int {
	l := len(im.sessions)
	st := max(1, int(float64(l)*profileStep))
	for gcd(st, l) != 1 {
		st++
	}
	return st
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Render appends seg's text: the recorded text for segments that carry one,
// otherwise seg.Tokens tokens synthesised from the built-in corpus.
func (im *Imported) Render(dst []byte, seg Segment) ([]byte, error) {
	if t, ok := im.texts[seg.Key]; ok {
		return append(dst, t...), nil
	}
	im.textOnce.Do(func() { im.text, im.textErr = NewText(corpus.Builtin(), im.tok) })
	if im.textErr != nil {
		return dst, im.textErr
	}
	return im.text.Render(dst, seg)
}

// literal records text and returns a segment of it: the key is a hash of the
// text, so equal texts anywhere in the trace share a prefix.
func (im *Imported) literal(kind SegmentKind, owner, turn int, text string) (Segment, error) {
	n, err := im.tok.Count(text)
	if err != nil {
		return Segment{}, err
	}
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(text))
	key := mix64(h.Sum64())
	im.texts[key] = text
	return Segment{Kind: kind, Owner: owner, Turn: turn, Key: key, Tokens: n}, nil
}

// add appends a session, filling PromptTokens and the profile list.
func (im *Imported) add(s *Script) {
	var segs []Segment
	for k := range s.Turns {
		segs = s.Prompt(segs[:0], k)
		s.Turns[k].PromptTokens = Tokens(segs)
	}
	found := false
	for _, p := range im.profiles {
		found = found || p == s.Profile
	}
	if !found {
		im.profiles = append(im.profiles, s.Profile)
	}
	im.sessions = append(im.sessions, s)
}

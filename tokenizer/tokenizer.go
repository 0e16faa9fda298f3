package tokenizer

import (
	"errors"
	"fmt"
	"os"

	tiktoken "github.com/tiktoken-go/tokenizer"
)

// Tokenizer names accepted by New.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// Names lists the built-in tokenizers.
var Names = []string{O200kBase, Cl100kBase}

// ErrUnknown is returned by New for a name that is neither a built-in
// tokenizer nor a loadable file.
var ErrUnknown = errors.New("unknown tokenizer")

// Tokenizer is a BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	name  string
	codec codec
}

// codec is what a tokenizer implementation provides: tiktoken's codecs and
// the tokenizer.json BPE.
type codec interface {
	Count(string) (int, error)
	Encode(string) ([]uint, []string, error)
	Decode([]uint) (string, error)
}

// New returns the tokenizer called name: o200k_base (gpt-oss, GPT-4o) or
// cl100k_base (GPT-4), whose vocabularies are embedded so New never touches
// the network, or the path of a Hugging Face tokenizer.json (see LoadFile).
func New(name string) (*Tokenizer, error) {
	var enc tiktoken.Encoding
	switch name {
	case O200kBase:
		enc = tiktoken.O200kBase
	case Cl100kBase:
		enc = tiktoken.Cl100kBase
	default:
		if st, err := os.Stat(name); err == nil && !st.IsDir() {
			return LoadFile(name)
		}
		return nil, fmt.Errorf("tokenizer %q: %w (built-in: %v, or the path of a tokenizer.json)", name, ErrUnknown, Names)
	}
	c, err := tiktoken.Get(enc)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	return &Tokenizer{name: name, codec: c}, nil
}

// Name is the tokenizer's name (o200k_base, ...).
func (t *Tokenizer) Name() string { return t.name }

// Count returns the number of tokens of s.
func (t *Tokenizer) Count(s string) (int, error) {
	n, err := t.codec.Count(s)
	if err != nil {
		return 0, fmt.Errorf("count tokens (%s): %w", t.name, err)
	}
	return n, nil
}

// Encode returns the token ids of s.
func (t *Tokenizer) Encode(s string) ([]int, error) {
	ids, _, err := t.codec.Encode(s)
	if err != nil {
		return nil, fmt.Errorf("encode (%s): %w", t.name, err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out, nil
}

// Decode returns the text of ids; an id outside the vocabulary is an error.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	u := make([]uint, len(ids))
	for i, id := range ids {
		if id < 0 {
			return "", fmt.Errorf("decode (%s): invalid token id %d", t.name, id)
		}
		u[i] = uint(id)
	}
	s, err := t.codec.Decode(u)
	if err != nil {
		return "", fmt.Errorf("decode (%s): %w", t.name, err)
	}
	return s, nil
}

package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// gpt2Pattern is the pre-tokenizer regex of a ByteLevel pre-tokenizer with
// use_regex (GPT-2's).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// maxCached bounds the per-tokenizer cache of encoded pre-tokens.
const maxCached = 1 << 17

// hfFile is the part of a Hugging Face tokenizer.json spoc understands.
type hfFile struct {
	Normalizer   *hfNormalizer   `json:"normalizer"`
	PreTokenizer *hfPreTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type         string            `json:"type"`
		Vocab        map[string]int    `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		ByteFallback bool              `json:"byte_fallback"`
		IgnoreMerges bool              `json:"ignore_merges"`
	} `json:"model"`
}

type hfNormalizer struct {
	Type        string         `json:"type"`
	Normalizers []hfNormalizer `json:"normalizers"`
}

type hfPreTokenizer struct {
	Type           string           `json:"type"`
	Pretokenizers  []hfPreTokenizer `json:"pretokenizers"`
	Pattern        *struct{ Regex, String string }
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// bpeCodec is a byte-level BPE tokenizer read from a tokenizer.json.
type bpeCodec struct {
	vocab        map[string]int
	idToToken    []string
	ranks        map[string]int // "left\x00right" → merge rank
	splits       []*regexp2.Regexp
	normalize    []norm.Form
	ignoreMerges bool
	prefixSpace  bool

	mu    sync.RWMutex
	cache map[string][]int
}

// LoadFile reads a Hugging Face tokenizer.json with a byte-level BPE model
// (GPT-2, Llama 3, Qwen 2, DeepSeek style) and checks that its
// pre-tokenizer keeps the line boundaries exact-length cutting relies on.
func LoadFile(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	defer f.Close()
	return Load(f, path)
}

// Load reads a tokenizer.json from r; name is used in messages.
func Load(r io.Reader, name string) (*Tokenizer, error) {
	var f hfFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	c, err := newBPE(&f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	t := &Tokenizer{name: name, codec: c}
	if err := t.selfCheck(); err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	return t, nil
}

func newBPE(f *hfFile) (*bpeCodec, error) {
	if f.Model.Type != "BPE" && f.Model.Type != "" {
		return nil, fmt.Errorf("model type %q: only byte-level BPE is supported", f.Model.Type)
	}
	if f.Model.ByteFallback {
		return nil, errors.New("byte_fallback (SentencePiece-style) BPE is not supported, only byte-level BPE")
	}
	if len(f.Model.Vocab) == 0 {
		return nil, errors.New("model.vocab is empty")
	}
	c := &bpeCodec{vocab: f.Model.Vocab, ranks: make(map[string]int, len(f.Model.Merges)), ignoreMerges: f.Model.IgnoreMerges, cache: map[string][]int{}}
	maxID := 0
	for _, id := range c.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab: negative id %d", id)
		}
		maxID = max(maxID, id)
	}
	if maxID > 4*len(c.vocab)+1024 {
		return nil, fmt.Errorf("model.vocab: ids up to %d for %d tokens", maxID, len(c.vocab))
	}
	c.idToToken = make([]string, maxID+1)
	for tok, id := range c.vocab {
		c.idToToken[id] = tok
	}
	for i, raw := range f.Model.Merges {
		var pair []string
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			pair = strings.SplitN(s, " ", 2)
		} else if err := json.Unmarshal(raw, &pair); err != nil {
			return nil, fmt.Errorf("model.merges[%d]: want \"a b\" or [\"a\", \"b\"]", i)
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: want two symbols", i)
		}
		k := pair[0] + "\x00" + pair[1]
		if _, dup := c.ranks[k]; !dup {
			c.ranks[k] = i
		}
	}
	if f.Normalizer != nil {
		if err := c.addNormalizer(f.Normalizer); err != nil {
			return nil, err
		}
	}
	byteLevel := false
	if f.PreTokenizer != nil {
		if err := c.addPreTokenizer(f.PreTokenizer, &byteLevel); err != nil {
			return nil, err
		}
	}
	if !byteLevel {
		return nil, errors.New("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported")
	}
	return c, nil
}

func (c *bpeCodec) addNormalizer(n *hfNormalizer) error {
	switch n.Type {
	case "NFC":
		c.normalize = append(c.normalize, norm.NFC)
	case "NFKC":
		c.normalize = append(c.normalize, norm.NFKC)
	case "NFD":
		c.normalize = append(c.normalize, norm.NFD)
	case "NFKD":
		c.normalize = append(c.normalize, norm.NFKD)
	case "Sequence":
		for i := range n.Normalizers {
			if err := c.addNormalizer(&n.Normalizers[i]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("normalizer %q is not supported (NFC, NFKC, NFD, NFKD, Sequence)", n.Type)
	}
	return nil
}

func (c *bpeCodec) addPreTokenizer(p *hfPreTokenizer, byteLevel *bool) error {
	switch p.Type {
	case "Sequence":
		for i := range p.Pretokenizers {
			if err := c.addPreTokenizer(&p.Pretokenizers[i], byteLevel); err != nil {
				return err
			}
		}
	case "Split":
		if p.Invert || (p.Behavior != "Isolated" && p.Behavior != "") || p.Pattern == nil {
			return fmt.Errorf("pre_tokenizer Split with behavior %q, invert %v: only Isolated regex splits are supported", p.Behavior, p.Invert)
		}
		pat := p.Pattern.Regex
		if pat == "" {
			pat = regexp2.Escape(p.Pattern.String)
		}
		re, err := regexp2.Compile(pat, regexp2.None)
		if err != nil {
			return fmt.Errorf("pre_tokenizer Split pattern: %w", err)
		}
		c.splits = append(c.splits, re)
	case "ByteLevel":
		*byteLevel = true
		c.prefixSpace = p.AddPrefixSpace
		if p.UseRegex == nil || *p.UseRegex {
			c.splits = append(c.splits, regexp2.MustCompile(gpt2Pattern, regexp2.None))
		}
	default:
		return fmt.Errorf("pre_tokenizer %q is not supported (Sequence, Split, ByteLevel)", p.Type)
	}
	return nil
}

// selfCheckText exercises the line shapes the corpora have: indented code,
// comments, punctuation at line ends, numbers, tool output and prose.
const selfCheckText = `func main() {
	x := []int{1, 2, 3} // comment
	if x == nil {
		return
	}
}
    // indented comment
def f(a, b):
    return a + b  # sum

$ go test ./...
ok  	example.com/pkg	0.12s
--- FAIL: TestX (0.00s)
{"key": "value", "n": 12345}
The quick answer is: don't panic; it's fine.
+	added line
-	removed line
`

// maxFillerCheck is how many filler lengths selfCheck verifies; renderers
// use fillers shorter than that.
const maxFillerCheck = 128

// selfCheck verifies the two properties exact-length cutting needs: safe
// chunks concatenate to the sum of their counts (in any order), and Filler(n)
// has exactly n tokens. A tokenizer.json whose pre-tokenizer joins text
// across line starts (GPT-2's "\s+(?!\S)" with indented lines,
// add_prefix_space) fails here rather than producing wrong lengths later.
func (t *Tokenizer) selfCheck() error {
	chunks, err := t.Chunks(selfCheckText)
	if err != nil {
		return err
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {16, 3, 9, 1, 12, 0, 7, 5, 14, 2, 11, 8, 6, 15, 4, 13, 10}} {
		var b strings.Builder
		want := 0
		for _, i := range order {
			if i < len(chunks) {
				b.WriteString(chunks[i].Text)
				want += chunks[i].Tokens
			}
		}
		got, err := t.Count(b.String())
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("pre-tokenizer does not keep line boundaries (%d tokens for chunks counting %d): exact-length cutting would be wrong", got, want)
		}
	}
	for n := 1; n <= maxFillerCheck; n++ {
		got, err := t.Count(Filler(n))
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("filler line of %d tokens counts %d: exact-length cutting is not supported for this vocabulary", n, got)
		}
	}
	return nil
}

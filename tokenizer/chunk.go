package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk is a newline-terminated piece of text that starts at a safe boundary:
// chunks concatenate without changing each other's tokenization, so the
// token count of a concatenation is the sum of the chunks' Tokens.
type Chunk struct {
	Text   string
	Tokens int
}

// ErrShort is returned by Cut when the text has fewer tokens than asked for.
var ErrShort = errors.New("text too short")

// SafeStart reports whether line may begin a chunk: its first byte is not
// '/', and after any leading spaces or tabs it starts with a letter, a digit
// or a visible ASCII symbol. Under the o200k and cl100k pre-tokenizers the
// pre-token that holds a preceding newline then ends exactly at the line's
// start ('/' is excluded because o200k glues "\n//" to a preceding symbol).
func SafeStart(line string) bool {
	if line == "" || line[0] == '/' {
		return false
	}
	s := strings.TrimLeft(line, " \t")
	if s == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s)
	switch {
	case r < utf8.RuneSelf:
		return r > ' ' && r < 0x7f
	default:
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
}

// Normalize makes text safe to chunk: valid UTF-8, "\n" line ends, no
// special-token markers ("<|...|>" would be a single special token on a
// server), no other control characters than tab and newline, and a final
// newline.
func Normalize(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case r == '\n' || r == '\t':
			return r
		case r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, text)
	text = strings.ReplaceAll(text, "<|", "< |")
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text
}

// Chunks splits text into safe chunks with their token counts. Lines that
// cannot start a chunk (blank lines, lines starting with '/') stay with the
// chunk before them; lines before the first safe line are dropped. The text
// is normalized first (see Normalize).
func (t *Tokenizer) Chunks(text string) ([]Chunk, error) {
	var out []Chunk
	err := SplitChunks(Normalize(text), func(c string) error {
		n, err := t.Count(c)
		if err != nil {
			return err
		}
		out = append(out, Chunk{Text: c, Tokens: n})
		return nil
	})
	return out, err
}

// SplitChunks calls yield with each safe chunk of normalized text, without
// counting tokens.
func SplitChunks(text string, yield func(chunk string) error) error {
	start := -1 // start of the current chunk
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		end := len(text)
		if j >= 0 {
			end = i + j + 1
		}
		if SafeStart(text[i:end]) {
			if start >= 0 {
				if err := yield(text[start:i]); err != nil {
					return err
				}
			}
			start = i
		}
		i = end
	}
	if start >= 0 && strings.HasSuffix(text, "\n") {
		return yield(text[start:])
	}
	return nil
}

// Filler returns a safe chunk of exactly n tokens (n >= 1) for the o200k and
// cl100k tokenizers: "}\n" for one token, otherwise "x x ... x\n" where every
// " x" is one pre-token and one token.
func Filler(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return "}\n"
	}
	var b strings.Builder
	b.Grow(2*n + 1)
	b.WriteByte('x')
	for i := 2; i < n; i++ {
		b.WriteString(" x")
	}
	b.WriteByte('\n')
	return b.String()
}

// Cut returns a prefix of text cut at a safe boundary and completed with a
// filler line so that it has exactly n tokens and ends with a newline; it can
// be concatenated with other chunks or cuts without changing token counts.
func (t *Tokenizer) Cut(text string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	chunks, err := t.Chunks(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	have := 0
	for _, c := range chunks {
		if have+c.Tokens > n {
			break
		}
		b.WriteString(c.Text)
		have += c.Tokens
	}
	if have < n {
		total := 0
		for _, c := range chunks {
			total += c.Tokens
		}
		if total < n {
			return "", fmt.Errorf("cut %d tokens: %w (%d tokens in safe chunks)", n, ErrShort, total)
		}
		b.WriteString(Filler(n - have))
	}
	return b.String(), nil
}

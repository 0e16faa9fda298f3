package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/spoc-project/spoc/vllm"
)

// chunkInfo is what the client needs from one OpenAI streaming chunk.
type chunkInfo struct {
	choices   bool   // choices had a first element
	text      []byte // delta.content, or text when content is empty
	reasoning bool   // delta.reasoning_content or delta.reasoning non-empty
	// reasoningText is delta.reasoning, or delta.reasoning_content when
	// that is empty (a server sends one of them).
	reasoningText []byte
	ntok          int // token_ids, logprobs.content or logprobs.tokens length; 0 if absent
	usage         bool
	prompt        int
	completed     int
	cached        int
	errEvent      bool // an error object: the stream failed
	errMsg        string
}

// decodeChunk fills ci from data: the reflection-free parser for the common
// shapes, encoding/json (into slow) for everything else.
func decodeChunk(data []byte, ci *chunkInfo, slow *chunk) error {
	if parseChunkFast(data, ci) {
		return nil
	}
	return decodeSlow(data, ci, slow)
}

// decodeSlow decodes data with encoding/json.
func decodeSlow(data []byte, ci *chunkInfo, slow *chunk) error {
	*slow = chunk{}
	if err := json.Unmarshal(data, slow); err != nil {
		return err
	}
	*ci = chunkInfo{}
	if e := slow.Error; e != nil {
		ci.errEvent, ci.errMsg = true, strings.TrimSpace(e.Type+" "+e.Message)
	}
	if u := slow.Usage; u != nil {
		ci.usage, ci.prompt, ci.completed = true, u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			ci.cached = u.PromptTokensDetails.CachedTokens
		}
	}
	if len(slow.Choices) == 0 {
		return nil
	}
	ch := &slow.Choices[0]
	ci.choices = true
	ci.text = []byte(ch.Delta.Content)
	if len(ci.text) == 0 {
		ci.text = []byte(ch.Text)
	}
	ci.reasoning = ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != ""
	ci.reasoningText = []byte(ch.Delta.Reasoning)
	if len(ci.reasoningText) == 0 {
		ci.reasoningText = []byte(ch.Delta.ReasoningContent)
	}
	switch {
	case len(ch.TokenIDs) > 0:
		ci.ntok = len(ch.TokenIDs)
	case ch.Logprobs != nil && len(ch.Logprobs.Content) > 0:
		ci.ntok = len(ch.Logprobs.Content)
	case ch.Logprobs != nil && len(ch.Logprobs.Tokens) > 0:
		ci.ntok = len(ch.Logprobs.Tokens)
	}
	return nil
}

// parseChunkFast decodes the common shape of a streaming chunk without
// reflection. It is deliberately strict: it returns false for anything it
// does not handle exactly as encoding/json into chunk would (escaped strings
// or keys, non-integer numbers, unexpected types, error events), and the
// caller then falls back to encoding/json. The differential fuzz test holds
// it to that promise.
func parseChunkFast(data []byte, c *chunkInfo) bool {
	*c = chunkInfo{}
	p := &scanner{b: data}
	p.ws()
	var seen uint8 // a repeated key merges in encoding/json: leave that to it
	once := func(bit uint8) bool {
		dup := seen&bit != 0
		seen |= bit
		return !dup
	}
	if !p.objectKeys(func(key []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("choices")):
			return once(1) && p.choices(c)
		case bytes.EqualFold(key, []byte("usage")):
			return once(2) && p.usage(c)
		case bytes.EqualFold(key, []byte("error")):
			if p.null() {
				return true
			}
			c.errEvent = true
			return false // rare: let encoding/json produce the message
		default:
			return p.skip(0)
		}
	}) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *scanner) lit(s string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		p.i += len(s)
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (p *scanner) null() bool {
	p.ws()
	return p.lit("null")
}

// objectKeys walks an object calling f for each key with the scanner on the
// value; f must consume the value.
func (p *scanner) objectKeys(f func(key []byte) bool) bool {
	p.ws()
	if p.peek() != '{' {
		return false
	}
	p.i++
	p.ws()
	if p.peek() == '}' {
		p.i++
		return true
	}
	for {
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return false
		}
		p.ws()
		if p.peek() != ':' {
			return false
		}
		p.i++
		p.ws()
		if !f(key) {
			return false
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// arrayItems walks an array calling f with the index for each element.
func (p *scanner) arrayItems(f func(i int) bool) bool {
	p.ws()
	if p.peek() != '[' {
		return false
	}
	p.i++
	p.ws()
	if p.peek() == ']' {
		p.i++
		return true
	}
	for n := 0; ; n++ {
		p.ws()
		if !f(n) {
			return false
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return true
		default:
			return false
		}
	}
}

// plainString reads a string without escapes and with valid UTF-8 (whose
// bytes are then exactly what encoding/json would decode); false otherwise.
func (p *scanner) plainString() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// optString reads a string into *dst, or null (which, as in encoding/json,
// leaves *dst alone). Strings with escapes are decoded by encoding/json.
func (p *scanner) optString(dst *[]byte) bool {
	if p.null() {
		return true
	}
	if s, ok := p.plainString(); ok {
		*dst = s
		return true
	}
	start := p.i
	if !p.escapedString() {
		return false
	}
	var str string
	if json.Unmarshal(p.b[start:p.i], &str) != nil {
		return false
	}
	*dst = []byte(str)
	return true
}

// escapedString validates and skips a string that may hold escapes and any
// bytes encoding/json accepts.
func (p *scanner) escapedString() bool {
	if p.peek() != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(p.b) {
				return false
			}
			switch p.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(p.b) {
					return false
				}
				for _, h := range p.b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

// optInt reads a non-negative integer without exponent or fraction, or null.
func (p *scanner) optInt() (int, bool) {
	if p.null() {
		return 0, true
	}
	start := p.i
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if p.i-start > 15 {
			return 0, false
		}
		n = n*10 + int(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	switch p.peek() {
	case '.', 'e', 'E':
		return 0, false
	}
	return n, true
}

// countInts reads an array of integers (or null) and returns its length.
func (p *scanner) countInts() (int, bool) {
	if p.null() {
		return 0, true
	}
	n := 0
	ok := p.arrayItems(func(int) bool {
		n++
		if p.null() {
			return true
		}
		if p.peek() == '-' {
			p.i++
			if c := p.peek(); c < '0' || c > '9' {
				return false
			}
		}
		_, ok := p.optInt()
		return ok
	})
	return n, ok
}

func (p *scanner) choices(c *chunkInfo) bool {
	if p.null() {
		return true
	}
	var content, text, rc, rs []byte
	ok := p.arrayItems(func(i int) bool {
		if i > 0 {
			return p.skip(0)
		}
		if p.peek() != '{' {
			return false // null or another type: leave it to encoding/json
		}
		c.choices = true
		var seen uint8
		once := func(bit uint8) bool {
			dup := seen&bit != 0
			seen |= bit
			return !dup
		}
		return p.objectKeys(func(key []byte) bool {
			switch {
			case bytes.EqualFold(key, []byte("delta")):
				if !once(1) {
					return false
				}
				if p.null() {
					return true
				}
				var dseen uint8
				return p.objectKeys(func(k []byte) bool {
					var bit uint8
					var dst *[]byte
					switch {
					case bytes.EqualFold(k, []byte("content")):
						bit, dst = 1, &content
					case bytes.EqualFold(k, []byte(vllm.FieldReasoningContent)):
						bit, dst = 2, &rc
					case bytes.EqualFold(k, []byte(vllm.FieldReasoning)):
						bit, dst = 4, &rs
					default:
						return p.skip(0)
					}
					if dseen&bit != 0 {
						return false
					}
					dseen |= bit
					return p.optString(dst)
				})
			case bytes.EqualFold(key, []byte("text")):
				return once(2) && p.optString(&text)
			case bytes.EqualFold(key, []byte("token_ids")):
				if !once(4) {
					return false
				}
				n, ok := p.countInts()
				c.ntok = n
				return ok
			case bytes.EqualFold(key, []byte("logprobs")):
				// vLLM sends "logprobs":null in every chunk; actual logprobs are
				// rare and left to encoding/json.
				return once(8) && p.null()
			default:
				return p.skip(0)
			}
		})
	})
	c.text = content
	if len(c.text) == 0 {
		c.text = text
	}
	c.reasoning = len(rc) > 0 || len(rs) > 0
	c.reasoningText = rs
	if len(c.reasoningText) == 0 {
		c.reasoningText = rc
	}
	return ok
}

func (p *scanner) usage(c *chunkInfo) bool {
	if p.null() {
		return true
	}
	c.usage = true
	var seen uint8
	return p.objectKeys(func(key []byte) bool {
		var ok bool
		switch {
		case bytes.EqualFold(key, []byte("prompt_tokens")):
			if seen&1 != 0 {
				return false
			}
			seen |= 1
			c.prompt, ok = p.optInt()
		case bytes.EqualFold(key, []byte("completion_tokens")):
			if seen&2 != 0 {
				return false
			}
			seen |= 2
			c.completed, ok = p.optInt()
		case bytes.EqualFold(key, []byte("prompt_tokens_details")):
			if seen&4 != 0 {
				return false
			}
			seen |= 4
			if p.null() {
				return true
			}
			cseen := false
			ok = p.objectKeys(func(k []byte) bool {
				if bytes.EqualFold(k, []byte("cached_tokens")) {
					if cseen {
						return false
					}
					cseen = true
					var ok bool
					c.cached, ok = p.optInt()
					return ok
				}
				return p.skip(0)
			})
		default:
			ok = p.skip(0)
		}
		return ok
	})
}

// skip validates and skips any JSON value.
func (p *scanner) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	p.ws()
	switch c := p.peek(); {
	case c == '{':
		return p.objectKeys(func([]byte) bool { return p.skip(depth + 1) })
	case c == '[':
		return p.arrayItems(func(int) bool { return p.skip(depth + 1) })
	case c == '"':
		return p.escapedString()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return false
	}
}

// number validates a JSON number.
func (p *scanner) number() bool {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	p.i = i
	return true
}

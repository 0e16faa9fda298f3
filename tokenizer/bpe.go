package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// byteToRune and runeToByte are GPT-2's byte-level alphabet: printable
// Latin-1 bytes stand for themselves, the others for code points from 256 up.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// pretokenize splits s with each Split regex in turn (Isolated: matches and
// the gaps between them are both pieces).
func (c *bpeCodec) pretokenize(s string) ([]string, error) {
	pieces := []string{s}
	for _, re := range c.splits {
		var next []string
		for _, p := range pieces {
			pos := 0
			m, err := re.FindStringMatch(p)
			for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
				i, n := m.ByteRange()
				if i > pos {
					next = append(next, p[pos:i])
				}
				if n > 0 {
					next = append(next, p[i:i+n])
				}
				pos = i + n
			}
			if err != nil {
				return nil, fmt.Errorf("pre-tokenize: %w", err)
			}
			if pos < len(p) {
				next = append(next, p[pos:])
			}
		}
		pieces = next
	}
	return pieces, nil
}

// tokenize calls yield with the id of every token of input.
func (c *bpeCodec) tokenize(input string, yield func(id int)) error {
	for _, f := range c.normalize {
		input = f.String(input)
	}
	if input == "" {
		return nil
	}
	if c.prefixSpace && !strings.HasPrefix(input, " ") {
		input = " " + input
	}
	pieces, err := c.pretokenize(input)
	if err != nil {
		return err
	}
	for _, p := range pieces {
		ids, err := c.word(p)
		if err != nil {
			return err
		}
		for _, id := range ids {
			yield(id)
		}
	}
	return nil
}

// word returns the token ids of one pre-token.
func (c *bpeCodec) word(p string) ([]int, error) {
	c.mu.RLock()
	ids, ok := c.cache[p]
	c.mu.RUnlock()
	if ok {
		return ids, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		b.WriteRune(byteToRune[p[i]])
	}
	mapped := b.String()
	if id, ok := c.vocab[mapped]; ok && (c.ignoreMerges || utf8.RuneCountInString(mapped) == 1) {
		ids = []int{id}
	} else {
		syms := make([]string, 0, len(p))
		for _, r := range mapped {
			syms = append(syms, string(r))
		}
		for len(syms) > 1 {
			best, at := -1, -1
			for i := 0; i+1 < len(syms); i++ {
				if rk, ok := c.ranks[syms[i]+"\x00"+syms[i+1]]; ok && (best < 0 || rk < best) {
					best, at = rk, i
				}
			}
			if at < 0 {
				break
			}
			syms[at] += syms[at+1]
			syms = append(syms[:at+1], syms[at+2:]...)
		}
		ids = make([]int, len(syms))
		for i, s := range syms {
			id, ok := c.vocab[s]
			if !ok {
				return nil, fmt.Errorf("symbol %q of %q is not in the vocabulary", s, p)
			}
			ids[i] = id
		}
	}
	c.mu.Lock()
	if len(c.cache) < maxCached {
		c.cache[p] = ids
	}
	c.mu.Unlock()
	return ids, nil
}

// Count implements codec.
func (c *bpeCodec) Count(s string) (int, error) {
	n := 0
	err := c.tokenize(s, func(int) { n++ })
	return n, err
}

// Encode implements codec.
func (c *bpeCodec) Encode(s string) ([]uint, []string, error) {
	var ids []uint
	var toks []string
	err := c.tokenize(s, func(id int) {
		ids = append(ids, uint(id))
		toks = append(toks, c.idToToken[id])
	})
	return ids, toks, err
}

// Decode implements codec.
func (c *bpeCodec) Decode(ids []uint) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		if id >= uint(len(c.idToToken)) || c.idToToken[id] == "" {
			return "", fmt.Errorf("invalid token: %d", id)
		}
		for _, r := range c.idToToken[id] {
			bt, ok := runeToByte[r]
			if !ok {
				return "", fmt.Errorf("token %d: %q is not byte-level", id, r)
			}
			b.WriteByte(bt)
		}
	}
	return b.String(), nil
}

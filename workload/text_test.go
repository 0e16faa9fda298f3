package workload

import (
	"bytes"
	"math"
	"testing"
)

// TestRenderTokenExact re-tokenizes generated segments and whole prompts:
// every segment has exactly its length, and a whole prompt is within 0.5 %
// of its target (in fact exact, since segments are cut at safe boundaries).
func TestRenderTokenExact(t *testing.T) {
	g := newTestGenerator(t, DefaultSpec())
	tok := testText(t).Tokenizer()
	users := []int{0, 1, 2, 5, 9, 13}
	if testing.Short() {
		users = users[:3]
	}
	for _, u := range users {
		s, err := g.Session(u, 0)
		if err != nil {
			t.Fatal(err)
		}
		var prompt []byte
		segs := s.Prompt(nil, len(s.Turns)-1)
		for _, seg := range segs {
			n0 := len(prompt)
			if prompt, err = g.Render(prompt, seg); err != nil {
				t.Fatal(err)
			}
			if got := count(t, tok, prompt[n0:]); got != seg.Tokens {
				t.Fatalf("user %d %s segment (turn %d): %d tokens, want %d", u, seg.Kind, seg.Turn, got, seg.Tokens)
			}
		}
		target := s.Turns[len(s.Turns)-1].PromptTokens
		got := count(t, tok, prompt)
		if math.Abs(float64(got-target)) > 0.005*float64(target) {
			t.Fatalf("user %d whole prompt: %d tokens, target %d", u, got, target)
		}
		t.Logf("user %d (%s): last prompt %d tokens, re-tokenized %d", u, s.Profile, target, got)
	}
}

func TestRenderSmallAndEdgeLengths(t *testing.T) {
	txt := testText(t)
	for _, kind := range []SegmentKind{KindSystem, KindRoot, KindTeam, KindUser, KindTurn, KindAssistant, "block"} {
		for _, n := range []int{1, 2, 3, 7, 15, 16, 95, 96, 97, 500} {
			b, err := txt.Render(nil, Segment{Kind: kind, Key: uint64(n) * 7919, Tokens: n})
			if err != nil {
				t.Fatal(err)
			}
			// Render twice in a row: concatenation must add up too.
			bb := append(append([]byte(nil), b...), b...)
			if got := count(t, txt.Tokenizer(), bb); got != 2*n {
				t.Fatalf("%s segment of %d tokens: doubled text has %d tokens", kind, n, got)
			}
		}
	}
	if b, _ := txt.Render([]byte("x"), Segment{Kind: KindTurn, Tokens: 0}); string(b) != "x" {
		t.Fatal("zero-token segment rendered text")
	}
}

// TestRenderPrefixSemantics checks the document semantics of keys: the same
// key at different lengths shares all but the shorter's last filler line.
func TestRenderPrefixSemantics(t *testing.T) {
	txt := testText(t)
	seg := Segment{Kind: KindRoot, Key: 42}
	seg.Tokens = 3000
	short, _ := txt.Render(nil, seg)
	seg.Tokens = 9000
	long, _ := txt.Render(nil, seg)
	common := 0
	for common < len(short) && short[common] == long[common] {
		common++
	}
	for common > 0 && short[common-1] != '\n' {
		common--
	}
	if got := count(t, txt.Tokenizer(), short[:common]); got <= 3000-MaxTailTokens {
		t.Fatalf("same key, lengths 3000 and 9000 share %d tokens; want more than %d", got, 3000-MaxTailTokens)
	}
	other, _ := txt.Render(nil, Segment{Kind: KindRoot, Key: 43, Tokens: 3000})
	if i := bytes.IndexByte(other, '\n'); bytes.Equal(other[:i], short[:i]) {
		t.Fatal("different keys share their first line")
	}
	again, _ := txt.Render(nil, Segment{Kind: KindRoot, Key: 42, Tokens: 3000})
	if !bytes.Equal(again, short) {
		t.Fatal("same key and length rendered different bytes")
	}
}

// TestRenderTokenExactCl100k repeats the exactness check under cl100k_base,
// with the generator preparing its own text.
func TestRenderTokenExactCl100k(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares the built-in corpus a second time")
	}
	cfg := DefaultSpec()
	cfg.Tokenizer = "cl100k_base"
	g, err := New(cfg, 131072)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := g.Session(4, 2)
	segs := s.Prompt(nil, min(4, len(s.Turns)-1))
	var prompt []byte
	for _, seg := range segs {
		if prompt, err = g.Render(prompt, seg); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := count(t, g.tok, prompt), Tokens(segs); got != want {
		t.Fatalf("cl100k prompt: %d tokens, want %d", got, want)
	}
}

package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
)

func scriptsHash(t *testing.T, g *Generator, users int) string {
	t.Helper()
	h := sha256.New()
	enc := json.NewEncoder(h)
	for u := 0; u < users; u++ {
		for n := 0; n < 2; n++ {
			s, err := g.Session(u, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestSessionDeterministic(t *testing.T) {
	cfg := DefaultSpec()
	a := scriptsHash(t, newTestGenerator(t, cfg), 200)
	if b := scriptsHash(t, newTestGenerator(t, cfg), 200); a != b {
		t.Fatalf("same config and seed: script hashes %s and %s differ", a, b)
	}
	cfg.Seed = 2
	if c := scriptsHash(t, newTestGenerator(t, cfg), 200); c == a {
		t.Fatal("different seeds gave byte-identical scripts")
	}
}

func TestRenderDeterministic(t *testing.T) {
	g := newTestGenerator(t, DefaultSpec())
	s, _ := g.Session(3, 1)
	render := func(gen *Generator) string {
		var b []byte
		var err error
		for _, seg := range s.Prompt(nil, len(s.Turns)-1) {
			if b, err = gen.Render(b, seg); err != nil {
				t.Fatal(err)
			}
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	// A generator preparing its own text must produce the same bytes.
	own, err := New(DefaultSpec(), 131072)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := render(g), render(own); a != b {
		t.Fatalf("rendered prompt hashes differ: %s vs %s", a, b)
	}
}

func TestSessionOrderIndependent(t *testing.T) {
	g := newTestGenerator(t, DefaultSpec())
	first, _ := g.Session(17, 4)
	for u := 0; u < 50; u++ {
		if _, err := g.Session(u, u%3); err != nil {
			t.Fatal(err)
		}
	}
	again, _ := g.Session(17, 4)
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Fatal("Session(17, 4) changed after generating other sessions")
	}
	if _, err := g.Session(-1, 0); err == nil {
		t.Fatal("negative user accepted")
	}
}

func TestSessionInvariants(t *testing.T) {
	for _, kind := range Geometries {
		cfg := DefaultSpec()
		cfg.Geometry.Kind = kind
		g := newTestGenerator(t, cfg)
		for u := 0; u < 300; u++ {
			s, err := g.Session(u, u%5)
			if err != nil {
				t.Fatal(err)
			}
			pi := g.UserProfile(u)
			max := g.MaxContext(pi)
			if s.Profile != g.Profiles()[pi] {
				t.Fatalf("profile %s, want %s", s.Profile, g.Profiles()[pi])
			}
			var segs []Segment
			for k, turn := range s.Turns {
				segs = s.Prompt(segs[:0], k)
				if got := Tokens(segs); got != turn.PromptTokens {
					t.Fatalf("%s user %d turn %d: segments sum to %d, PromptTokens %d", kind, u, k, got, turn.PromptTokens)
				}
				if turn.PromptTokens > max {
					t.Fatalf("%s user %d turn %d: prompt %d above max context %d", kind, u, k, turn.PromptTokens, max)
				}
				if turn.MaxTokens < 1 || turn.ReplyTokens != turn.Reply.Tokens || turn.PromptTokens+turn.MaxTokens > 131072 {
					t.Fatalf("bad output budget in turn %+v", turn)
				}
				if k > 0 && turn.PromptTokens <= s.Turns[k-1].PromptTokens {
					t.Fatalf("turn %d does not grow", k)
				}
			}
			for _, seg := range s.Prefix {
				switch {
				case kind == GeometryNone && seg.Kind != KindUser,
					kind == GeometrySharedSystem && (seg.Kind == KindRoot || seg.Kind == KindTeam):
					t.Fatalf("%s geometry has a %s segment", kind, seg.Kind)
				}
			}
		}
	}
}

func TestProfileShares(t *testing.T) {
	g := newTestGenerator(t, DefaultSpec())
	const users = 2000
	counts := map[string]int{}
	teams := make([]int, 8)
	for u := 0; u < users; u++ {
		counts[g.Profiles()[g.UserProfile(u)]]++
		teams[g.UserTeam(u)]++
	}
	for _, p := range DefaultSpec().Profiles {
		if got := float64(counts[p.Name]) / users; math.Abs(got-p.Weight) > 0.005 {
			t.Errorf("profile %s share %.4f, want %.2f", p.Name, got, p.Weight)
		}
	}
	// Zipf s=1 over 8 teams: team t has share (1/(t+1)) / H_8.
	h8 := 0.0
	for i := 1; i <= 8; i++ {
		h8 += 1 / float64(i)
	}
	for tm, c := range teams {
		want := 1 / float64(tm+1) / h8
		if got := float64(c) / users; math.Abs(got-want) > 0.01 {
			t.Errorf("team %d share %.4f, want %.4f", tm, got, want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string
	}{
		{"no profiles", func(w *Spec) { w.Profiles = nil }, "workload: no profiles"},
		{"bad dist", func(w *Spec) { w.Profiles[0].Growth.Kind = "zipf" }, `workload.profiles[0] (P0).growth: unknown distribution "zipf"`},
		{"bad geometry", func(w *Spec) { w.Geometry.Kind = "ring" }, `workload.geometry.kind: unknown prefix geometry "ring"`},
		{"bad tokenizer", func(w *Spec) { w.Tokenizer = "gpt9" }, `workload.tokenizer: tokenizer "gpt9": unknown tokenizer`},
		{"zero weights", func(w *Spec) {
			for i := range w.Profiles {
				w.Profiles[i].Weight = 0
			}
		}, "workload: profile weights sum to 0"},
	}
	for _, tt := range tests {
		cfg := DefaultSpec()
		cfg.Profiles = append([]Profile(nil), cfg.Profiles...)
		tt.modify(&cfg)
		_, err := New(cfg, 131072)
		if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(tt.want)) {
			t.Errorf("%s: error %v, want prefix %q", tt.name, err, tt.want)
		}
	}
}

package workload

import "testing"

func TestMidSessionJoinsFirstSessionInProgress(t *testing.T) {
	g, err := New(DefaultSpec(), 131072)
	if err != nil {
		t.Fatal(err)
	}
	m := MidSession(g, 7)
	joined := 0
	for u := 0; u < 200; u++ {
		orig, err := g.Session(u, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Session(u, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := len(orig.Turns) - len(got.Turns)
		if k < 0 || len(got.Turns) == 0 {
			t.Fatalf("user %d: %d turns of %d kept", u, len(got.Turns), len(orig.Turns))
		}
		if k > 0 {
			joined++
		}
		// every remaining turn's prompt is exactly the original one
		for i := range got.Turns {
			want := Tokens(orig.Prompt(nil, k+i))
			if have := Tokens(got.Prompt(nil, i)); have != want || got.Turns[i].PromptTokens != orig.Turns[k+i].PromptTokens {
				t.Fatalf("user %d turn %d: prompt %d tokens, want %d", u, i, have, want)
			}
		}
		later, _ := m.Session(u, 1)
		orig1, _ := g.Session(u, 1)
		if len(later.Turns) != len(orig1.Turns) || len(later.Prefix) != len(orig1.Prefix) {
			t.Fatalf("user %d: second session changed", u)
		}
		again, _ := m.Session(u, 0)
		if len(again.Turns) != len(got.Turns) {
			t.Fatalf("user %d: not deterministic", u)
		}
	}
	if joined < 100 {
		t.Errorf("only %d of 200 users joined mid-session", joined)
	}
}

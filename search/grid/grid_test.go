package grid

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/spoc-project/spoc/search"
)

func TestValues(t *testing.T) {
	s := New(3, 0)
	tests := []struct {
		p    search.Param
		want []any
	}{
		{search.Int("a", 1, 4), []any{1, 2, 3, 4}},
		{search.Int("a", 0, 100), []any{0, 50, 100}},
		{search.Float("a", 0, 1), []any{0.0, 0.5, 1.0}},
		{search.FloatLog("a", 1e-4, 1), []any{1e-4, 0.01, 1.0}},
		{search.FloatStep("a", 0.8, 0.9, 0.05), []any{0.8, 0.85, 0.9}},
		{search.Bool("a"), []any{false, true}},
		{search.Categorical("a", "x", "y", "z", "w"), []any{"x", "y", "z", "w"}},
	}
	for _, tt := range tests {
		got := s.Values(tt.p)
		if len(got) != len(tt.want) {
			t.Errorf("%+v: got %v, want %v", tt.p, got, tt.want)
			continue
		}
		for i := range got {
			g, gok := got[i].(float64)
			w, wok := tt.want[i].(float64)
			if gok && wok {
				if d := g - w; d > 1e-12 || d < -1e-12 {
					t.Errorf("%+v: got %v, want %v", tt.p, got, tt.want)
				}
			} else if got[i] != tt.want[i] {
				t.Errorf("%+v: got %v, want %v", tt.p, got, tt.want)
			}
		}
	}
}

func TestVisitsEveryPointOnceThenExhausted(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Int("a", 1, 3), search.Bool("b"), search.Categorical("c", "x", "y")}}
	space = space.WithRule("a_not_3_when_b", func(p search.Params) error {
		if p.Int("a") == 3 && p.Bool("b") {
			return fmt.Errorf("a = 3 with b")
		}
		return nil
	})
	s := New(0, 7)
	var hist []search.Trial
	seen := map[string]bool{}
	for {
		p, err := s.Sample(context.Background(), hist, space)
		if errors.Is(err, search.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[p.Key()] {
			t.Fatalf("point %v proposed twice", p)
		}
		seen[p.Key()] = true
		hist = append(hist, search.Trial{Number: len(hist), Params: p, State: search.StateComplete})
	}
	if len(seen) != 3*2*2-2 {
		t.Fatalf("visited %d points, want 10 (12 minus 2 breaking the rule)", len(seen))
	}
}

func TestSeededOrder(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Int("a", 1, 10), search.Int("b", 1, 10)}}
	first := func(seed uint64) search.Params {
		p, _ := New(0, seed).Sample(context.Background(), nil, space)
		return p
	}
	if !reflect.DeepEqual(first(1), first(1)) {
		t.Fatal("same seed, different order")
	}
	diff := false
	for seed := uint64(2); seed < 10; seed++ {
		if !reflect.DeepEqual(first(1), first(seed)) {
			diff = true
		}
	}
	if !diff {
		t.Fatal("seed does not change the order")
	}
}

func TestTooLarge(t *testing.T) {
	var ps []search.Param
	for i := 0; i < 12; i++ {
		ps = append(ps, search.Float(fmt.Sprintf("x%d", i), 0, 1))
	}
	if _, err := New(10, 0).Sample(context.Background(), nil, search.Space{Params: ps}); err == nil {
		t.Fatal("10^12 grid accepted")
	}
}

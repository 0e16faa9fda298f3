package random

import (
	"context"
	"reflect"
	"testing"

	"github.com/spoc-project/spoc/search"
)

func space() search.Space {
	return search.Space{Params: []search.Param{
		search.IntLog("n", 1, 1024), search.FloatStep("u", 0.8, 0.95, 0.01), search.Bool("b"), search.Categorical("k", "x", "y"),
	}}
}

func draw(s *Sampler, n int) []search.Params {
	var out []search.Params
	var hist []search.Trial
	for i := 0; i < n; i++ {
		p, _ := s.Sample(context.Background(), hist, space())
		out = append(out, p)
		hist = append(hist, search.Trial{Number: i, Params: p, State: search.StateComplete})
	}
	return out
}

func TestReproducible(t *testing.T) {
	a, b, c := draw(New(5), 50), draw(New(5), 50), draw(New(6), 50)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different samples")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same samples")
	}
	for i, p := range a {
		if _, err := space().Check(p); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
}

func TestResampleSameHistoryDiffers(t *testing.T) {
	s := New(1)
	p1, _ := s.Sample(context.Background(), nil, space())
	p2, _ := s.Sample(context.Background(), nil, space())
	if reflect.DeepEqual(p1, p2) {
		t.Fatal("two samples from the same history are identical; rule resampling would loop")
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(1).Sample(ctx, nil, space()); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

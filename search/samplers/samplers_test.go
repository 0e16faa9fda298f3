package samplers

import (
	"testing"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/grid"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/random"
)

func TestNew(t *testing.T) {
	dirs := []search.Direction{search.Minimize, search.Maximize}
	s, err := New("NSGA2", Config{Directions: dirs, PopulationSize: 12, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.(*nsga2.Sampler); !ok || n.Options().PopulationSize != 12 {
		t.Fatalf("nsga2: %T %+v", s, s)
	}
	if s, _ := New("random", Config{}); s == nil {
		t.Fatal("random")
	} else if _, ok := s.(*random.Sampler); !ok {
		t.Fatalf("random: %T", s)
	}
	if s, _ := New("grid", Config{GridPoints: 3}); s == nil {
		t.Fatal("grid")
	} else if _, ok := s.(*grid.Sampler); !ok {
		t.Fatalf("grid: %T", s)
	}
	if _, err := New("tpe", Config{}); err == nil {
		t.Fatal("unknown sampler accepted")
	}
	if _, err := New("nsga2", Config{}); err == nil {
		t.Fatal("nsga2 without directions accepted")
	}
}

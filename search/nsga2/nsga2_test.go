package nsga2

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
)

var twoMin = []search.Direction{search.Minimize, search.Minimize}

func mustNew(t testing.TB, opt Options) *Sampler {
	t.Helper()
	if opt.Directions == nil {
		opt.Directions = twoMin
	}
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewValidates(t *testing.T) {
	bad := []Options{
		{},
		{Directions: twoMin, PopulationSize: 1},
		{Directions: twoMin, Crossover: "pmx"},
		{Directions: twoMin, CrossoverProb: 1.5},
		{Directions: twoMin, MutationProb: -0.1},
		{Directions: twoMin, SBXEta: -1},
	}
	for i, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("case %d: %+v accepted", i, o)
		}
	}
	s := mustNew(t, Options{})
	if o := s.Options(); o.PopulationSize != DefaultPopulationSize || o.Crossover != Uniform || o.MutationEta != DefaultMutationEta {
		t.Errorf("defaults not applied: %+v", o)
	}
}

func trial(n, gen int, state search.TrialState, values ...float64) search.Trial {
	return search.Trial{Number: n, Generation: gen, State: state, Values: values,
		Params:   search.Params{"x": float64(n) / 100},
		Complete: time.Unix(int64(n), 0)}
}

func TestGeneration(t *testing.T) {
	s := mustNew(t, Options{PopulationSize: 3})
	C, F, R := search.StateComplete, search.StateFail, search.StateRunning
	tests := []struct {
		name    string
		history []search.Trial
		want    int
	}{
		{"empty", nil, 0},
		{"gen 0 filling", []search.Trial{trial(0, 0, C), trial(1, 0, C)}, 0},
		{"failures do not count", []search.Trial{trial(0, 0, C), trial(1, 0, F), trial(2, 0, R), trial(3, 0, C)}, 0},
		{"gen 0 full", []search.Trial{trial(0, 0, C), trial(1, 0, F), trial(2, 0, C), trial(3, 0, C)}, 1},
		{"straggler of gen 0 after gen 1 began", []search.Trial{trial(0, 0, C), trial(1, 0, C), trial(2, 0, C), trial(3, 1, C), trial(4, 0, C)}, 1},
		{"gen 1 full", []search.Trial{trial(0, 0, C), trial(1, 0, C), trial(2, 0, C), trial(3, 1, C), trial(4, 1, C), trial(5, 1, C)}, 2},
	}
	for _, tt := range tests {
		if got := s.Generation(tt.history); got != tt.want {
			t.Errorf("%s: Generation = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCrowdingHandComputed(t *testing.T) {
	trials := []search.Trial{
		{Values: []float64{0, 4}},
		{Values: []float64{1, 2}},
		{Values: []float64{3, 1}},
		{Values: []float64{4, 0}},
	}
	got := crowding(trials, []int{0, 1, 2, 3}, twoMin)
	// Interior point 1: (3-0)/4 + (4-1)/4 = 1.5; point 2: (4-1)/4 + (2-0)/4 = 1.25.
	want := []float64{math.Inf(1), 1.5, 1.25, math.Inf(1)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("crowding = %v, want %v", got, want)
	}
}

func TestEliteConstrainedAndCrowded(t *testing.T) {
	s := mustNew(t, Options{PopulationSize: 3})
	trials := []search.Trial{
		{Number: 0, Values: []float64{0, 0}, Constraints: []float64{5}},      // infeasible, superb values
		{Number: 1, Values: []float64{0, 10}, Constraints: []float64{-1}},    // front 0 boundary
		{Number: 2, Values: []float64{10, 0}, Constraints: []float64{0}},     // front 0 boundary
		{Number: 3, Values: []float64{5, 5}, Constraints: []float64{-2}},     // front 0, interior
		{Number: 4, Values: []float64{4.9, 5.2}, Constraints: []float64{-2}}, // front 0, crowded next to 3
		{Number: 5, Values: []float64{0, 0}, Constraints: []float64{1}},      // infeasible, less violation
	}
	by := map[int]*search.Trial{}
	for i := range trials {
		by[trials[i].Number] = &trials[i]
	}
	got, err := s.elite([]int{0, 1, 2, 3, 4, 5}, by)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, m := range got {
		nums = append(nums, m.number)
		if m.rank != 0 {
			t.Errorf("trial %d has rank %d", m.number, m.rank)
		}
	}
	// Boundaries 1 and 2 (infinite crowding), then the less crowded of 3 and
	// 4. By f1 the order is 1, 4, 3, 2 and by f2 it is 2, 3, 4, 1, so
	// trial 3: (10-4.9)/10 + (5.2-0)/10 = 1.03; trial 4: (5-0)/10 + (10-5)/10 = 1.0.
	want := []int{1, 2, 3}
	if !sameSet(nums, want) {
		t.Fatalf("elite = %v, want %v", nums, want)
	}
	// With room for five, infeasible 5 (smaller violation) precedes 0.
	s5 := mustNew(t, Options{PopulationSize: 5})
	got, _ = s5.elite([]int{0, 1, 2, 3, 4, 5}, by)
	nums = nums[:0]
	for _, m := range got {
		nums = append(nums, m.number)
	}
	if !sameSet(nums, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("elite of 5 = %v", nums)
	}
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func catSpace() search.Space {
	return search.Space{Params: []search.Param{
		search.Categorical("c", "a", "b", "poison"),
		search.Float("x", 0, 1),
		search.IntLog("n", 1, 1024),
	}}
}

// TestFailedTrialsNeverParents builds a generation in which only COMPLETE
// trials avoid a poison value; children must never inherit it.
func TestFailedTrialsNeverParents(t *testing.T) {
	s := mustNew(t, Options{PopulationSize: 4, MutationProb: 1e-300})
	var hist []search.Trial
	add := func(state search.TrialState, c string, v ...float64) {
		n := len(hist)
		hist = append(hist, search.Trial{Number: n, State: state, Values: v,
			Params:   search.Params{"c": c, "x": 0.5, "n": 8},
			Complete: time.Unix(int64(n), 0)})
	}
	add(search.StateFail, "poison")
	add(search.StateComplete, "a", 1, 2)
	add(search.StateInfeasible, "poison")
	add(search.StateComplete, "b", 2, 1)
	add(search.StateComplete, "a", 3, 3)
	add(search.StatePruned, "poison", 0, 0)
	add(search.StateComplete, "b", 0.5, 4)
	for i := 0; i < 300; i++ {
		p, err := s.Sample(context.Background(), hist, catSpace())
		if err != nil {
			t.Fatal(err)
		}
		if p["c"] == "poison" {
			t.Fatalf("child %d inherited from a non-COMPLETE trial: %v", i, p)
		}
	}
}

func TestReproducibleBySeed(t *testing.T) {
	run := func(seed uint64) []string {
		s := mustNew(t, Options{PopulationSize: 6, Seed: seed})
		var hist []search.Trial
		var keys []string
		for i := 0; i < 40; i++ {
			gen := s.Generation(hist)
			p, err := s.Sample(context.Background(), hist, catSpace())
			if err != nil {
				t.Fatal(err)
			}
			x := p.Float("x")
			v := []float64{x, 1 - math.Sqrt(x) + float64(p.Int("n"))/1024}
			hist = append(hist, search.Trial{Number: i, Params: p, Values: v, State: search.StateComplete, Generation: gen, Complete: time.Unix(int64(i), 0)})
			keys = append(keys, p.Key())
		}
		return keys
	}
	a, b, c := run(42), run(42), run(43)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different trials")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave identical trials")
	}
}

// TestResumeMatchesUninterrupted checks that a fresh Sampler (a restarted
// process) proposes what the original would have from the same history.
func TestResumeMatchesUninterrupted(t *testing.T) {
	s1 := mustNew(t, Options{PopulationSize: 4, Seed: 9})
	var hist []search.Trial
	for i := 0; i < 20; i++ {
		gen := s1.Generation(hist)
		p, _ := s1.Sample(context.Background(), hist, catSpace())
		hist = append(hist, search.Trial{Number: i, Params: p, Values: []float64{p.Float("x"), 1 - p.Float("x")}, State: search.StateComplete, Generation: gen, Complete: time.Unix(int64(i), 0)})
	}
	want, _ := s1.Sample(context.Background(), hist, catSpace())
	s2 := mustNew(t, Options{PopulationSize: 4, Seed: 9})
	got, _ := s2.Sample(context.Background(), hist, catSpace())
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed sampler proposed %v, uninterrupted %v", got, want)
	}
}

func TestChildStaysInSpace(t *testing.T) {
	space := search.Space{Params: []search.Param{
		search.IntStep("s", 16, 512, 16), search.FloatLog("l", 1e-4, 1), search.FloatStep("f", 0.8, 0.95, 0.01),
		search.Bool("b"), search.Categorical("k", 1, 2, 4),
	}}
	for _, cx := range []Crossover{Uniform, SBX} {
		s := mustNew(t, Options{PopulationSize: 5, Crossover: cx, MutationProb: 0.5})
		var hist []search.Trial
		for i := 0; i < 300; i++ {
			gen := s.Generation(hist)
			p, err := s.Sample(context.Background(), hist, space)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := space.Check(p); err != nil {
				t.Fatalf("%s: trial %d %v: %v", cx, i, p, err)
			}
			hist = append(hist, search.Trial{Number: i, Params: p, Values: []float64{p.Float("l"), p.Float("f")}, State: search.StateComplete, Generation: gen, Complete: time.Unix(int64(i), 0)})
		}
	}
}

// BenchmarkSample2000 measures the sampler's overhead per trial with 2,000
// completed trials in the study (50 generations of 40), for 8 and 30
// parameters: "warm" is the steady state of a running study, "cold" a
// freshly started process (resume) rebuilding every generation's parents.
func BenchmarkSample2000(b *testing.B) {
	for _, dims := range []int{8, 30} {
		space := search.Space{}
		for i := 0; i < dims; i++ {
			space.Params = append(space.Params, search.Float(fmt.Sprintf("x%02d", i), 0, 1))
		}
		s := mustNew(b, Options{PopulationSize: 40, Seed: 1})
		var hist []search.Trial
		for i := 0; i < 2000; i++ {
			gen := s.Generation(hist)
			p, err := s.Sample(context.Background(), hist, space)
			if err != nil {
				b.Fatal(err)
			}
			hist = append(hist, search.Trial{Number: i, Params: p, Values: []float64{p.Float("x00"), 1 - p.Float("x00") + p.Float("x01")}, State: search.StateComplete, Generation: gen, Complete: time.Unix(int64(i), 0)})
		}
		b.Run(fmt.Sprintf("params=%d/warm", dims), func(b *testing.B) {
			for b.Loop() {
				s.Generation(hist)
				if _, err := s.Sample(context.Background(), hist, space); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("params=%d/cold", dims), func(b *testing.B) {
			for b.Loop() {
				fresh := mustNew(b, Options{PopulationSize: 40, Seed: 1})
				fresh.Generation(hist)
				if _, err := fresh.Sample(context.Background(), hist, space); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConcurrentSample shares one Sampler between goroutines, as workers of
// one process do; run with -race.
func TestConcurrentSample(t *testing.T) {
	s := mustNew(t, Options{PopulationSize: 4, Seed: 2})
	var hist []search.Trial
	for i := 0; i < 12; i++ {
		gen := s.Generation(hist)
		p, _ := s.Sample(context.Background(), hist, catSpace())
		hist = append(hist, search.Trial{Number: i, Params: p, Values: []float64{p.Float("x"), 1 - p.Float("x")}, State: search.StateComplete, Generation: gen, Complete: time.Unix(int64(i), 0)})
	}
	fresh := mustNew(t, Options{PopulationSize: 4, Seed: 2})
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := fresh.Sample(context.Background(), hist, catSpace())
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

package search

import (
	"reflect"
	"testing"
)

func TestDominates(t *testing.T) {
	tests := []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 1}, []float64{2, 2}, true},
		{[]float64{1, 2}, []float64{2, 2}, true},
		{[]float64{2, 2}, []float64{2, 2}, false},
		{[]float64{1, 3}, []float64{2, 2}, false},
		{[]float64{3, 3}, []float64{2, 2}, false},
	}
	for _, tt := range tests {
		if got := Dominates(tt.a, tt.b); got != tt.want {
			t.Errorf("Dominates(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestConstrainedDominates(t *testing.T) {
	dirs := []Direction{Minimize, Minimize}
	feasGood := &Trial{Values: []float64{1, 1}, Constraints: []float64{-1}}
	feasBad := &Trial{Values: []float64{2, 2}, Constraints: []float64{0}}
	infeasSmall := &Trial{Values: []float64{0, 0}, Constraints: []float64{0.5, -3}}
	infeasLarge := &Trial{Values: []float64{0, 0}, Constraints: []float64{0.5, 2}}
	tests := []struct {
		name string
		a, b *Trial
		want bool
	}{
		{"feasible pareto", feasGood, feasBad, true},
		{"feasible pareto reverse", feasBad, feasGood, false},
		{"feasible beats infeasible with better values", feasBad, infeasSmall, true},
		{"infeasible never beats feasible", infeasSmall, feasBad, false},
		{"smaller violation wins", infeasSmall, infeasLarge, true},
		{"larger violation loses", infeasLarge, infeasSmall, false},
	}
	for _, tt := range tests {
		if got := ConstrainedDominates(tt.a, tt.b, dirs); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSortTrials(t *testing.T) {
	dirs := []Direction{Minimize, Maximize}
	trials := []Trial{
		{Values: []float64{1, 5}},                            // 0: front 0
		{Values: []float64{2, 6}},                            // 1: front 0 (trade-off)
		{Values: []float64{2, 4}},                            // 2: dominated by 0 → front 1
		{Values: []float64{3, 3}},                            // 3: dominated by 2 → front 2
		{Values: []float64{0, 9}, Constraints: []float64{1}}, // 4: infeasible → after all feasible
		{Values: []float64{0, 9}, Constraints: []float64{2}}, // 5: more violation → last
	}
	got := SortTrials(trials, dirs)
	want := [][]int{{0, 1}, {2}, {3}, {4}, {5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SortTrials = %v, want %v", got, want)
	}
}

func TestParetoFront(t *testing.T) {
	dirs := []Direction{Minimize, Minimize}
	trials := []Trial{
		{Number: 0, State: StateComplete, Values: []float64{1, 3}},
		{Number: 1, State: StateComplete, Values: []float64{3, 1}},
		{Number: 2, State: StateComplete, Values: []float64{3, 3}},
		{Number: 3, State: StateRunning},
		{Number: 4, State: StateComplete, Values: []float64{0, 0}, Constraints: []float64{0.1}},
		{Number: 5, State: StateComplete, Values: []float64{1, 3}},
	}
	var got []int
	for _, tr := range ParetoFront(trials, dirs) {
		got = append(got, tr.Number)
	}
	if want := []int{0, 1, 5}; !reflect.DeepEqual(got, want) {
		t.Fatalf("front = %v, want %v", got, want)
	}
}

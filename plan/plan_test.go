package plan

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/spoc-project/spoc/search"
)

func TestChooseRules(t *testing.T) {
	base := Candidate{Trial: -1, Ceiling: 100}
	tuned := Candidate{Trial: 3, Ceiling: 100}
	if better("highest-ceiling", tuned, base, 2000, 1000) {
		t.Error("a tie on the ceiling must keep the baseline")
	}
	tuned.Ceiling = 110
	if !better("highest-ceiling", tuned, base, 900, 1000) {
		t.Error("a higher ceiling must win")
	}
	if better("max-throughput", tuned, base, 900, 1000) {
		t.Error("max-throughput must follow throughput at the ceiling")
	}
}

func TestTieBreakByFullSweep(t *testing.T) {
	cands := []Candidate{{Trial: -1, Ceiling: 175}, {Trial: 17, Ceiling: 175}, {Trial: 5, Ceiling: 150}, {Trial: 24, Ceiling: 175}}
	tied := tiedAtTop("highest-ceiling", cands)
	if !slices.Equal(tied, []int{0, 1, 3}) {
		t.Fatalf("tied %v, want [0 1 3]", tied)
	}
	if tiedAtTop("max-throughput", cands) != nil {
		t.Error("max-throughput has no ceiling ties to break")
	}
	full := map[int]int{0: 156, 1: 162, 3: 159}
	var ran []int
	w, err := breakTie(cands, tied, func(i int) (int, string, error) {
		ran = append(ran, i)
		return full[i], "P2 ttft", nil
	})
	if err != nil || w != 1 || !slices.Equal(ran, tied) {
		t.Fatalf("winner %d (ran %v, err %v), want trial #17 at index 1", w, ran, err)
	}
	if cands[0].FullCeiling != 156 || cands[3].FullCeiling != 159 || cands[2].FullCeiling != 0 {
		t.Errorf("full ceilings not recorded: %+v", cands)
	}
	// A tie again keeps the earlier candidate (the baseline).
	full = map[int]int{0: 160, 1: 160, 3: 158}
	if w, _ := breakTie(cands, tied, func(i int) (int, string, error) { return full[i], "", nil }); w != 0 {
		t.Errorf("equal full sweeps chose %d, want the baseline", w)
	}
	// An infeasible candidate drops out; other errors stop the plan.
	w, err = breakTie(cands, tied, func(i int) (int, string, error) {
		if i == 1 {
			return 0, "", fmt.Errorf("weights: %w", search.ErrInfeasible)
		}
		return 150 + i, "", nil
	})
	if err != nil || w != 3 {
		t.Errorf("with #17 infeasible: winner %d, %v; want index 3", w, err)
	}
	if _, err := breakTie(cands, tied, func(int) (int, string, error) { return 0, "", errors.New("boom") }); err == nil {
		t.Error("a failing full sweep was ignored")
	}
	if _, err := breakTie(cands, tied, func(int) (int, string, error) { return 0, "", search.ErrInfeasible }); err == nil {
		t.Error("all tied candidates infeasible: no error")
	}
}

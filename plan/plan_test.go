package plan

import "testing"

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

package plan

import (
	"math"
	"reflect"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/vllm"
)

// A flag one side leaves unset runs at the engine's default: the change
// shows that value and says where it came from, and a flag set to the
// engine's default on one side and unset on the other is no change, nor is
// a setting vLLM treats as another (a long-prefill threshold at or above the
// batch budget is off, like the default 0).
func TestChangedFlagsShowEffectiveValues(t *testing.T) {
	def := map[string]any{"max-num-batched-tokens": 8192, "block-size": 16}
	tuned := map[string]any{"max-num-batched-tokens": 1582, "block-size": 16,
		"async-scheduling":             true,  // engine default false
		"long-prefill-token-threshold": 8192,  // ≥ the budget: off, the engine default 0
		"max-num-seqs":                 128,   // engine default 256
		"enforce-eager":                false, // the engine's default: no change
		"some-unknown-flag":            3,     // no known default
	}
	got := changedFlags(def, tuned, vllm.Defaults())
	want := []FlagChange{
		{Flag: "async-scheduling", Default: false, DefaultIsEngineDefault: true, Tuned: true},
		{Flag: "max-num-batched-tokens", Default: 8192, Tuned: 1582},
		{Flag: "max-num-seqs", Default: 256, DefaultIsEngineDefault: true, Tuned: 128},
		{Flag: "some-unknown-flag", Tuned: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedFlags:\n got %+v\nwant %+v", got, want)
	}
	// a threshold below the budget is a change
	got = changedFlags(def, map[string]any{"max-num-batched-tokens": 8192, "block-size": 16, "long-prefill-token-threshold": 512}, vllm.Defaults())
	want = []FlagChange{{Flag: "long-prefill-token-threshold", Default: 0, DefaultIsEngineDefault: true, Tuned: 512}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedFlags, threshold below the budget:\n got %+v\nwant %+v", got, want)
	}
	// and the other way round: the tuned side leaves a flag to the engine
	got = changedFlags(map[string]any{"max-num-seqs": 77}, map[string]any{}, vllm.Defaults())
	want = []FlagChange{{Flag: "max-num-seqs", Default: 77, Tuned: 256, TunedIsEngineDefault: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedFlags, tuned unset:\n got %+v\nwant %+v", got, want)
	}
}

// A tie on the ceiling is explained on the chosen candidate and on each
// one it tied with; candidates that did not tie say nothing.
func TestExplainTies(t *testing.T) {
	cands := []Candidate{
		{Trial: -1, Ceiling: 162},
		{Trial: 28, Ceiling: 156, StudyThroughput: 9100},
		{Trial: 27, Ceiling: 165, StudyThroughput: 9050},
		{Trial: 58, Ceiling: 165, StudyThroughput: 8800},
	}
	explainTies("max-ceiling", cands, 2)
	for i, want := range []string{
		"", "",
		"chosen on a tie at 165 users with trial #58: a tie goes to the higher study throughput",
		"tied with trial #27 at 165 users; not chosen: a tie goes to the higher study throughput (9050 vs 8800 tok/s)",
	} {
		if cands[i].TieBreak != want {
			t.Errorf("candidate %d: tie-break %q, want %q", cands[i].Trial, cands[i].TieBreak, want)
		}
	}
	// engine.params win a tie
	cands = []Candidate{{Trial: -1, Ceiling: 150}, {Trial: 3, Ceiling: 150, StudyThroughput: 9000}}
	explainTies("max-ceiling", cands, 0)
	if want := "chosen on a tie at 150 users with trial #3: a tie keeps the configured flags"; cands[0].TieBreak != want {
		t.Errorf("baseline tie-break %q, want %q", cands[0].TieBreak, want)
	}
	if want := "tied with engine.params (baseline) at 150 users; not chosen: a tie keeps the configured flags"; cands[1].TieBreak != want {
		t.Errorf("trial tie-break %q, want %q", cands[1].TieBreak, want)
	}
	// no tie, nothing said
	cands = []Candidate{{Trial: -1, Ceiling: 150}, {Trial: 3, Ceiling: 156}}
	explainTies("max-ceiling", cands, 1)
	if cands[0].TieBreak != "" || cands[1].TieBreak != "" {
		t.Errorf("tie-breaks without a tie: %+v", cands)
	}
}

// TestChangedFlagsUseTheFlavorsDefaults: on SGLang an unset flag runs at
// SGLang's default (schedule-policy fcfs), not at a vLLM one; a generic
// server that declares no defaults has none to show.
func TestChangedFlagsUseTheFlavorsDefaults(t *testing.T) {
	sg := map[string]any{"schedule-policy": "fcfs", "max-prefill-tokens": 16384}
	got := changedFlags(map[string]any{}, map[string]any{"schedule-policy": "lpm", "max-prefill-tokens": 16384, "max-num-seqs": 256}, sg)
	want := []FlagChange{
		{Flag: "max-num-seqs", Tuned: 256},
		{Flag: "schedule-policy", Default: "fcfs", DefaultIsEngineDefault: true, Tuned: "lpm"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changed %+v\nwant %+v", got, want)
	}
	if got := changedFlags(map[string]any{}, map[string]any{"seqs": 8}, nil); len(got) != 1 || got[0].DefaultIsEngineDefault {
		t.Errorf("no defaults: %+v", got)
	}
}

// An interval the runs leave open above has no precision to print: the
// text says so instead of "±NaN %" or "±+Inf %".
func TestPrecisionText(t *testing.T) {
	for _, tc := range []struct {
		e    capacity.CapacityEstimate
		want string
	}{
		{capacity.CapacityEstimate{Users: 168, Lo: 154, Hi: 175, Bounded: true, Precision: 0.0625}, "±6.2 %"},
		{capacity.CapacityEstimate{Users: 168, Lo: 154, Hi: capacity.InfFloat(math.Inf(1)), Precision: capacity.InfFloat(math.Inf(1))}, "none (the interval is open above)"},
	} {
		if got := PrecisionText(&tc.e); got != tc.want {
			t.Errorf("PrecisionText(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

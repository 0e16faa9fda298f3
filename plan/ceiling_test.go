package plan

import (
	"reflect"
	"testing"
)

// A flag one side leaves unset runs at the engine's default: the change
// shows that value and says where it came from, and a flag set to the
// engine's default on one side and unset on the other is no change.
func TestChangedFlagsShowEffectiveValues(t *testing.T) {
	def := map[string]any{"max-num-batched-tokens": 8192, "block-size": 16}
	tuned := map[string]any{"max-num-batched-tokens": 1582, "block-size": 16,
		"async-scheduling":             true,  // engine default false
		"long-prefill-token-threshold": 8192,  // engine default 0
		"enforce-eager":                false, // the engine's default: no change
		"some-unknown-flag":            3,     // no known default
	}
	got := changedFlags(def, tuned)
	want := []FlagChange{
		{Flag: "async-scheduling", Default: false, DefaultIsEngineDefault: true, Tuned: true},
		{Flag: "long-prefill-token-threshold", Default: 0, DefaultIsEngineDefault: true, Tuned: 8192},
		{Flag: "max-num-batched-tokens", Default: 8192, Tuned: 1582},
		{Flag: "some-unknown-flag", Tuned: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedFlags:\n got %+v\nwant %+v", got, want)
	}
	// and the other way round: the tuned side leaves a flag to the engine
	got = changedFlags(map[string]any{"max-num-seqs": 77}, map[string]any{})
	want = []FlagChange{{Flag: "max-num-seqs", Default: 77, Tuned: 256, TunedIsEngineDefault: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedFlags, tuned unset:\n got %+v\nwant %+v", got, want)
	}
}

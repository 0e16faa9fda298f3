package plan

import (
	"reflect"
	"testing"

	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/workload"
)

// A roofline batch priced without the plan's measurements says which
// fields were assumed; measured ones are not.
func TestBatchMixNamesAssumptions(t *testing.T) {
	p := &planner{sum: &Summary{}}
	mix := p.batchMix()
	if want := []string{"decode_seqs", "decode_context", "prefill_context", "prefill_tokens"}; !reflect.DeepEqual(mix.Assumed, want) {
		t.Errorf("nothing measured: assumed %v, want %v", mix.Assumed, want)
	}
	sig := &telemetry.Signals{}
	sig.Engine.Running.Mean = 40
	p.sum.Telemetry = sig
	p.sum.Workload = &workload.Inspection{Requests: 10}
	p.sum.Workload.Prefix.PromptTokens = 150000
	mix = p.batchMix()
	if mix.DecodeSeqs != 40 || mix.DecodeContext != 15000 || !reflect.DeepEqual(mix.Assumed, []string{"prefill_tokens"}) {
		t.Errorf("telemetry and workload measured: %+v, want 40 sequences over 15000 tokens, only the prefill chunk assumed", mix)
	}
}

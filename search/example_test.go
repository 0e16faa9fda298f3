package search_test

import (
	"fmt"

	"github.com/spoc-project/spoc/search"
)

func ExampleHypervolume() {
	// Three trade-off points, both objectives minimised, reference (4, 4).
	hv, _ := search.Hypervolume([][]float64{{1, 3}, {2, 2}, {3, 1}}, []float64{4, 4})
	fmt.Println(hv)
	// Output: 6
}

func ExampleSpace_Check() {
	space := search.Space{Params: []search.Param{
		search.IntStep("max_num_seqs", 16, 2048, 16),
		search.IntLog("max_num_batched_tokens", 512, 16384),
	}}
	space = space.WithRule("batched_tokens_ge_seqs", func(p search.Params) error {
		if p.Int("max_num_batched_tokens") < p.Int("max_num_seqs") {
			return fmt.Errorf("%d < %d", p.Int("max_num_batched_tokens"), p.Int("max_num_seqs"))
		}
		return nil
	})
	_, err := space.Check(search.Params{"max_num_seqs": 2048, "max_num_batched_tokens": 1000})
	fmt.Println(err)
	_, err = space.Check(search.Params{"max_num_seqs": 500, "max_num_batched_tokens": 1000})
	fmt.Println(err)
	// Output:
	// rule "batched_tokens_ge_seqs": 1000 < 2048
	// parameter "max_num_seqs": 500 is not on the step grid 16 + k·16
}

func ExampleParetoFront() {
	dirs := []search.Direction{search.Maximize, search.Minimize} // throughput, latency
	trials := []search.Trial{
		{Number: 0, State: search.StateComplete, Values: []float64{100, 2.0}},
		{Number: 1, State: search.StateComplete, Values: []float64{80, 1.0}},
		{Number: 2, State: search.StateComplete, Values: []float64{70, 1.5}},                               // dominated by 1
		{Number: 3, State: search.StateComplete, Values: []float64{200, 0.5}, Constraints: []float64{0.3}}, // breaks the SLA
	}
	for _, t := range search.ParetoFront(trials, dirs) {
		fmt.Println(t.Number, t.Values)
	}
	// Output:
	// 0 [100 2]
	// 1 [80 1]
}

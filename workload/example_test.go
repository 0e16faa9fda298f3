package workload_test

import (
	"fmt"

	"github.com/spoc-project/spoc/workload"
)

// A session script is lengths and keys only; Render turns a segment into
// text of exactly its token count.
func ExampleGenerator_Session() {
	g, err := workload.New(workload.DefaultSpec(), 131072)
	if err != nil {
		panic(err)
	}
	s, err := g.Session(0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("profile", s.Profile, "team", s.Team)
	for _, seg := range s.Prefix {
		fmt.Println(seg.Kind, seg.Tokens)
	}
	first, last := s.Turns[0], s.Turns[len(s.Turns)-1]
	fmt.Println("turns", len(s.Turns), "first prompt", first.PromptTokens, "last prompt", last.PromptTokens)
	// Output:
	// profile P0 team 0
	// system 1500
	// root 1453
	// team 872
	// user 581
	// turns 21 first prompt 5874 last prompt 45710
}

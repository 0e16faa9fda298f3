package workload

import (
	"bytes"
	"context"
	"testing"

	"github.com/spoc-project/spoc/corpus"
)

// TestBuiltCorpusTokenExact: a workload rendering from a corpus built by
// corpus.Build (from trajectory parquet) keeps segments token-exact.
func TestBuiltCorpusTokenExact(t *testing.T) {
	tok := testTokenizer(t)
	trajs, err := corpus.Synthesize(5, 8, corpus.DefaultSyntheticSpec, tok)
	if err != nil {
		t.Fatal(err)
	}
	var pq bytes.Buffer
	if err := corpus.WriteParquet(&pq, corpus.DatasetSWERebench, trajs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := dir + "/trajectories.parquet"
	if err := writeFile(path, pq.Bytes()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := corpus.Build(context.Background(), []corpus.Source{{Dataset: corpus.DatasetSWERebench, Path: path}}, &out, corpus.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := corpus.Read(&out, "built")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(DefaultSpec(), 131072, WithCorpus(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []int{0, 3} {
		s, _ := g.Session(u, 0)
		segs := s.Prompt(nil, min(3, len(s.Turns)-1))
		var prompt []byte
		for _, seg := range segs {
			n0 := len(prompt)
			if prompt, err = g.Render(prompt, seg); err != nil {
				t.Fatal(err)
			}
			if got := count(t, tok, prompt[n0:]); got != seg.Tokens {
				t.Fatalf("user %d %s segment: %d tokens, want %d", u, seg.Kind, got, seg.Tokens)
			}
		}
		if got, want := count(t, tok, prompt), Tokens(segs); got != want {
			t.Fatalf("user %d prompt: %d tokens, want %d", u, got, want)
		}
	}
}

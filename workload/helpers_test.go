package workload

import (
	"os"
	"sync"
	"testing"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

func testCorpus() *corpus.Corpus { return corpus.Builtin() }

// sharedText is the built-in corpus prepared once for all tests.
var sharedText = sync.OnceValues(func() (*Text, error) {
	tok, err := tokenizer.New(tokenizer.O200kBase)
	if err != nil {
		return nil, err
	}
	return NewText(corpus.Builtin(), tok)
})

func testText(t testing.TB) *Text {
	t.Helper()
	txt, err := sharedText()
	if err != nil {
		t.Fatal(err)
	}
	return txt
}

// newTestGenerator builds a generator on the reference model context limit.
func newTestGenerator(t testing.TB, cfg Spec) *Generator {
	t.Helper()
	g, err := New(cfg, 131072, WithText(testText(t)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func count(t testing.TB, tok *tokenizer.Tokenizer, b []byte) int {
	t.Helper()
	n, err := tok.Count(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

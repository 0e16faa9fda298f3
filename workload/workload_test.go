package workload

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/spoc-project/spoc/corpus"
)

func TestOpenImport(t *testing.T) {
	cfg := DefaultSpec()
	cfg.Import = &Import{Format: FormatMooncake, Path: "testdata/mooncake_trace.jsonl"}
	w, err := Open(cfg, 131072)
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Session(0, 0)
	if err != nil || s.Turns[0].PromptTokens != 1300 {
		t.Fatalf("session %+v, %v", s, err)
	}
	cfg.Import = &Import{Format: FormatAIPerf, Path: "testdata/missing.jsonl"}
	if _, err := Open(cfg, 131072); err == nil {
		t.Fatal("missing trace accepted")
	}
	cfg.Import = nil
	if w, err := Open(cfg, 131072, WithText(testText(t))); err != nil {
		t.Fatal(err)
	} else if _, ok := w.(*Generator); !ok {
		t.Fatalf("Open without import gave %T", w)
	}
}

// TestConcurrentUse runs Session and Render from several goroutines (run
// with -race).
func TestConcurrentUse(t *testing.T) {
	g := newTestGenerator(t, DefaultSpec())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for u := w; u < 40; u += 4 {
				s, err := g.Session(u, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := g.Render(nil, s.Turns[0].NewContent[0]); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

func TestCorpusFileFromConfig(t *testing.T) {
	path := t.TempDir() + "/corpus.jsonl"
	var buf bytes.Buffer
	if err := corpus.Write(&buf, corpus.Generate(99, 6)); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(path, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultSpec()
	cfg.Corpus = path
	g, err := New(cfg, 131072)
	if err != nil {
		t.Fatal(err)
	}
	seg := Segment{Kind: KindUser, Key: 7, Tokens: 1234}
	b, err := g.Render(nil, seg)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, testTokenizer(t), b); n != 1234 {
		t.Fatalf("rendered %d tokens from the corpus file, want 1234", n)
	}
	// A missing corpus file fails New, naming the field and the file, not
	// the first Render in the middle of a run.
	cfg.Corpus = path + ".missing"
	if _, err := New(cfg, 131072); err == nil || !strings.Contains(err.Error(), "workload.corpus") || !strings.Contains(err.Error(), cfg.Corpus) {
		t.Fatalf("missing corpus file: New error %v, want one naming workload.corpus and %s", err, cfg.Corpus)
	}
	// A corpus that exists but is malformed still fails at the first Render.
	if err := writeFile(path, []byte("not json\n")); err != nil {
		t.Fatal(err)
	}
	cfg.Corpus = path
	g, err = New(cfg, 131072)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Render(nil, seg); err == nil || !strings.Contains(err.Error(), "workload.corpus") {
		t.Fatalf("malformed corpus file: Render error %v", err)
	}
}

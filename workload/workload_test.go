package workload

import (
	"sync"
	"testing"

	"github.com/spoc-project/spoc/config"
)

func TestOpenImport(t *testing.T) {
	cfg := config.DefaultWorkload()
	cfg.Import = &config.Import{Format: FormatMooncake, Path: "testdata/mooncake_trace.jsonl"}
	w, err := Open(cfg, 131072)
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Session(0, 0)
	if err != nil || s.Turns[0].PromptTokens != 1300 {
		t.Fatalf("session %+v, %v", s, err)
	}
	cfg.Import = &config.Import{Format: FormatAIPerf, Path: "testdata/missing.jsonl"}
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
	g := newTestGenerator(t, config.DefaultWorkload())
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

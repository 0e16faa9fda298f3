package workload

import (
	"context"
	"testing"
)

// BenchmarkSessions10k generates the scripts (lengths and segment layout) of
// 10,000 sessions; sessions/s is reported.
func BenchmarkSessions10k(b *testing.B) {
	g := newTestGenerator(b, DefaultSpec())
	b.ReportAllocs()
	for b.Loop() {
		for u := 0; u < 10000; u++ {
			if _, err := g.Session(u, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "sessions/s")
}

// BenchmarkRender100k materialises one prompt of about 100,000 tokens (the
// last turn of a P1 session).
func BenchmarkRender100k(b *testing.B) {
	g := newTestGenerator(b, DefaultSpec())
	var segs []Segment
	for u := 0; ; u++ {
		s, _ := g.Session(u, 0)
		for k := range s.Turns {
			if s.Turns[k].PromptTokens >= 100000 {
				segs = s.Prompt(nil, k)
				break
			}
		}
		if segs != nil {
			break
		}
	}
	b.ReportMetric(float64(Tokens(segs)), "tokens")
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		var err error
		for _, seg := range segs {
			if buf, err = g.Render(buf, seg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkInspect2000 is spoc workload inspect --sessions 2000 without
// printing.
func BenchmarkInspect2000(b *testing.B) {
	g := newTestGenerator(b, DefaultSpec())
	for b.Loop() {
		if _, err := Inspect(context.Background(), g, InspectOptions{Sessions: 2000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareText chunks and counts the built-in corpus (once per
// process, on the first Render).
func BenchmarkPrepareText(b *testing.B) {
	tok := testText(b).Tokenizer()
	c := testCorpus()
	for b.Loop() {
		if _, err := NewText(c, tok); err != nil {
			b.Fatal(err)
		}
	}
}

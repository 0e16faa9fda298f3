package sim

import (
	"errors"
	"math"
	"testing"
)

// testCost makes step time easy to compute by hand: 10 ms per step plus 1 ms
// per new token.
var testCost = LinearCost{StepSeconds: 0.010, TokenSeconds: 0.001}

func newTestEngine(t *testing.T, mod func(*EngineConfig)) *Engine {
	t.Helper()
	p := DefaultEngineParams()
	p.BlockSize = 4
	p.MaxNumBatchedTokens = 10
	cfg := EngineConfig{Params: p, MaxModelLen: 64, KVBlocks: 64, Cost: testCost}
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// req builds a request whose prompt is `prompt` tokens of content key, with
// output tokens of content key+1000.
func req(id uint64, key uint64, prompt, output, blockSize int) *Request {
	h := NewBlockHasher(blockSize)
	h.AppendRun(key, 0, prompt)
	h.AppendRun(key+1000, 0, output)
	r := NewRequest()
	r.ID, r.PromptTokens, r.OutputTokens, r.BlockHashes = id, prompt, output, h.Hashes()
	return r
}

// plan runs one step and returns the new tokens each request got, by ID.
func plan(t *testing.T, e *Engine, now float64) (map[uint64]int, float64) {
	t.Helper()
	dur, ok := e.Schedule(now)
	if !ok {
		return nil, 0
	}
	got := map[uint64]int{}
	for _, r := range e.sched {
		got[r.ID] = r.newTokens
	}
	e.Complete(now + dur)
	return got, dur
}

func mustAdd(t *testing.T, e *Engine, rs ...*Request) {
	t.Helper()
	for _, r := range rs {
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
	}
}

func equalSplit(a, b map[uint64]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestBudgetSplitDecodesFirstThenChunks(t *testing.T) {
	e := newTestEngine(t, nil)
	a, b, c := req(1, 1, 4, 5, 4), req(2, 2, 4, 5, 4), req(3, 3, 20, 2, 4)
	mustAdd(t, e, a, b, c)
	want := []map[uint64]int{
		{1: 4, 2: 4, 3: 2}, // two whole prompts, then a 2-token chunk of C
		{1: 1, 2: 1, 3: 8}, // decodes first, C gets the rest of the budget
		{1: 1, 2: 1, 3: 8},
		{1: 1, 2: 1, 3: 2}, // C's last chunk: 2+8+8+2 = 20
	}
	now := 0.0
	for i, w := range want {
		got, dur := plan(t, e, now)
		if !equalSplit(got, w) {
			t.Fatalf("step %d: split %v, want %v", i+1, got, w)
		}
		tokens := 0
		for _, n := range w {
			tokens += n
		}
		if wantDur := 0.010 + 0.001*float64(tokens); math.Abs(dur-wantDur) > 1e-12 {
			t.Errorf("step %d: duration %v, want %v", i+1, dur, wantDur)
		}
		now += dur
	}
	if c.Generated() != 1 || c.FirstToken != now {
		t.Errorf("C: generated %d first token %v, want 1 at %v", c.Generated(), c.FirstToken, now)
	}
	if a.Generated() != 4 {
		t.Errorf("A generated %d, want 4", a.Generated())
	}
}

func TestLongPrefillThreshold(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.LongPrefillTokenThreshold = 4 })
	mustAdd(t, e, req(1, 1, 10, 1, 4), req(2, 2, 10, 1, 4), req(3, 3, 10, 1, 4))
	for i, w := range []map[uint64]int{{1: 4, 2: 4, 3: 2}, {1: 4, 2: 4, 3: 2}, {1: 2, 2: 2, 3: 4}, {3: 2}} {
		if got, _ := plan(t, e, float64(i)); !equalSplit(got, w) {
			t.Fatalf("step %d: split %v, want %v", i+1, got, w)
		}
	}
}

func TestNoChunkedPrefillSkipsPromptsThatDoNotFit(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) {
		c.Params.EnableChunkedPrefill = false
		c.Params.MaxNumBatchedTokens = 32
		c.MaxModelLen = 32
	})
	mustAdd(t, e, req(1, 1, 28, 2, 4), req(2, 2, 10, 1, 4), req(3, 3, 3, 1, 4))
	for i, w := range []map[uint64]int{{1: 28, 3: 3}, {1: 1, 2: 10}} {
		if got, _ := plan(t, e, float64(i)); !equalSplit(got, w) {
			t.Fatalf("step %d: split %v, want %v", i+1, got, w)
		}
	}
	if _, err := NewEngine(EngineConfig{Params: e.p, MaxModelLen: 64, KVBlocks: 64, Cost: testCost}); err == nil {
		t.Error("no error for max-num-batched-tokens < max-model-len without chunked prefill")
	}
}

func TestMaxNumSeqs(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.MaxNumSeqs = 2 })
	mustAdd(t, e, req(1, 1, 2, 2, 4), req(2, 2, 2, 2, 4), req(3, 3, 2, 2, 4))
	for i, w := range []map[uint64]int{{1: 2, 2: 2}, {1: 1, 2: 1}, {3: 2}} {
		if got, _ := plan(t, e, float64(i)); !equalSplit(got, w) {
			t.Fatalf("step %d: split %v, want %v", i+1, got, w)
		}
	}
}

func TestMaxModelLenRejection(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.MaxModelLen = 24 })
	if err := e.Add(req(1, 1, 20, 5, 4)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("20+5 tokens with max-model-len 24: err %v, want ErrTooLong", err)
	}
	if err := e.Add(req(2, 1, 20, 4, 4)); err != nil {
		t.Fatalf("20+4 tokens with max-model-len 24: %v", err)
	}
	if got := e.Stats().Rejected; got != 1 {
		t.Errorf("rejected %d, want 1", got)
	}
}

func TestPrefixHits(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.MaxNumBatchedTokens = 64 })
	a := req(1, 7, 10, 2, 4)
	mustAdd(t, e, a)
	for !a.Finished() {
		plan(t, e, 0)
	}
	// B shares A's first 10 prompt tokens, then differs: two full blocks hit.
	h := NewBlockHasher(4)
	h.AppendRun(7, 0, 10)
	h.AppendRun(99, 0, 2)
	b := NewRequest()
	b.ID, b.PromptTokens, b.OutputTokens, b.BlockHashes = 2, 12, 1, h.Hashes()
	// C is exactly A's first 8 tokens: a full hit still recomputes the last
	// block, so only one block (4 tokens) is reused.
	c := req(3, 7, 8, 1, 4)
	mustAdd(t, e, b, c)
	got, _ := plan(t, e, 1)
	if want := map[uint64]int{2: 4, 3: 4}; !equalSplit(got, want) {
		t.Fatalf("split %v, want %v", got, want)
	}
	if b.CachedTokens != 8 || c.CachedTokens != 4 {
		t.Errorf("cached tokens B %d C %d, want 8 and 4", b.CachedTokens, c.CachedTokens)
	}
	s := e.Stats()
	if s.PrefixQueries != 10+12+8 || s.PrefixHits != 12 {
		t.Errorf("prefix queries %d hits %d, want 30 and 12", s.PrefixQueries, s.PrefixHits)
	}
}

func TestPrefixCachingOff(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.EnablePrefixCaching = false; c.Params.MaxNumBatchedTokens = 64 })
	a := req(1, 7, 10, 1, 4)
	mustAdd(t, e, a)
	plan(t, e, 0)
	b := req(2, 7, 10, 1, 4)
	mustAdd(t, e, b)
	if got, _ := plan(t, e, 1); got[2] != 10 || b.CachedTokens != 0 {
		t.Errorf("caching off: B computed %d cached %d, want 10 and 0", got[2], b.CachedTokens)
	}
}

func TestLRUEvictionOfFreeCachedBlocks(t *testing.T) {
	// 8 blocks of 4 tokens. A then B each use two blocks and finish; freed
	// blocks go to the tail of the free queue, last block first, so the queue
	// is [4 5 6 7 | A: 1 0 | B: 3 2]. C takes the four never-used blocks (no
	// eviction); D then needs two and evicts A's, released first. B's prefix
	// stays cached.
	e := newTestEngine(t, func(c *EngineConfig) {
		c.Params.MaxNumBatchedTokens = 64
		c.MaxModelLen = 16
		c.KVBlocks = 8
	})
	a, b := req(1, 1, 8, 1, 4), req(2, 2, 8, 1, 4)
	mustAdd(t, e, a)
	plan(t, e, 0)
	mustAdd(t, e, b)
	plan(t, e, 1)
	if !a.Finished() || !b.Finished() {
		t.Fatal("A and B should have finished")
	}
	c := req(3, 3, 15, 1, 4) // 4 blocks: takes 4 5 6 7 (never cached)
	mustAdd(t, e, c)
	plan(t, e, 2)
	if ev := e.Stats().Evictions; ev != 0 {
		t.Fatalf("after C: %d evictions, want 0", ev)
	}
	d := req(4, 4, 7, 1, 4) // 2 blocks: evicts A's blocks, released first
	mustAdd(t, e, d)
	plan(t, e, 3)
	if ev := e.Stats().Evictions; ev != 2 {
		t.Fatalf("after D: %d evictions, want 2", ev)
	}
	a2, b2 := req(5, 1, 8, 1, 4), req(6, 2, 8, 1, 4)
	mustAdd(t, e, b2, a2) // B first: A's fresh blocks would evict B's otherwise
	plan(t, e, 4)
	if a2.CachedTokens != 0 || b2.CachedTokens != 4 {
		t.Errorf("re-sent A cached %d (want 0, evicted), B cached %d (want 4)", a2.CachedTokens, b2.CachedTokens)
	}
}

func TestPreemptionByRecompute(t *testing.T) {
	// 6 blocks of 4 tokens; A and B each have an 8-token prompt and 8
	// outputs. Decoding they grow to 3 blocks each (6, cache full); A's 13th
	// token needs a 4th block, so B (last in the running list) is preempted.
	e := newTestEngine(t, func(c *EngineConfig) {
		c.Params.MaxNumBatchedTokens = 100
		c.MaxModelLen = 24
		c.KVBlocks = 6
	})
	a, b := req(1, 1, 8, 8, 4), req(2, 2, 8, 8, 4)
	mustAdd(t, e, a, b)
	for i := range 5 {
		plan(t, e, float64(i))
	}
	if a.Generated() != 5 || b.Generated() != 5 {
		t.Fatalf("after 5 steps generated A %d B %d, want 5 and 5", a.Generated(), b.Generated())
	}
	got, _ := plan(t, e, 5) // step 6: B preempted, A decodes alone
	if want := map[uint64]int{1: 1}; !equalSplit(got, want) {
		t.Fatalf("step 6 split %v, want %v", got, want)
	}
	if b.Preemptions != 1 || e.Stats().Preemptions != 1 || e.NumWaiting() != 1 {
		t.Fatalf("B preemptions %d, engine %d, waiting %d; want 1, 1, 1", b.Preemptions, e.Stats().Preemptions, e.NumWaiting())
	}
	// B's freed blocks went to the free queue last-first, so A's new block
	// evicted B's third block; B can only come back when A finishes.
	for i := 6; !a.Finished(); i++ {
		got, _ := plan(t, e, float64(i))
		if got[2] != 0 {
			t.Fatalf("step %d: B scheduled before A finished", i+1)
		}
	}
	got, _ = plan(t, e, 100)
	// B recomputes 13 tokens (8 prompt + 5 output): 8 from its two cached
	// prompt blocks, 5 computed.
	if want := map[uint64]int{2: 5}; !equalSplit(got, want) {
		t.Fatalf("B re-admitted with %v, want %v", got, want)
	}
	if b.Generated() != 6 || b.CachedTokens != 0 {
		t.Errorf("B generated %d (want 6), first-schedule cached tokens %d (want 0)", b.Generated(), b.CachedTokens)
	}
	// Two evictions: B's third block (for A's fourth), and A's third block,
	// the first cached one B's fresh allocation reaches in the free queue.
	if ev := e.Stats().Evictions; ev != 2 {
		t.Errorf("evictions %d, want 2", ev)
	}
}

func TestThrottleSlowsTheWholeGroup(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) {
		c.TPSize = 4
		c.Throttles = []Throttle{{GPU: 2, ClockFactor: 0.5, Start: 10, End: 20}}
	})
	mustAdd(t, e, req(1, 1, 4, 3, 4))
	_, d0 := plan(t, e, 0)
	_, d1 := plan(t, e, 10)
	_, d2 := plan(t, e, 20)
	// 10 ms step overhead is CPU time, not stretched; 1 ms of GPU time is.
	if math.Abs(d0-0.014) > 1e-12 || math.Abs(d1-0.012) > 1e-12 || math.Abs(d2-0.011) > 1e-12 {
		t.Errorf("durations %v %v %v, want 0.014, 0.012 (throttled decode), 0.011", d0, d1, d2)
	}
	if e.Step().ClockFactor != 1 {
		t.Errorf("clock after window %v, want 1", e.Step().ClockFactor)
	}
}

func TestAsyncSchedulingHidesOverhead(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.AsyncScheduling = true })
	mustAdd(t, e, req(1, 1, 4, 1, 4))
	if _, d := plan(t, e, 0); math.Abs(d-0.004) > 1e-12 {
		t.Errorf("async step %v, want 0.004 (overhead hidden)", d)
	}
}

func TestKVTooSmallForOneSequence(t *testing.T) {
	p := DefaultEngineParams()
	if _, err := NewEngine(EngineConfig{Params: p, MaxModelLen: 1024, KVBlocks: 10, Cost: testCost}); err == nil {
		t.Error("no error when one max-model-len sequence cannot fit the KV cache")
	}
}

// TestAsyncSchedulingLookahead: with async scheduling a request arriving
// while step k runs joins step k+2 (step k+1 was planned when k started);
// without it, step k+1. An idle engine admits on arrival either way.
func TestAsyncSchedulingLookahead(t *testing.T) {
	for _, async := range []bool{true, false} {
		e := newTestEngine(t, func(c *EngineConfig) { c.Params.AsyncScheduling = async })
		a := req(1, 1, 4, 5, 4)
		mustAdd(t, e, a)
		got0, d0 := plan(t, e, 0)
		if got0[1] != 4 {
			t.Fatalf("async=%v: step 0 %v, want A's prefill", async, got0)
		}
		b := req(2, 2, 4, 5, 4)
		b.Arrival = d0 / 2 // while step 0 ran
		mustAdd(t, e, b)
		got1, d1 := plan(t, e, d0)
		got2, _ := plan(t, e, d0+d1)
		if async {
			if _, in := got1[2]; in || got2[2] != 4 {
				t.Errorf("async: B in step 1 %v, step 2 %v; want it first in step 2", got1, got2)
			}
		} else if got1[2] != 4 {
			t.Errorf("sync: step 1 %v, want B's prefill", got1)
		}
	}
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.AsyncScheduling = true })
	idle := req(3, 3, 4, 2, 4)
	idle.Arrival = 5
	mustAdd(t, e, idle)
	if got, _ := plan(t, e, 5); got[3] != 4 {
		t.Errorf("idle async engine: %v, want the request admitted on arrival", got)
	}
}

func TestResetPrefixCache(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.Params.MaxNumBatchedTokens = 64 })
	a := req(1, 7, 10, 40, 4)
	mustAdd(t, e, a)
	plan(t, e, 0)
	if e.ResetPrefixCache() {
		t.Error("reset while A holds blocks: got true, want a refusal as vLLM's")
	}
	for !a.Finished() {
		plan(t, e, 1)
	}
	b := req(2, 7, 10, 1, 4)
	mustAdd(t, e, b)
	plan(t, e, 2)
	if b.CachedTokens != 8 {
		t.Fatalf("before reset B cached %d tokens, want 8", b.CachedTokens)
	}
	for !b.Finished() {
		plan(t, e, 3)
	}
	if !e.ResetPrefixCache() {
		t.Fatal("reset of an idle engine refused")
	}
	c := req(3, 7, 10, 1, 4)
	mustAdd(t, e, c)
	plan(t, e, 4)
	if c.CachedTokens != 0 {
		t.Errorf("after reset C cached %d tokens, want 0", c.CachedTokens)
	}
	for !c.Finished() {
		plan(t, e, 5)
	}
	if e.KVUsage() != 0 {
		t.Errorf("KV usage %v after every request finished, want 0", e.KVUsage())
	}
}

// A request's blocks lie in consecutive slots over all its steps — its
// prefill chunks and a block every block-size decodes — even while other
// requests take blocks in the same steps (Engine.allocate reserves them),
// so that walks over a session's history read the pool in order; and the
// blocks it computed follow one another, so none of them enters the index.
func TestRequestBlocksAreConsecutiveAcrossSteps(t *testing.T) {
	e := newTestEngine(t, func(c *EngineConfig) { c.KVBlocks = 200; c.MaxModelLen = 256 })
	a, b := req(1, 1, 30, 40, 4), req(2, 2, 30, 40, 4)
	mustAdd(t, e, a, b)
	for now := 0.0; !a.Finished() || !b.Finished(); {
		_, dur := plan(t, e, now)
		if dur == 0 {
			t.Fatal("the engine stopped before both requests finished")
		}
		for _, r := range []*Request{a, b} {
			for i := 1; i < len(r.blocks); i++ {
				if r.blocks[i] != r.blocks[i-1]+1 {
					t.Fatalf("request %d: blocks %v are not consecutive", r.ID, r.blocks)
				}
			}
		}
		now += dur
	}
	if e.pool.indexed != 2 {
		t.Errorf("%d blocks indexed, want the first of each request's run", e.pool.indexed)
	}
}

package sim

import (
	"errors"
	"math"

	"github.com/spoc-project/spoc/perfmodel"
)

// errStepPlanned guards against planning two steps at once.
var errStepPlanned = errors.New("engine: a step is already planned")

// Schedule plans the next step at engine time now, following vLLM v1's
// scheduler:
//
//  1. Running requests, in order, each get min(remaining tokens,
//     long_prefill_token_threshold, budget left) tokens — one for a decode,
//     a chunk for an unfinished prefill. When the KV cache cannot hold them,
//     the last running request is preempted (its blocks freed, its progress
//     recomputed later) until they fit or the request itself was preempted.
//  2. If nothing was preempted, waiting requests are admitted FCFS while
//     budget and max_num_seqs allow: the longest cached prefix of full blocks
//     is reused (all but the last token), the rest is computed as a chunk; a
//     request that cannot get blocks stops admission; without chunked
//     prefill a prompt that does not fit the budget left waits for a later
//     step and admission continues behind it.
//
// Under async scheduling vLLM plans step k+1 when step k starts, so a
// request that arrived while step k ran joins step k+2: while requests are
// running, only those that arrived by the previous step's start are
// admitted (an idle engine admits on arrival).
//
// It returns the step's duration in seconds and false when there is nothing
// to do. Complete must be called before the next Schedule.
func (e *Engine) Schedule(now float64) (float64, bool) {
	if e.planned {
		panic(errStepPlanned)
	}
	budget := e.p.MaxNumBatchedTokens
	thr := e.p.LongPrefillTokenThreshold
	e.sched = e.sched[:0]
	preempted := false

	for i := 0; i < len(e.running) && budget > 0; {
		r := e.running[i]
		n := r.numTokens() - r.computed
		if thr > 0 && n > thr {
			n = thr
		}
		n = min(n, budget)
		if n <= 0 {
			i++
			continue
		}
		scheduled := false
		for {
			if e.allocate(r, n, nil, 0, fastHits{run: -1}) {
				scheduled = true
				break
			}
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == r {
				break
			}
		}
		if !scheduled {
			break
		}
		r.newTokens = n
		e.sched = append(e.sched, r)
		budget -= n
		i++
	}

	cutoff := math.Inf(1)
	if e.p.AsyncScheduling && e.stepped && len(e.running) > 0 {
		cutoff = e.step.Start // the previous step's start
	}
	if !preempted {
		e.skipped = e.skipped[:0]
		for e.waiting.len() > 0 && budget > 0 && len(e.running) < e.p.MaxNumSeqs {
			r := e.waiting.front()
			if r.Arrival > cutoff {
				break // FCFS: those behind arrived later still
			}
			e.hits = e.hits[:0]
			free := 0
			fast := fastHits{run: -1}
			if r.computed == 0 && e.pool.caching {
				// A full hit still recomputes the last token to get logits.
				// r.blocks is empty here; its array still holds the blocks
				// of r's previous turn (Request.Reset keeps it), the hint.
				e.hits, free, fast = e.pool.lookup(e.hits, r.BlockHashes, (r.numTokens()-1)/e.p.BlockSize, r.blocks[:cap(r.blocks)], e.ownerOf(r), false)
			}
			hitTokens := len(e.hits) * e.p.BlockSize
			n := r.numTokens() - r.computed - hitTokens
			if thr > 0 && n > thr {
				n = thr
			}
			if !e.p.EnableChunkedPrefill && n > budget {
				e.skipped = append(e.skipped, e.waiting.popFront())
				continue
			}
			n = min(n, budget)
			start := r.computed == 0
			if !e.allocate(r, n, e.hits, free, fast) {
				break
			}
			if start {
				// the turn's start: its hits hold their hashes, and its
				// own blocks (parkable at its end) begin after them, or
				// where the hits its parked run gave back begin
				r.heldTo, r.privateFrom = len(e.hits), len(e.hits)
				if fast.run >= 0 && fast.from+fast.n == len(e.hits) {
					r.privateFrom = fast.from
				}
			}
			e.waiting.popFront()
			if e.pool.caching {
				e.stats.PrefixQueries += int64(r.numTokens())
				e.stats.PrefixHits += int64(hitTokens)
			}
			if r.FirstScheduled < 0 {
				r.FirstScheduled = now
				r.CachedTokens = hitTokens
			}
			r.running = true
			e.running = append(e.running, r)
			r.newTokens = n
			e.sched = append(e.sched, r)
			budget -= n
		}
		for i := len(e.skipped) - 1; i >= 0; i-- {
			e.waiting.pushFront(e.skipped[i])
		}
	}

	if len(e.sched) == 0 {
		return 0, false
	}
	e.batch = e.batch[:0]
	info := StepInfo{Start: now, Seqs: len(e.sched)}
	for _, r := range e.sched {
		e.batch = append(e.batch, perfmodel.Seq{NewTokens: r.newTokens, ContextTokens: r.computed})
		info.Tokens += r.newTokens
		if r.computed < r.PromptTokens {
			info.PrefillTokens += r.newTokens
		} else {
			info.DecodeSeqs++
		}
	}
	cm, clock := e.cost(now)
	c := cm.Step(e.batch)
	info.Cost, info.ClockFactor = c, clock
	info.Seconds = c.Seconds
	if e.p.AsyncScheduling {
		hide := c.Terms.Overhead
		if e.hidden != nil {
			hide = math.Min(hide, e.hidden(info.Seqs))
		}
		info.Seconds -= hide
	}
	if info.Seconds <= 0 {
		info.Seconds = 1e-6
	}
	e.step = info
	e.stepped = true
	e.planned = true
	return info.Seconds, true
}

// Step returns the planned (or last completed) step.
func (e *Engine) Step() *StepInfo { return &e.step }

// Complete applies the planned step at its end time, end: computed tokens
// advance, full blocks enter the prefix cache, requests that finished their
// prompt or a decode produce a token, and finished requests release their
// blocks. It returns the requests that produced a token, valid until the
// next call; check Finished on each.
func (e *Engine) Complete(end float64) []*Request {
	if !e.planned {
		return nil
	}
	e.planned = false
	e.out = e.out[:0]
	bs := e.p.BlockSize
	anyFinished := false
	for _, r := range e.sched {
		r.computed += r.newTokens
		r.newTokens = 0
		// a block filled (r.computed/bs > r.cachedBlocks, without a
		// division per request and step: a decode fills one every bs)
		if r.computed >= (r.cachedBlocks+1)*bs {
			full := r.computed / bs
			if to := min(full, len(r.BlockHashes)); r.cachedBlocks < to {
				// r.blocks' ids stay valid when r finishes below:
				// releasing evicts nothing.
				run := filledRun{blocks: r.blocks, hashes: r.BlockHashes, from: r.cachedBlocks, to: to, known: r.holdsLast, heldTo: &r.heldTo}
				r.holdsLast = false
				if full == to {
					run.holdsLast = &r.holdsLast // cacheAll says
				}
				e.filled = append(e.filled, run)
			} else {
				r.holdsLast = false
			}
			r.cachedBlocks = full
		}
		if r.computed < r.numTokens() {
			continue // a prefill chunk that did not reach the end of the prompt
		}
		r.generated++
		e.stats.GenerationTokens++
		if r.FirstToken < 0 {
			r.FirstToken = end
			e.stats.PromptTokens += int64(r.PromptTokens)
		}
		if r.generated >= r.OutputTokens {
			r.finished = true
			r.Done = end
			anyFinished = true
			e.stats.Finished++
			e.finishRequest(r)
		}
		e.out = append(e.out, r)
	}
	// The step's full blocks enter the index in the order they filled, after
	// the finished requests released theirs: nothing here evicts, so a
	// released block keeps its id and its turn to be cached.
	e.pool.cacheAll(e.filled)
	clear(e.filled)
	e.filled = e.filled[:0]
	if anyFinished {
		k := 0
		for _, r := range e.running {
			if r.finished {
				r.running = false
				continue
			}
			e.running[k] = r
			k++
		}
		clear(e.running[k:])
		e.running = e.running[:k]
	}
	e.stats.Steps++
	e.stats.BusySeconds += e.step.Seconds
	e.stats.Terms = e.stats.Terms.Plus(e.step.Cost.Terms)
	return e.out
}

// allocate gives r the blocks to hold n more tokens after reusing the cached
// blocks hits (a waiting request's prefix), or reports false and changes
// nothing when the free queue is too short.
//
// evictableHits is how many of hits nobody holds (lookup's count).
//
// fast says which of hits the lookup took from r's parked run.
func (e *Engine) allocate(r *Request, n int, hits []int32, evictableHits int, fast fastHits) bool {
	bs := e.p.BlockSize
	total := r.computed + len(hits)*bs + n
	if len(hits) == 0 && total <= len(r.blocks)*bs && (len(r.slide) >= e.slideMax || total <= len(r.slide)*bs) {
		return true // a decode within its blocks: the step of nearly every running request
	}
	needFull := (total + bs - 1) / bs
	needSlide := min(needFull, e.slideMax)
	freshFull := needFull - len(r.blocks) - len(hits)
	freshSlide := needSlide - len(r.slide)
	fresh := freshFull + freshSlide
	if fresh > e.pool.numFree-evictableHits {
		return false
	}
	if max(0, freshFull-r.res.left())+freshSlide > e.pool.room() {
		e.compactPool(r, hits)
	}
	owner := e.ownerID(r)
	if fast.run >= 0 {
		r.blocks = e.pool.touchAll(r.blocks, hits[:fast.from], owner)
		e.pool.takeParked(fast.run, fast.n)
		r.blocks = append(r.blocks, hits[fast.from:fast.from+fast.n]...)
		r.blocks = e.pool.touchAll(r.blocks, hits[fast.from+fast.n:], owner)
	} else if len(hits) > 0 {
		r.blocks = e.pool.touchAll(r.blocks, hits, owner)
	}
	r.computed += len(hits) * bs
	r.cachedBlocks += len(hits)
	switch {
	case len(hits) > 0: // a waiting request's hits: r.cachedBlocks was 0
		r.holdsLast = true
	case r.cachedBlocks == 0:
		r.holdsLast = false // a finished turn's last run may have said otherwise
	}
	if freshFull > 0 && r.res.left() == 0 {
		// Every full block r will take from here to its last token, in one
		// run of slots (blockPool.reserve); more than that only when its
		// output is cut short.
		last := (r.PromptTokens + r.OutputTokens - 1 + bs - 1) / bs
		if want := last - len(r.blocks); want > freshFull && want+freshSlide <= e.pool.room() {
			r.res = e.pool.reserve(want)
		}
	}
	if k := min(needFull-len(r.blocks), r.res.left()); k > 0 {
		r.blocks = e.pool.allocateRunIn(r.blocks, &r.res, owner, k)
	}
	for len(r.blocks) < needFull {
		r.blocks = append(r.blocks, e.pool.allocate(owner, int32(len(r.blocks))))
	}
	for len(r.slide) < needSlide {
		r.slide = append(r.slide, e.pool.allocate(noOwner, 0))
	}
	return true
}

// compactPool compacts the block pool, rewriting the ids held by the
// running requests, by r (about to be given blocks) and in hits, and ends
// their reservations.
func (e *Engine) compactPool(r *Request, hits []int32) {
	e.pool.compact(func(rewrite func([]int32)) {
		for _, x := range e.running {
			rewrite(x.blocks)
			rewrite(x.slide)
			x.res = reservation{}
		}
		if !r.running {
			rewrite(r.blocks)
			rewrite(r.slide)
			r.res = reservation{}
		}
		rewrite(hits)
	})
}

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue; it will recompute its prompt and output so far,
// typically from its own blocks still in the prefix cache.
func (e *Engine) preempt(r *Request) {
	e.freeRequest(r)
	r.computed = 0
	r.running = false
	r.Preemptions++
	e.stats.Preemptions++
	e.waiting.pushFront(r)
}

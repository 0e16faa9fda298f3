package calibrate

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/spoc-project/spoc/perfmodel"
)

// Predictor predicts a point's metrics under the given factors.
type Predictor interface {
	Predict(ctx context.Context, p Point, f perfmodel.Factors) (Metrics, error)
}

// Replay is the built-in Predictor: it re-creates a point's closed-loop
// benchmark in virtual time on a continuous-batching engine priced by
// perfmodel.System.
//
// The engine follows vLLM v1's scheduler for the reference workload: each
// step first gives one token to every running decode and continues running
// prefills, then admits waiting requests first-come first-served while
// max_num_seqs and the max_num_batched_tokens budget allow, chunking the last
// prefill to fit. A step's duration is System.StepShape; the step that
// completes a prompt emits its first token; with async scheduling (the
// default, Server.SyncScheduling off) the CPU overhead terms are hidden behind
// the GPU as sim hides them. Each request reaches the engine
// Factors.RequestOverhead after the client sends it. KV cache is reserved for
// a request's whole length on admission (no preemption), which the
// reference points never come close to exhausting. With more GPUs than the
// tensor parallel size, users and prompts are split evenly over replicas.
type Replay struct {
	// Seed draws the request lengths; every evaluation with the same seed
	// replays the same requests (common random numbers keep the fit's
	// objective deterministic).
	Seed uint64
	// NoLookahead turns off one effect of vLLM's async scheduling that the
	// replay (like sim's engine) models by default: step k+1 is scheduled
	// when step k starts, so a request arriving while step k runs joins step
	// k+2, not k+1. Factors fitted without it do not mean the same as in
	// sim; on the reference data a fit without it had a TTFT MAPE of 10.7 %
	// against 7.7 % with it (docs/perfmodel.md).
	NoLookahead bool
}

var _ Predictor = Replay{}

// SystemFor builds the deployment of a point under the given factors.
func SystemFor(p Point, f perfmodel.Factors) (*perfmodel.System, error) {
	m, err := perfmodel.LookupModel(p.Model)
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", p.Source, err)
	}
	g, err := perfmodel.LookupGPU(p.GPU)
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", p.Source, err)
	}
	srv := p.server()
	kv, err := perfmodel.ParseKVCacheDtype(srv.KVCacheDtype)
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", p.Source, err)
	}
	mk, err := perfmodel.ParseMoEKernel(srv.MoEKernel)
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", p.Source, err)
	}
	s, err := perfmodel.NewSystem(m, g, perfmodel.SystemOptions{TensorParallel: p.TensorParallel, GPUs: p.GPUs,
		CUDAGraphs: true, CUDAGraphMaxTokens: srv.CUDAGraphMaxTokens, MaxNumBatchedTokens: srv.MaxNumBatchedTokens,
		MaxNumSeqs: srv.MaxNumSeqs, KVCacheDtype: kv, MoEKernel: mk, FusedAllReduceNorm: srv.FusedAllReduceNorm, Factors: f})
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", p.Source, err)
	}
	return s, nil
}

// Predict implements Predictor.
func (r Replay) Predict(ctx context.Context, p Point, f perfmodel.Factors) (Metrics, error) {
	if err := p.Validate(); err != nil {
		return Metrics{}, err
	}
	s, err := SystemFor(p, f)
	if err != nil {
		return Metrics{}, err
	}
	return r.Run(ctx, p, s)
}

// request is one prompt's progress through the replayed engine.
type request struct {
	prompt, output      int
	send, ready, first  float64
	computed, generated int
	scheduled           int
	kv                  int
}

// lengths draws (or copies) the per-request prompt and output lengths.
func (r Replay) lengths(p *Point, n int) (in, out []int) {
	if len(p.InputLens) > 0 {
		return p.InputLens[:min(n, len(p.InputLens))], p.OutputLens[:min(n, len(p.OutputLens))]
	}
	h := fnv.New64a()
	h.Write([]byte(p.Key()))
	rng := rand.New(rand.NewPCG(r.Seed, h.Sum64()))
	draw := func(l int) int {
		lo := max(1, int(p.RangeRatio*float64(l)))
		return lo + rng.IntN(l-lo+1)
	}
	in, out = make([]int, n), make([]int, n)
	for i := range in {
		in[i], out[i] = draw(p.InputLen), draw(p.OutputLen)
	}
	return in, out
}

// Run replays the point on the given system.
func (r Replay) Run(ctx context.Context, p Point, sys *perfmodel.System) (Metrics, error) {
	srv := p.server()
	replicas := max(1, p.GPUs/p.TensorParallel)
	users := max(1, p.Concurrency/replicas)
	n := max(1, p.NumPrompts/replicas)
	ins, outs := r.lengths(&p, n)
	n = len(ins)
	capacity, err := sys.KVCacheTokens(srv.GPUMemoryUtilization)
	if err != nil {
		return Metrics{}, fmt.Errorf("point %s: %w", p.Source, err)
	}
	maxLen := srv.MaxModelLen
	if maxLen == 0 {
		maxLen = sys.Model().MaxContext
	}
	f := sys.Factors()
	reqs := make([]request, n)
	for i := range reqs {
		q := &reqs[i]
		q.prompt, q.output = ins[i], outs[i]
		if q.prompt <= 0 || q.output <= 0 {
			return Metrics{}, fmt.Errorf("point %s: request %d has %d prompt and %d output tokens", p.Source, i, q.prompt, q.output)
		}
		if maxLen > 0 && q.prompt+q.output > maxLen {
			return Metrics{}, fmt.Errorf("point %s: request of %d tokens exceeds max model length %d", p.Source, q.prompt+q.output, maxLen)
		}
		q.kv = sys.KVTokensForSeq(q.prompt + q.output)
		if q.kv > capacity {
			return Metrics{}, fmt.Errorf("point %s: one request needs %d KV tokens, the cache holds %d", p.Source, q.kv, capacity)
		}
	}
	window := sys.Model().SlidingWindow
	async := !srv.SyncScheduling
	budgetPerStep, maxSeqs := srv.MaxNumBatchedTokens, srv.MaxNumSeqs

	sent := min(users, n)
	for i := range sent {
		reqs[i].ready = f.RequestOverhead(reqs[i].prompt)
	}
	var (
		t, lastFinish      float64
		head, done, kvUsed int
		outputTokens       int
		running            = make([]int, 0, maxSeqs)
		ttfts              = make([]float64, 0, n)
		tpots              = make([]float64, 0, n)
		steps              int
		prevStart          float64 // when the last executed step started
	)
	for done < n {
		if steps++; steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return Metrics{}, err
			}
		}
		budget := budgetPerStep
		var shape perfmodel.BatchShape
		prefilling, fast := false, true
		for _, i := range running {
			q := &reqs[i]
			q.scheduled = 0
			if budget == 0 {
				continue
			}
			if q.computed < q.prompt {
				q.scheduled = min(q.prompt-q.computed, budget)
				shape.Add(perfmodel.Seq{NewTokens: q.scheduled, ContextTokens: q.computed}, window)
				prefilling = true
			} else {
				q.scheduled = 1
				ctxTokens := q.prompt + q.generated - 1
				shape.Add(perfmodel.Seq{NewTokens: 1, ContextTokens: ctxTokens}, window)
				fast = fast && ctxTokens >= window
			}
			budget -= q.scheduled
		}
		cutoff := t
		if !r.NoLookahead && async && len(running) > 0 {
			cutoff = prevStart
		}
		for head < sent && len(running) < maxSeqs && budget > 0 && reqs[head].ready <= cutoff && kvUsed+reqs[head].kv <= capacity {
			q := &reqs[head]
			q.scheduled = min(q.prompt, budget)
			shape.Add(perfmodel.Seq{NewTokens: q.scheduled}, window)
			budget -= q.scheduled
			kvUsed += q.kv
			running = append(running, head)
			head++
			prefilling = true
		}
		if shape.Tokens == 0 {
			if head < sent && reqs[head].ready > t {
				t = reqs[head].ready // idle until the next request arrives
				continue
			}
			return Metrics{}, fmt.Errorf("point %s: replay stalled with %d running and %d waiting", p.Source, len(running), sent-head)
		}

		if !prefilling && fast && shape.Seqs == len(running) {
			// Decode-only stretch: the batch keeps its members until the
			// first of them finishes or a waiting request can be admitted;
			// every step adds one token to each context.
			k := reqs[running[0]].output - reqs[running[0]].generated
			for _, i := range running[1:] {
				k = min(k, reqs[i].output-reqs[i].generated)
			}
			pending := head < sent && len(running) < maxSeqs && kvUsed+reqs[head].kv <= capacity
			taken := k
			if pending {
				taken = 0
				for taken < k {
					start := t
					t += r.seconds(sys, advance(shape, taken), async)
					taken++
					prevStart = start
					cut := t
					if !r.NoLookahead && async {
						cut = start
					}
					if cut >= reqs[head].ready {
						break
					}
				}
			} else {
				last := r.seconds(sys, advance(shape, k-1), async)
				t += r.decodeStretch(sys, shape, async, 0, k-1, r.seconds(sys, shape, async), last)
				prevStart = t - last
			}
			for _, i := range running {
				reqs[i].generated += taken
			}
		} else {
			prevStart = t
			t += r.seconds(sys, shape, async)
			for _, i := range running {
				q := &reqs[i]
				if q.scheduled == 0 {
					continue
				}
				if q.computed < q.prompt {
					q.computed += q.scheduled
					if q.computed == q.prompt {
						q.generated, q.first = 1, t
					}
				} else {
					q.generated++
				}
			}
		}

		// Retire finished requests; each frees a user who sends the next prompt.
		kept := running[:0]
		for _, i := range running {
			q := &reqs[i]
			if q.computed < q.prompt || q.generated < q.output {
				kept = append(kept, i)
				continue
			}
			done++
			kvUsed -= q.kv
			outputTokens += q.output
			lastFinish = t
			ttfts = append(ttfts, q.first-q.send)
			if q.output > 1 {
				tpots = append(tpots, (t-q.first)/float64(q.output-1))
			}
			if sent < n {
				nq := &reqs[sent]
				nq.send = t
				nq.ready = t + f.RequestOverhead(nq.prompt)
				sent++
			}
		}
		running = kept
	}
	m := Metrics{OutputThroughputPerGPU: float64(outputTokens) / lastFinish / float64(p.TensorParallel),
		MedianTTFTSeconds: median(ttfts), MedianTPOTSeconds: median(tpots)}
	return m, nil
}

// median sorts xs and returns its median (the mean of the middle two for an
// even count, as numpy does); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	h := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[h]
	}
	return (xs[h-1] + xs[h]) / 2
}

// advance returns the shape of a decode-only batch s steps later: every
// sequence's context has grown by s tokens. Sliding-window terms stay
// constant because every context already covers the window.
func advance(b perfmodel.BatchShape, s int) perfmodel.BatchShape {
	b.FullPairs2 += 2 * b.Seqs * s
	b.FullKVRead += b.Seqs * s
	return b
}

// decodeStretch sums the step times of steps lo..hi of a decode-only stretch
// whose first and last step times are tLo and tHi. Within a stretch only the
// full-attention work grows, linearly in the step index, so each step time
// is a convex piecewise-linear function of it (a max of two lines): where the
// midpoint lies on the chord the range is linear and sums exactly as an
// arithmetic series; elsewhere the range is halved. A stretch of k steps
// costs O(log k) step evaluations instead of k.
func (r Replay) decodeStretch(sys *perfmodel.System, b perfmodel.BatchShape, async bool, lo, hi int, tLo, tHi float64) float64 {
	n := float64(hi - lo + 1)
	if hi-lo < 2 {
		if hi == lo {
			return tLo
		}
		return tLo + tHi
	}
	mid := (lo + hi) / 2
	tMid := r.seconds(sys, advance(b, mid), async)
	chord := tLo + (tHi-tLo)*float64(mid-lo)/float64(hi-lo)
	if math.Abs(tMid-chord) <= 1e-12*math.Abs(chord) {
		return n * (tLo + tHi) / 2
	}
	return r.decodeStretch(sys, b, async, lo, mid, tLo, tMid) + r.decodeStretch(sys, b, async, mid+1, hi, r.seconds(sys, advance(b, mid+1), async), tHi)
}

// seconds is one step's duration. Under async scheduling the engine
// prepares step n+1 on the CPU while the GPU runs step n, hiding the CPU
// overhead (StepOverheadSeconds + PerSeqOverheadSeconds per sequence) but
// not the kernel-launch gaps; this is how sim's engine applies it, so factors
// fitted here mean the same there.
func (r Replay) seconds(sys *perfmodel.System, b perfmodel.BatchShape, async bool) float64 {
	c := sys.StepShape(b)
	if !async {
		return c.Seconds
	}
	f := sys.Factors()
	hide := math.Min(c.Terms.Overhead, f.StepOverheadSeconds+f.PerSeqOverheadSeconds*float64(b.Seqs))
	return math.Max(c.Seconds-hide, 1e-6)
}

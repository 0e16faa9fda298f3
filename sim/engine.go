package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/spoc-project/spoc/perfmodel"
)

// ErrTooLong is returned (wrapped) by Engine.Add for a request whose prompt
// plus output budget exceeds max_model_len; vLLM answers it with HTTP 400.
var ErrTooLong = errors.New("request exceeds the model's context length")

// EngineConfig configures one engine replica (one tensor-parallel group).
type EngineConfig struct {
	Params EngineParams
	// MaxModelLen is the context limit in tokens.
	MaxModelLen int
	// KVBlocks is the number of KV-cache blocks of Params.BlockSize tokens.
	KVBlocks int
	// SlidingBlocksPerSeq is how many extra blocks a sequence holds at most
	// for its sliding-window layers (vLLM's hybrid allocator gives them their
	// own blocks from the same pool, freed outside the window); 0 for models
	// without sliding layers.
	SlidingBlocksPerSeq int
	// Cost prices a step at full clock.
	Cost CostModel
	// HiddenOverhead returns how much of a step's Overhead term async
	// scheduling hides for a batch of seqs sequences; nil hides all of it.
	HiddenOverhead func(seqs int) float64
	// TPSize is the number of GPUs of the group, for Throttles.
	TPSize int
	// Throttles slow GPUs of this group (GPU indices local to the group).
	Throttles []Throttle
}

// Throttle runs one GPU at a fraction of its clock during [Start, End) engine
// seconds; End ≤ Start means until the end.
type Throttle struct {
	GPU         int     `json:"gpu"`
	ClockFactor float64 `json:"clock_factor"`
	Start       float64 `json:"start_s"`
	End         float64 `json:"end_s"`
}

func (t Throttle) activeAt(now float64) bool {
	return now >= t.Start && (t.End <= t.Start || now < t.End)
}

// StepInfo describes the step an engine is executing.
type StepInfo struct {
	Start   float64 // engine seconds
	Seconds float64 // duration, after throttling and async hiding
	Seqs    int     // requests in the batch
	Tokens  int     // new tokens computed
	// PrefillTokens are tokens of requests still in their prompt; DecodeSeqs
	// are requests computing their one next token.
	PrefillTokens int
	DecodeSeqs    int
	// Clocks are the group's GPU clock fractions during the step.
	ClockFactor float64
	Cost        perfmodel.StepCost
}

// EngineStats are an engine's cumulative counters, the quantities vLLM
// exports as Prometheus counters.
type EngineStats struct {
	Steps            int64           `json:"steps"`
	BusySeconds      float64         `json:"busy_seconds"`
	PromptTokens     int64           `json:"prompt_tokens"`
	GenerationTokens int64           `json:"generation_tokens"`
	PrefixQueries    int64           `json:"prefix_cache_queries"`
	PrefixHits       int64           `json:"prefix_cache_hits"`
	Preemptions      int64           `json:"preemptions"`
	Evictions        int64           `json:"evictions"`
	Finished         int64           `json:"finished"`
	Rejected         int64           `json:"rejected"`
	Terms            perfmodel.Terms `json:"terms_seconds"`
}

// Engine is a vLLM-v1-like scheduler over a paged KV cache. It is driven by
// its caller's clock: Schedule plans a step at a given time and returns its
// duration; Complete applies it at its end. It is not safe for concurrent use.
type Engine struct {
	p           EngineParams
	maxModelLen int
	pool        *blockPool
	slideMax    int
	base        CostModel
	hidden      func(int) float64
	tp          int
	throttles   []Throttle
	costs       map[uint64]CostModel
	clocks      []float64

	// sessions: requests come back for their session's next turn (the
	// virtual executor's, one Request per user), so a finished turn parks
	// its own blocks for the next one (park.go)
	sessions bool

	running []*Request
	waiting deque
	skipped []*Request
	hits    []int32
	filled  []filledRun // the step's blocks to cache (Complete)
	probe   []int32     // cachedPrefixBlocks' lookup

	planned bool
	stepped bool // a step has been planned (step describes the last one)
	sched   []*Request
	batch   []perfmodel.Seq
	step    StepInfo
	out     []*Request
	stats   EngineStats
}

// NewEngine validates cfg and returns an idle engine with an empty cache.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	p := cfg.Params
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("new engine: %w", err)
	}
	if cfg.Cost == nil {
		return nil, errors.New("new engine: no cost model")
	}
	if cfg.MaxModelLen < 1 {
		return nil, fmt.Errorf("new engine: max model len must be positive, got %d", cfg.MaxModelLen)
	}
	if !p.EnableChunkedPrefill && p.MaxNumBatchedTokens < cfg.MaxModelLen {
		return nil, fmt.Errorf("new engine: without chunked prefill max-num-batched-tokens (%d) must be at least max-model-len (%d)",
			p.MaxNumBatchedTokens, cfg.MaxModelLen)
	}
	need := (cfg.MaxModelLen+p.BlockSize-1)/p.BlockSize + cfg.SlidingBlocksPerSeq
	if cfg.KVBlocks < need {
		return nil, fmt.Errorf("new engine: %d KV blocks (%d tokens) cannot hold one sequence of max-model-len %d; lower max-model-len or raise gpu-memory-utilization",
			cfg.KVBlocks, cfg.KVBlocks*p.BlockSize, cfg.MaxModelLen)
	}
	tp := max(cfg.TPSize, 1)
	for i, t := range cfg.Throttles {
		if t.GPU < 0 || t.GPU >= tp {
			return nil, fmt.Errorf("new engine: throttle %d: GPU %d is not in the group of %d", i, t.GPU, tp)
		}
		if !(t.ClockFactor > 0 && t.ClockFactor <= 1) {
			return nil, fmt.Errorf("new engine: throttle %d: clock factor %g is not in (0, 1]", i, t.ClockFactor)
		}
	}
	if len(cfg.Throttles) > 64 {
		return nil, errors.New("new engine: more than 64 throttle windows")
	}
	return &Engine{
		p:           p,
		maxModelLen: cfg.MaxModelLen,
		pool:        newBlockPool(cfg.KVBlocks, p.EnablePrefixCaching),
		slideMax:    cfg.SlidingBlocksPerSeq,
		base:        cfg.Cost,
		hidden:      cfg.HiddenOverhead,
		tp:          tp,
		throttles:   cfg.Throttles,
		costs:       map[uint64]CostModel{0: cfg.Cost},
		clocks:      make([]float64, tp),
	}, nil
}

// Params returns the engine's flags.
func (e *Engine) Params() EngineParams { return e.p }

// KVBlocks is the size of the KV cache in blocks.
func (e *Engine) KVBlocks() int { return e.pool.size() }

// NumRunning is the number of requests in the running batch.
func (e *Engine) NumRunning() int { return len(e.running) }

// NumWaiting is the number of queued (or preempted) requests.
func (e *Engine) NumWaiting() int { return e.waiting.len() }

// KVUsage is the fraction of KV blocks held by requests (vLLM's
// kv_cache_usage_perc).
func (e *Engine) KVUsage() float64 { return e.pool.usage() }

// Stats returns the cumulative counters.
func (e *Engine) Stats() EngineStats {
	s := e.stats
	s.Evictions = e.pool.evictions
	return s
}

// Busy reports whether a step is planned and not yet completed.
func (e *Engine) Busy() bool { return e.planned }

// HasWork reports whether any request is running or waiting.
func (e *Engine) HasWork() bool { return len(e.running) > 0 || e.waiting.len() > 0 }

// Add queues r at the back of the waiting queue. It rejects a request whose
// prompt plus output exceeds max_model_len, or that asks for no output.
func (e *Engine) Add(r *Request) error {
	if r.PromptTokens < 1 || r.OutputTokens < 1 {
		e.stats.Rejected++
		return fmt.Errorf("add request: prompt (%d) and output (%d) tokens must be positive", r.PromptTokens, r.OutputTokens)
	}
	if total := r.PromptTokens + r.OutputTokens; total > e.maxModelLen {
		e.stats.Rejected++
		return fmt.Errorf("add request: %d prompt + %d output tokens = %d > max-model-len %d: %w",
			r.PromptTokens, r.OutputTokens, total, e.maxModelLen, ErrTooLong)
	}
	e.waiting.pushBack(r)
	return nil
}

// Abort removes an unfinished request (a client that went away) and frees
// its blocks. It must not be called while a step is planned.
func (e *Engine) Abort(r *Request) {
	if r.finished {
		return
	}
	if r.running {
		for i, x := range e.running {
			if x == r {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
	} else {
		n := e.waiting.len()
		for range n {
			x := e.waiting.popFront()
			if x != r {
				e.waiting.pushBack(x)
			}
		}
	}
	e.freeRequest(r)
	r.running, r.finished = false, true
}

// ResetPrefixCache empties the prefix cache, as vLLM's POST
// /reset_prefix_cache does between benchmark runs. Like vLLM it refuses,
// and reports false, while any request holds KV blocks (a running batch or
// a planned step); an engine without prefix caching has nothing to reset.
func (e *Engine) ResetPrefixCache() bool {
	if e.planned {
		return false
	}
	return e.pool.resetPrefixCache()
}

func (e *Engine) freeRequest(r *Request) {
	owner := e.ownerID(r)
	e.pool.freeBlocks(r.blocks, owner)
	e.pool.freeBlocks(r.slide, owner)
	r.blocks, r.slide = r.blocks[:0], r.slide[:0]
	r.res = reservation{} // its unused slots stay dead
	r.cachedBlocks, r.holdsLast = 0, false
}

// cost returns the cost model for the group's clocks at now.
func (e *Engine) cost(now float64) (CostModel, float64) {
	if len(e.throttles) == 0 {
		return e.base, 1
	}
	var mask uint64
	for i := range e.clocks {
		e.clocks[i] = 1
	}
	for i, t := range e.throttles {
		if t.activeAt(now) {
			mask |= 1 << uint(i)
			e.clocks[t.GPU] = math.Min(e.clocks[t.GPU], t.ClockFactor)
		}
	}
	slowest := 1.0
	for _, c := range e.clocks {
		slowest = math.Min(slowest, c)
	}
	if c, ok := e.costs[mask]; ok {
		return c, slowest
	}
	c, err := throttledCosts(e.base, e.clocks)
	if err != nil { // factors were validated in NewEngine
		panic(err)
	}
	e.costs[mask] = c
	return c, slowest
}

// trackSessions tells e that each Request it is given is one session's,
// sent again for the session's next turn: a finished turn then parks its
// own blocks for the next (park.go).
func (e *Engine) trackSessions() { e.sessions = e.pool.caching }

// ownerOf returns r's owner id in e's pool, registering r on its first
// turn here; noOwner when e does not track sessions.
func (e *Engine) ownerOf(r *Request) int32 {
	if !e.sessions {
		return noOwner
	}
	if r.ownerEngine != e {
		r.owner, r.ownerEngine = e.pool.newOwner(), e
	}
	return r.owner
}

// ownerID is r's owner id in e's pool, or noOwner.
func (e *Engine) ownerID(r *Request) int32 {
	if r.ownerEngine != e {
		return noOwner
	}
	return r.owner
}

// finishRequest releases a finished request's blocks: its own, held by no
// one else, as one parked run when it can (park.go), the rest one by one.
func (e *Engine) finishRequest(r *Request) {
	o := e.ownerID(r)
	if o < 0 || e.pool.owners[o].foreign != 0 || !e.pool.park(o, r.blocks, r.privateFrom, r.heldTo) {
		e.freeRequest(r)
		return
	}
	e.pool.freeBlocks(r.blocks[:r.privateFrom], o)
	e.pool.freeBlocks(r.slide, o)
	r.blocks, r.slide = r.blocks[:0], r.slide[:0]
	r.res = reservation{}
	r.cachedBlocks, r.holdsLast = 0, false
}

package sim

// Request is one generation request inside an Engine. The caller fills the
// exported input fields, submits it with Engine.Add, and reads the progress
// fields after each Engine.Complete. A finished Request may be Reset and
// reused; its slices keep their capacity, which keeps long runs free of
// allocations.
type Request struct {
	// ID is the caller's identifier, opaque to the engine.
	ID uint64
	// Tag is the caller's index of the request (e.g. the virtual user).
	Tag int
	// PromptTokens is the prompt length.
	PromptTokens int
	// OutputTokens is how many tokens the request generates before it stops.
	OutputTokens int
	// BlockHashes are the chained hashes of the request's full KV blocks,
	// prompt then output, in order (see Chain); nil or short means the
	// remaining blocks are never shared. Hashes must be nonzero.
	BlockHashes []uint64
	// Arrival is when the request entered the engine, in engine seconds.
	Arrival float64
	// SessionKey is the session header's value (SessionKey), which a
	// session-affinity router hashes; empty when the router does not read it.
	SessionKey string

	// FirstScheduled is when the request first got GPU work (negative before).
	FirstScheduled float64
	// FirstToken is when its first output token was produced (negative before).
	FirstToken float64
	// Done is when it finished (negative before).
	Done float64
	// CachedTokens are the prompt tokens served from the prefix cache when the
	// request was first scheduled, as vLLM reports cached_tokens.
	CachedTokens int
	// Preemptions counts how often the request was evicted and recomputed.
	Preemptions int

	generated int
	computed  int
	// the virtual executor's token steps (runner.completeStep): the
	// replica's steps of its first and latest token, and each later token
	// that did not come in the step after the one before (skips); its
	// gaps are read off the replica's log of step ends when its record is
	// written (runner.tokenGaps)
	firstStep, tokStep int64
	skips              []tokenSkip
	newTokens          int
	cachedBlocks       int
	// holdsLast: blocks[cachedBlocks−1] is the block the prefix cache
	// holds hashes[cachedBlocks−1] in (r took it as a hit or cached it
	// first, and holds it, so it stays so), and the next run r caches
	// chains from it without looking it up.
	holdsLast bool
	blocks    []int32
	slide     []int32
	res       reservation // the slots set aside for r's later blocks
	running   bool
	finished  bool
	// blocks[:heldTo] hold their own hashes in the prefix cache;
	// blocks[privateFrom:] are r's own (taken fresh, or back from its
	// parked run), which its end may park (Engine.finishRequest)
	heldTo, privateFrom int
	// r's owner id in ownerEngine's block pool (Engine.ownerOf), kept
	// over Reset: the next turn's request is the same owner
	owner       int32
	ownerEngine *Engine

	// the cluster router's bookkeeping (Cluster.Assign, Release)
	replica int32
	conn    int32
	routed  bool
	gen     int32 // the router generation that routed it (Cluster.Serve)
}

// Reset clears r for reuse, keeping its buffers.
func (r *Request) Reset() {
	*r = Request{blocks: r.blocks[:0], slide: r.slide[:0], skips: r.skips[:0], owner: r.owner, ownerEngine: r.ownerEngine}
	r.FirstScheduled, r.FirstToken, r.Done = -1, -1, -1
}

// reserveBlocks makes room for n blocks in r's list; call it before Reset.
func (r *Request) reserveBlocks(n int) {
	if cap(r.blocks) < n {
		r.blocks = make([]int32, 0, n)
	}
}

// NewRequest returns a request ready to fill in.
func NewRequest() *Request {
	r := &Request{}
	r.Reset()
	return r
}

// Generated is the number of output tokens produced so far.
func (r *Request) Generated() int { return r.generated }

// Finished reports whether the request produced all its output tokens.
func (r *Request) Finished() bool { return r.finished }

// numTokens is the sequence length so far: prompt plus generated output.
func (r *Request) numTokens() int { return r.PromptTokens + r.generated }

// tokenSkip is a token that came in step at of its replica, after the
// request's token of step prev, and not in step prev+1.
type tokenSkip struct{ prev, at int64 }

// deque is a FIFO of requests that also accepts pushes at the front (for
// preempted requests, which go back first). It is a growable ring.
type deque struct {
	buf        []*Request
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	n := 2 * len(d.buf)
	if n == 0 {
		n = 64
	}
	buf := make([]*Request, n)
	for i := range d.size {
		buf[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = buf, 0
}

func (d *deque) pushBack(r *Request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = r
	d.size++
}

func (d *deque) pushFront(r *Request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = r
	d.size++
}

func (d *deque) front() *Request { return d.buf[d.head] }

// at returns the i-th request from the front.
func (d *deque) at(i int) *Request { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) popFront() *Request {
	r := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return r
}

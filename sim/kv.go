package sim

import "slices"

// blockPool is the paged KV cache of one engine: a fixed number of blocks
// with reference counts, a free queue in eviction order, and the
// prefix-cache index from chained block hash to block.
//
// As in vLLM v1, a block whose reference count drops to zero goes to the tail
// of the free queue but keeps its hash and contents; it is reused by a later
// request that hits it (and leaves the queue), or evicted when it reaches the
// head of the queue and a fresh block is needed. All state lives in flat
// slices indexed by block id, so no operation allocates.
//
// A block id names a slot of an arena three times the cache's size, not a
// physical block: a freshly allocated block takes the next unused slot, or
// the next slot of the run its request reserved (reserve), and the evicted
// block's slot dies. So the blocks a request computes lie next to each
// other, over all its steps, and every later walk over them — the prefix
// hits of the session's next turn, their release last block first, their
// eviction from the head of the free queue — reads memory in order instead
// of missing the cache once per block, which is what a day of long
// sessions spent its time on. When the arena runs out the pool compacts:
// the live blocks move down in order, the ids the engine holds are
// rewritten, and the prefix-cache index is rebuilt.
//
// The index holds only the cached blocks a lookup cannot reach through
// their chain: a block computed right after its parent's block, in the
// next slot, is found by reading that slot (it "follows" its parent), and
// only the first block of each such run, and a block whose parent was
// evicted first, enter the index — a small table instead of one entry per
// cached block, each of them a cache miss to insert. Ids mean nothing
// outside the pool and its engine; which blocks hold which hashes, the
// queue's order and every count are those of the one-slot-per-block pool
// this replaces (FuzzBlockPoolMatchesTheReference).
//
// A session's own blocks go to the free queue at the end of its turn as
// one parked run and come back to its next turn the same way (park.go):
// the slots after the arena are the runs' sentinels in the queue.
type blockPool struct {
	// blocks holds each slot's state in one record, so that the
	// operations on a block (a prefix hit, a release, an eviction) touch
	// one cache line.
	blocks []blockMeta
	arena  int32 // slots [0, arena) hold blocks, the rest are parked runs' sentinels (park.go)
	used   int32 // slots handed out since the last compaction
	live   int   // blocks in the cache (fixed): the slots in use that are not dead

	head, tail int32
	numFree    int
	caching    bool
	index      *blockIndex
	indexed    int // cached blocks that do not follow their parent (in the index)

	remap []int32 // compaction's old slot → new slot

	// owners and parked runs (park.go)
	owners      []ownerState
	parked      []parkedRun
	freeParked  []int32
	parkedCount int // live parked runs
	parkStats   parkStats

	evictions int64
}

// blockMeta is one slot's state.
type blockMeta struct {
	hash       uint64 // 0: block not in the prefix-cache index
	refs       int32  // dead slot: -1
	prev, next int32  // free-queue links; -1 at the ends
	// owner is the request (blockPool.owners) that took the block fresh,
	// −1 for none, and pos its place in that request's list of blocks: a
	// parked run finds its blocks by them (park.go)
	owner, pos int32
	inFree     bool
	// follows: the block holds a hash whose parent's block is the previous
	// slot, and is not in the index.
	follows bool
}

const noBlock = -1

// arenaFactor is the arena's size in cache sizes: a compaction every
// (arenaFactor − 1) × numBlocks allocations.
const arenaFactor = 3

// minIndex is the fewest entries the index is sized for.
const minIndex = 64

func newBlockPool(numBlocks int, caching bool) *blockPool {
	return newBlockPoolParking(numBlocks, caching, maxParked)
}

// newBlockPoolParking is newBlockPool with room for parked runs parked at
// a time (a test's few).
func newBlockPoolParking(numBlocks int, caching bool, parked int) *blockPool {
	if !caching {
		parked = 0
	}
	p := &blockPool{
		blocks:  make([]blockMeta, arenaFactor*numBlocks+parked),
		arena:   int32(arenaFactor * numBlocks),
		used:    int32(numBlocks),
		live:    numBlocks,
		head:    noBlock,
		tail:    noBlock,
		caching: caching,
	}
	if caching {
		p.index = newBlockIndex(minIndex)
		p.parked = make([]parkedRun, parked)
		p.freeParked = make([]int32, parked)
		for i := range parked {
			p.freeParked[i] = int32(parked - 1 - i)
		}
	}
	// every block free, in id order: the queue's links written directly
	for b := range numBlocks {
		p.blocks[b] = blockMeta{prev: int32(b) - 1, next: int32(b) + 1, owner: noOwner, inFree: true}
	}
	if numBlocks > 0 {
		p.blocks[numBlocks-1].next = noBlock
		p.head, p.tail, p.numFree = 0, int32(numBlocks-1), numBlocks
	}
	for b := numBlocks; b < len(p.blocks); b++ {
		p.blocks[b] = blockMeta{refs: -1, prev: noBlock, next: noBlock, owner: noOwner}
	}
	return p
}

func (p *blockPool) size() int { return p.live }

// usage is the fraction of blocks held by requests, vLLM's
// kv_cache_usage_perc: cached blocks nobody holds count as free.
func (p *blockPool) usage() float64 {
	if p.live == 0 {
		return 0
	}
	return 1 - float64(p.numFree)/float64(p.live)
}

func (p *blockPool) pushTail(b int32) {
	p.linkTail(b)
	p.numFree++
}

// linkTail puts b, a block or a parked run's sentinel, at the tail of the
// free queue.
func (p *blockPool) linkTail(b int32) {
	m := &p.blocks[b]
	m.prev, m.next = p.tail, noBlock
	if p.tail != noBlock {
		p.blocks[p.tail].next = b
	} else {
		p.head = b
	}
	p.tail = b
	m.inFree = true
}

func (p *blockPool) unlink(b int32) {
	p.unlinkNode(b)
	p.numFree--
}

// unlinkNode takes b, a block or a sentinel, out of the free queue.
func (p *blockPool) unlinkNode(b int32) {
	m := &p.blocks[b]
	p.join(m.prev, m.next)
	m.inFree = false
}

// join links pr to nx in the free queue (noBlock: the queue's end), as
// when what lay between them leaves it.
func (p *blockPool) join(pr, nx int32) {
	if pr != noBlock {
		p.blocks[pr].next = nx
	} else {
		p.head = nx
	}
	if nx != noBlock {
		p.blocks[nx].prev = pr
	} else {
		p.tail = pr
	}
}

// room is how many blocks can be allocated before the pool must compact.
func (p *blockPool) room() int { return int(p.arena - p.used) }

// allocate takes the block at the head of the free queue, evicting its
// cached contents, and returns it in the next unused slot. The caller has
// checked numFree and room. The evicted hash's index entry goes stale.
func (p *blockPool) allocate(owner, pos int32) int32 {
	p.evictHead()
	nb := p.used
	p.used++
	p.blocks[nb] = blockMeta{refs: 1, prev: noBlock, next: noBlock, owner: owner, pos: pos}
	return nb
}

// reservation is slots set aside by reserve: [next, end) are still unused.
type reservation struct{ next, end int32 }

func (r reservation) left() int { return int(r.end - r.next) }

// reserve sets n unused slots aside, to be filled in order by allocateRunIn,
// and returns them: the blocks one request takes over many steps (its
// prefill chunks, a block every block-size decode steps) then lie next to
// each other, as one chunk's blocks do, instead of each between other
// requests' blocks, and every later walk over the request's history reads
// them in order. A slot set aside and never filled stays dead; the next
// compaction ends every reservation. The caller has checked room.
func (p *blockPool) reserve(n int) reservation {
	r := reservation{next: p.used, end: p.used + int32(n)}
	p.used += int32(n)
	return r
}

// allocateRunIn is allocate k times, returning the blocks in the next
// slots of res instead of the next unused ones, appended to dst (their
// places in their owner's list are their places in dst): a prefill
// chunk's blocks in one loop, the reservation's next slot and the records
// in locals instead of a call and a reload of each per block. The caller
// has checked numFree and res.left.
//
// A parked run at the head of the queue gives up as many of its blocks as
// are wanted at once (evictParked's work for each, without a look at the
// head between them).
func (p *blockPool) allocateRunIn(dst []int32, res *reservation, owner int32, k int) []int32 {
	nb, meta := res.next, p.blocks
	for k > 0 {
		if s := p.head; s >= p.arena {
			i := s - p.arena
			r := &p.parked[i]
			take := min(int32(k), r.n)
			for _, b := range slices.Backward(r.ids[r.n-take : r.n]) {
				p.kill(b)
				meta[nb] = blockMeta{refs: 1, prev: noBlock, next: noBlock, owner: owner, pos: int32(len(dst))}
				dst = append(dst, nb)
				nb++
			}
			r.n -= take
			p.numFree -= int(take)
			if r.n == 0 {
				p.unlinkNode(s)
				p.endParked(i)
			}
			k -= int(take)
			continue
		}
		p.evictHead()
		meta[nb] = blockMeta{refs: 1, prev: noBlock, next: noBlock, owner: owner, pos: int32(len(dst))}
		dst = append(dst, nb)
		nb++
		k--
	}
	res.next = nb
	return dst
}

// evictHead takes the block at the head of the free queue and kills its
// slot, evicting its cached contents.
func (p *blockPool) evictHead() {
	b := p.head
	if b >= p.arena {
		b = p.evictParked(b)
	} else {
		p.unlink(b)
	}
	p.kill(b)
}

// kill evicts block b, out of the free queue, and kills its slot.
func (p *blockPool) kill(b int32) {
	m := &p.blocks[b]
	if m.hash != 0 {
		p.evictions++
		if !m.follows {
			p.indexed--
		}
	}
	*m = blockMeta{refs: -1, owner: noOwner}
	if c := b + 1; int(c) < len(p.blocks) && p.blocks[c].follows {
		// Its chain no longer reaches it.
		p.blocks[c].follows = false
		p.insert(c, p.blocks[c].hash)
	}
}

// compact moves the live blocks to the arena's first slots in order,
// rewrites the block ids in held (every list of ids the caller keeps: the
// blocks of the requests that hold any) and rebuilds the index without its
// stale entries. Ids held anywhere else, such as a finished request's hint,
// may afterwards name another block.
func (p *blockPool) compact(held func(rewrite func([]int32))) {
	if p.remap == nil {
		p.remap = make([]int32, len(p.blocks))
		for s := p.arena; int(s) < len(p.blocks); s++ {
			p.remap[s] = s // sentinels stay
		}
	}
	remap := p.remap
	n := int32(0)
	for s := range p.used {
		if p.blocks[s].refs < 0 {
			continue
		}
		remap[s] = n
		p.blocks[n] = p.blocks[s]
		n++
	}
	for b := n; b < p.used; b++ {
		p.blocks[b] = blockMeta{refs: -1, owner: noOwner}
	}
	p.used = n
	relink := func(m *blockMeta) {
		if m.prev != noBlock {
			m.prev = remap[m.prev]
		}
		if m.next != noBlock {
			m.next = remap[m.next]
		}
	}
	for b := range n {
		if m := &p.blocks[b]; m.inFree {
			relink(m)
		}
	}
	p.compactParked(relink)
	if p.head != noBlock {
		p.head, p.tail = remap[p.head], remap[p.tail]
	}
	held(func(ids []int32) {
		for i, b := range ids {
			ids[i] = remap[b]
		}
	})
	if p.caching {
		p.rebuildIndex()
	}
}

// rebuildIndex indexes every block that holds a hash and does not follow
// its parent, and nothing else.
func (p *blockPool) rebuildIndex() {
	p.index = newBlockIndex(max(minIndex, 2*p.indexed))
	p.indexed = 0
	for b := range p.used {
		if m := &p.blocks[b]; m.hash != 0 && !m.follows {
			s, _ := p.index.entry(m.hash)
			s.val = b
			p.indexed++
		}
	}
}

// insert indexes block b under h, rebuilding the table without its stale
// entries, and twice the size of the live ones, when it is half full.
func (p *blockPool) insert(b int32, h uint64) {
	if p.index.full() {
		old := p.index.slots
		p.index = newBlockIndex(max(minIndex, 2*(p.indexed+1)))
		for _, e := range old {
			if e.key != 0 && p.blocks[e.val].hash == e.key && !p.blocks[e.val].follows {
				s, _ := p.index.entry(e.key)
				s.val = e.val
			}
		}
	}
	s, _ := p.index.entry(h)
	s.val = b
	p.indexed++
}

// indexedBlock returns the block the index holds under h, if it still
// holds h: then it is the only block that does.
func (p *blockPool) indexedBlock(h uint64) (int32, bool) {
	b, ok := p.index.get(h)
	if !ok || p.blocks[b].hash != h {
		return 0, false
	}
	return b, true
}

// next returns the block after b if it holds h: the block computed after
// b in the same run, which the index does not hold.
func (p *blockPool) next(b int32, h uint64) (int32, bool) {
	c := b + 1
	if b < 0 || int(c) >= len(p.blocks) || p.blocks[c].hash != h {
		return 0, false
	}
	return c, true
}

// touch adds owner's reference to a cached block found by a prefix lookup.
func (p *blockPool) touch(b, owner int32) {
	m := &p.blocks[b]
	if m.refs == 0 && m.inFree {
		p.unlink(b)
	}
	m.refs++
	if o := m.owner; o >= 0 && o != owner {
		p.owners[o].foreign++
	}
}

// release drops owner's reference; a block nobody holds becomes evictable.
func (p *blockPool) release(b, owner int32) {
	m := &p.blocks[b]
	if o := m.owner; o >= 0 && o != owner {
		p.owners[o].foreign--
	}
	m.refs--
	if m.refs == 0 {
		p.pushTail(b)
	}
}

// freeBlocks releases a request's blocks, last block first, so that the tail
// of a sequence (least likely to be shared) is evicted before its prefix.
// It is release and pushTail for each block, with the queue's tail and
// count in locals: a session's whole history is released at the end of
// each turn, and the pool's fields reloaded through p for every block
// were a fifth of the loop.
func (p *blockPool) freeBlocks(blocks []int32, owner int32) {
	meta, tail, freed := p.blocks, p.tail, 0
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		m := &meta[b]
		if o := m.owner; o >= 0 && o != owner {
			p.owners[o].foreign--
		}
		m.refs--
		if m.refs != 0 {
			continue
		}
		m.prev, m.next, m.inFree = tail, noBlock, true
		if tail != noBlock {
			meta[tail].next = b
		} else {
			p.head = b
		}
		tail = b
		freed++
	}
	p.tail = tail
	p.numFree += freed
}

// touchAll touches each of hits (touch) and appends it to dst: a waiting
// request taking its prefix hits, nearly all of them its own previous
// turn's blocks, which sit next to each other in the free queue.
func (p *blockPool) touchAll(dst, hits []int32, owner int32) []int32 {
	meta := p.blocks
	for _, b := range hits {
		m := &meta[b]
		if o := m.owner; o >= 0 && o != owner {
			p.owners[o].foreign++
		}
		if m.refs == 0 && m.inFree {
			p.join(m.prev, m.next)
			m.inFree = false
			p.numFree--
		}
		m.refs++
	}
	return append(dst, hits...)
}

// lookup returns the cached blocks for the longest prefix of hashes, at most
// limit blocks, appending them to dst without touching them, and how many
// of them nobody holds (in the free queue: taking them shortens it). A block is
// looked for after the previous hit's block first (its run), then at
// hint[i], where present: a guess of the block that holds hashes[i] (the
// blocks the same request held for its previous turn, whose prompt is this
// prompt's prefix), then in the index. No two blocks hold one hash, so
// where it is found changes nothing but the cost.
//
// owner is the looking request's (noOwner: none). When the lookup reaches
// the place where owner's parked run begins and the run holds the next
// hashes, the run's blocks are the hits there without a look at each
// (the chained hash of the last one says the rest match), and fast says
// which (takeParked takes them); otherwise the run is unparked. A parked
// block of another owner's that the lookup finds unparks its run, unless
// probe: a probe (the router's) changes nothing and counts the block.
func (p *blockPool) lookup(dst []int32, hashes []uint64, limit int, hint []int32, owner int32, probe bool) (hits []int32, free int, fast fastHits) {
	fast.run = -1
	if !p.caching {
		return dst, 0, fast
	}
	limit = min(limit, len(hashes))
	run := int32(-1)
	if owner >= 0 {
		run = p.owners[owner].parked
	}
	if run < 0 {
		dst, free = p.walk(dst, hashes, 0, limit, hint, noBlock, probe, &fast)
		return dst, free, fast
	}
	r := &p.parked[run]
	from := min(int(r.from), limit)
	base := len(dst)
	dst, free = p.walk(dst, hashes, 0, from, hint, noBlock, probe, &fast)
	i := len(dst) - base
	prev := int32(noBlock)
	if i > 0 {
		prev = dst[len(dst)-1]
	}
	switch {
	case p.owners[owner].parked != run:
		// the walk found one of the run's blocks (a new session's prefix
		// the last one computed) and unparked it
		if i == from {
			var more int
			dst, more = p.walk(dst, hashes, i, limit, hint, prev, probe, &fast)
			free += more
		}
		return dst, free, fast
	case i < from:
		p.unpark(run, 0) // the session's prefix is gone: its turn cannot reach the run
		return dst, free, fast
	}
	end := min(limit, int(r.from+r.n))
	if known := min(end, int(r.fastTo)); known > i && p.blocks[r.ids[known-1-i]].hash == hashes[known-1] {
		// places from known on were cached after the run parked: one by one
		for known < end && p.blocks[r.ids[known-i]].hash == hashes[known] {
			known++
			p.parkStats.CachedAfter++
		}
		dst = append(dst, r.ids[:known-i]...)
		free += known - i
		fast = fastHits{run: run, from: len(dst) - (known - i), n: known - i}
		prev = dst[len(dst)-1]
		i = known
	} else {
		p.unpark(run, 0)
	}
	var more int
	dst, more = p.walk(dst, hashes, i, limit, hint, prev, probe, &fast)
	return dst, free + more, fast
}

// fastHits are hits a lookup took from its owner's parked run: dst[from:from+n]
// of its hits are the run's first n blocks.
type fastHits struct {
	run     int32
	from, n int
}

// walk is lookup's look at one block after another, from hashes[i] to
// hashes[limit−1] or the first miss; prev is the hit before hashes[i]. It
// returns the hits and how many nobody holds. A parked block it finds
// unparks its run (but in a probe), which ends fast when it is that run:
// its hits are then taken one by one.
func (p *blockPool) walk(dst []int32, hashes []uint64, i, limit int, hint []int32, prev int32, probe bool, fast *fastHits) ([]int32, int) {
	meta := p.blocks
	free := 0
	for ; i < limit; i++ {
		h := hashes[i]
		b := int32(noBlock)
		if c := prev + 1; prev >= 0 && int(c) < len(meta) && meta[c].hash == h {
			b = c // the next block of prev's run (next)
		} else if i < len(hint) && hint[i] >= 0 && int(hint[i]) < len(meta) && meta[hint[i]].hash == h {
			b = hint[i]
		} else if x, ok := p.indexedBlock(h); ok {
			b = x
		} else {
			return dst, free
		}
		switch m := &meta[b]; {
		case m.refs == 0:
			free++
		case m.refs == 1 && !m.inFree && m.owner >= 0:
			if run := p.parkedHolding(b); run >= 0 {
				free++
				if !probe {
					p.unpark(run, 0)
					if fast.run == run {
						fast.run = -1
					}
				}
			}
		}
		dst = append(dst, b)
		prev = b
	}
	return dst, free
}

// holder returns the block that holds hashes[i] in the prefix cache, or
// noBlock, where blocks[j] is the block a request keeps for hashes[j] (j ≤ i):
// that block itself, the indexed one, or the one after the holder of
// hashes[i−1].
func (p *blockPool) holder(blocks []int32, hashes []uint64, i int) int32 {
	if b := blocks[i]; p.blocks[b].hash == hashes[i] {
		return b
	}
	if b, ok := p.indexedBlock(hashes[i]); ok {
		return b
	}
	if i == 0 {
		return noBlock
	}
	if b, ok := p.next(p.holder(blocks, hashes, i-1), hashes[i]); ok {
		return b
	}
	return noBlock
}

// cacheRun registers blocks[from:to], full and computed, under their
// chained hashes hashes[from:to]: the blocks one request holds for
// hashes[j] are blocks[j] (j < to). A hash that is already cached keeps
// its first block (the duplicate stays private), as when two requests
// computed the same prefix in the same step. A block in the slot after
// its parent's block follows it; any other enters the index.
//
// known says that blocks[from−1] holds hashes[from−1] in the cache, so
// the run chains from it without reading it. cacheRun reports whether
// blocks[to−1] holds hashes[to−1] afterwards.
func (p *blockPool) cacheRun(blocks []int32, hashes []uint64, from, to int, known bool) bool {
	if !p.caching || from >= to {
		return false
	}
	prev := int32(noBlock)
	switch {
	case from > 0 && known:
		prev = blocks[from-1]
	case from > 0:
		prev = p.holder(blocks, hashes, from-1)
	}
	for i := from; i < to; i++ {
		b, h := blocks[i], hashes[i]
		m := &p.blocks[b]
		switch {
		case h == 0:
			prev = noBlock
			continue
		case m.hash != 0:
			prev = noBlock
			if m.hash == h {
				prev = b
			}
			continue
		}
		if prev != b-1 {
			if c, ok := p.next(prev, h); ok {
				prev = c // cached: the first block keeps it
				continue
			}
		}
		if c, ok := p.indexedBlock(h); ok {
			prev = c
			continue
		}
		m.hash = h
		if prev >= 0 && prev == b-1 {
			m.follows = true
		} else {
			p.insert(b, h)
		}
		prev = b
	}
	return prev >= 0 && prev == blocks[to-1]
}

// filledRun is blocks a step filled: blocks[from:to] of one request, whose
// blocks and chained hashes are blocks and hashes.
type filledRun struct {
	blocks   []int32
	hashes   []uint64
	from, to int
	// known: blocks[from−1] holds hashes[from−1] (cacheRun); holdsLast,
	// when set, is told whether blocks[to−1] holds hashes[to−1] after.
	known     bool
	holdsLast *bool
	// heldTo, when set, is the request's count of leading blocks that
	// hold their own hashes, which cacheRun extends
	heldTo *int
}

// cacheAll caches each run in order, as cacheRun does.
func (p *blockPool) cacheAll(runs []filledRun) {
	for _, r := range runs {
		ok := p.cacheRun(r.blocks, r.hashes, r.from, r.to, r.known)
		if r.holdsLast != nil {
			*r.holdsLast = ok
		}
		if h := r.heldTo; h != nil && *h == r.from {
			for i := r.from; i < r.to && p.blocks[r.blocks[i]].hash == r.hashes[i]; i++ {
				*h = i + 1
			}
		}
	}
}

// resetPrefixCache forgets every cached block, so no later request hits
// what earlier ones computed. Like vLLM's BlockPool it refuses (false)
// while any request holds a block: those blocks' hashes stay valid for the
// requests that own them. Blocks keep their place in the free queue.
func (p *blockPool) resetPrefixCache() bool {
	if p.numFree != p.live {
		return false
	}
	if !p.caching {
		return true
	}
	p.unparkAll()
	for b := range p.used {
		p.blocks[b].hash = 0
		p.blocks[b].follows = false
	}
	p.index.reset()
	p.indexed = 0
	return true
}

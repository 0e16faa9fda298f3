package sim

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
// physical block: a freshly allocated block takes the next unused slot, and
// the evicted block's slot dies. So the blocks a request computes in one
// go lie next to each other, and every later walk over them — the prefix
// hits of the session's next turn, their release last block first, their
// eviction from the head of the free queue — reads memory in order instead
// of missing the cache once per block, which is what a day of long
// sessions spent its time on. When the arena runs out the pool compacts:
// the live blocks move down in order, the ids the engine holds are
// rewritten, and the prefix-cache index is rebuilt. Ids mean nothing
// outside the pool and its engine; which blocks hold which hashes, the
// queue's order and every count are those of the one-slot-per-block pool
// this replaces (FuzzBlockPoolMatchesTheReference).
type blockPool struct {
	// blocks holds each slot's state in one record, so that the
	// operations on a block (a prefix hit, a release, an eviction) touch
	// one cache line.
	blocks []blockMeta
	used   int32 // slots handed out since the last compaction
	live   int   // blocks in the cache (fixed): the slots in use that are not dead

	head, tail int32
	numFree    int
	caching    bool
	index      *blockIndex

	remap []int32 // compaction's old slot → new slot

	evictions int64
}

// blockMeta is one slot's state.
type blockMeta struct {
	hash       uint64 // 0: block not in the prefix-cache index
	refs       int32  // dead slot: -1
	prev, next int32  // free-queue links; -1 at the ends
	inFree     bool
}

const noBlock = -1

// arenaFactor is the arena's size in cache sizes: a compaction every
// (arenaFactor − 1) × numBlocks allocations.
const arenaFactor = 3

// indexFactor is how many entries, in cache sizes, the index holds before
// the pool rebuilds it without the stale ones (at most half its slots).
const indexFactor = 2

func newBlockPool(numBlocks int, caching bool) *blockPool {
	p := &blockPool{
		blocks:  make([]blockMeta, arenaFactor*numBlocks),
		used:    int32(numBlocks),
		live:    numBlocks,
		head:    noBlock,
		tail:    noBlock,
		caching: caching,
	}
	if caching {
		p.index = newBlockIndex(indexFactor * numBlocks)
	}
	for b := range numBlocks {
		p.pushTail(int32(b))
	}
	for b := numBlocks; b < len(p.blocks); b++ {
		p.blocks[b].refs = -1
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
	m := &p.blocks[b]
	m.prev, m.next = p.tail, noBlock
	if p.tail != noBlock {
		p.blocks[p.tail].next = b
	} else {
		p.head = b
	}
	p.tail = b
	m.inFree = true
	p.numFree++
}

func (p *blockPool) unlink(b int32) {
	m := &p.blocks[b]
	pr, nx := m.prev, m.next
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
	m.inFree = false
	p.numFree--
}

// room is how many blocks can be allocated before the pool must compact.
func (p *blockPool) room() int { return len(p.blocks) - int(p.used) }

// allocate takes the block at the head of the free queue, evicting its
// cached contents, and returns it in the next unused slot. The caller has
// checked numFree and room. The evicted hash's index entry goes stale.
func (p *blockPool) allocate() int32 {
	b := p.head
	p.unlink(b)
	m := &p.blocks[b]
	if m.hash != 0 {
		p.evictions++
	}
	*m = blockMeta{refs: -1}
	nb := p.used
	p.used++
	p.blocks[nb] = blockMeta{refs: 1, prev: noBlock, next: noBlock}
	return nb
}

// compact moves the live blocks to the arena's first slots in order,
// rewrites the block ids in held (every list of ids the caller keeps: the
// blocks of the requests that hold any) and rebuilds the index without its
// stale entries. Ids held anywhere else, such as a finished request's hint,
// may afterwards name another block.
func (p *blockPool) compact(held func(rewrite func([]int32))) {
	if p.remap == nil {
		p.remap = make([]int32, len(p.blocks))
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
		p.blocks[b] = blockMeta{refs: -1}
	}
	p.used = n
	for b := range n {
		m := &p.blocks[b]
		if !m.inFree {
			continue
		}
		if m.prev != noBlock {
			m.prev = remap[m.prev]
		}
		if m.next != noBlock {
			m.next = remap[m.next]
		}
	}
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

// rebuildIndex indexes every block that holds a hash, and nothing else.
func (p *blockPool) rebuildIndex() {
	p.index.reset()
	for b := range p.used {
		if h := p.blocks[b].hash; h != 0 {
			s, _ := p.index.entry(h)
			s.val = b
		}
	}
}

// cached returns the block that holds h in the prefix cache.
func (p *blockPool) cached(h uint64) (int32, bool) {
	b, ok := p.index.get(h)
	if !ok || p.blocks[b].hash != h {
		return 0, false
	}
	return b, true
}

// touch adds a reference to a cached block found by a prefix lookup.
func (p *blockPool) touch(b int32) {
	m := &p.blocks[b]
	if m.refs == 0 && m.inFree {
		p.unlink(b)
	}
	m.refs++
}

// release drops one reference; a block nobody holds becomes evictable.
func (p *blockPool) release(b int32) {
	m := &p.blocks[b]
	m.refs--
	if m.refs == 0 {
		p.pushTail(b)
	}
}

// freeBlocks releases a request's blocks, last block first, so that the tail
// of a sequence (least likely to be shared) is evicted before its prefix.
func (p *blockPool) freeBlocks(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		p.release(blocks[i])
	}
}

// lookup returns the cached blocks for the longest prefix of hashes, at most
// limit blocks, appending them to dst without touching them. hint[i], where
// present, is a guess of the block that holds hashes[i] (the blocks the
// same request held for its previous turn, whose prompt is this prompt's
// prefix); a guess is taken only when that block is indexed under that
// very hash, which is the block the index would return, so hints change
// nothing but the cost (a hit reads the block's record instead of probing
// the index).
func (p *blockPool) lookup(dst []int32, hashes []uint64, limit int, hint []int32) []int32 {
	if !p.caching {
		return dst
	}
	if limit > len(hashes) {
		limit = len(hashes)
	}
	for i, h := range hashes[:limit] {
		if i < len(hint) {
			if b := hint[i]; b >= 0 && int(b) < len(p.blocks) && p.blocks[b].hash == h {
				dst = append(dst, b)
				continue
			}
		}
		b, ok := p.cached(h)
		if !ok {
			break
		}
		dst = append(dst, b)
	}
	return dst
}

// cache registers a full, computed block under its chained hash. A hash that
// is already indexed keeps its first block (the duplicate stays private), as
// when two requests computed the same prefix in the same step.
func (p *blockPool) cache(b int32, h uint64) {
	if !p.caching || h == 0 || p.blocks[b].hash != 0 {
		return
	}
	if p.index.n >= indexFactor*p.live {
		p.rebuildIndex()
	}
	s, fresh := p.index.entry(h)
	if !fresh && p.blocks[s.val].hash == h {
		return // indexed: the first block keeps it
	}
	s.val = b
	p.blocks[b].hash = h
}

// filledBlock is a block that a step filled, and its chained hash.
type filledBlock struct {
	b int32
	h uint64
}

// cacheAll caches each block in order, as cache does. The index slots of
// a step's blocks lie far apart in a table far larger than any cache; they
// are read once first, in a loop whose loads do not wait on each other, so
// that their misses overlap instead of each probe waiting for its own.
func (p *blockPool) cacheAll(blocks []filledBlock) {
	if !p.caching {
		return
	}
	const batch = 256
	for len(blocks) > 0 {
		n := min(len(blocks), batch)
		var keys uint64
		for _, f := range blocks[:n] {
			keys ^= p.index.slots[p.index.slot(f.h)].key
		}
		p.index.touched ^= keys
		for _, f := range blocks[:n] {
			p.cache(f.b, f.h)
		}
		blocks = blocks[n:]
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
	for b := range p.used {
		p.blocks[b].hash = 0
	}
	p.index.reset()
	return true
}

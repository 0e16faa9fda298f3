package sim

// blockPool is the paged KV cache of one engine: a fixed array of blocks with
// reference counts, a free queue in eviction order, and the prefix-cache index
// from chained block hash to block.
//
// As in vLLM v1, a block whose reference count drops to zero goes to the tail
// of the free queue but keeps its hash and contents; it is reused by a later
// request that hits it (and leaves the queue), or evicted when it reaches the
// head of the queue and a fresh block is needed. All state lives in flat
// slices indexed by block id, so no operation allocates.
type blockPool struct {
	refs   []int32
	hashes []uint64 // 0: block not in the prefix-cache index
	prev   []int32  // free-queue links; -1 at the ends
	next   []int32
	inFree []bool

	head, tail int32
	numFree    int
	caching    bool
	index      *blockIndex

	evictions int64
}

const noBlock = -1

func newBlockPool(numBlocks int, caching bool) *blockPool {
	p := &blockPool{
		refs:    make([]int32, numBlocks),
		hashes:  make([]uint64, numBlocks),
		prev:    make([]int32, numBlocks),
		next:    make([]int32, numBlocks),
		inFree:  make([]bool, numBlocks),
		head:    noBlock,
		tail:    noBlock,
		caching: caching,
	}
	if caching {
		p.index = newBlockIndex(numBlocks)
	}
	for b := range numBlocks {
		p.pushTail(int32(b))
	}
	return p
}

func (p *blockPool) size() int { return len(p.refs) }

// usage is the fraction of blocks held by requests, vLLM's
// kv_cache_usage_perc: cached blocks nobody holds count as free.
func (p *blockPool) usage() float64 {
	if len(p.refs) == 0 {
		return 0
	}
	return 1 - float64(p.numFree)/float64(len(p.refs))
}

func (p *blockPool) pushTail(b int32) {
	p.prev[b], p.next[b] = p.tail, noBlock
	if p.tail != noBlock {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.inFree[b] = true
	p.numFree++
}

func (p *blockPool) unlink(b int32) {
	pr, nx := p.prev[b], p.next[b]
	if pr != noBlock {
		p.next[pr] = nx
	} else {
		p.head = nx
	}
	if nx != noBlock {
		p.prev[nx] = pr
	} else {
		p.tail = pr
	}
	p.inFree[b] = false
	p.numFree--
}

// allocate takes the block at the head of the free queue, evicting its
// cached contents. The caller has checked numFree.
func (p *blockPool) allocate() int32 {
	b := p.head
	p.unlink(b)
	if h := p.hashes[b]; h != 0 {
		p.index.del(h)
		p.hashes[b] = 0
		p.evictions++
	}
	p.refs[b] = 1
	return b
}

// touch adds a reference to a cached block found by a prefix lookup.
func (p *blockPool) touch(b int32) {
	if p.refs[b] == 0 && p.inFree[b] {
		p.unlink(b)
	}
	p.refs[b]++
}

// release drops one reference; a block nobody holds becomes evictable.
func (p *blockPool) release(b int32) {
	p.refs[b]--
	if p.refs[b] == 0 {
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
// limit blocks, appending them to dst without touching them.
func (p *blockPool) lookup(dst []int32, hashes []uint64, limit int) []int32 {
	if !p.caching {
		return dst
	}
	if limit > len(hashes) {
		limit = len(hashes)
	}
	for _, h := range hashes[:limit] {
		b, ok := p.index.get(h)
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
	if !p.caching || h == 0 || p.hashes[b] != 0 {
		return
	}
	if p.index.put(h, b) {
		p.hashes[b] = h
	}
}

// resetPrefixCache forgets every cached block, so no later request hits
// what earlier ones computed. Like vLLM's BlockPool it refuses (false)
// while any request holds a block: those blocks' hashes stay valid for the
// requests that own them. Blocks keep their place in the free queue.
func (p *blockPool) resetPrefixCache() bool {
	if p.numFree != len(p.refs) {
		return false
	}
	if !p.caching {
		return true
	}
	for b, h := range p.hashes {
		if h != 0 {
			p.index.del(h)
			p.hashes[b] = 0
		}
	}
	return true
}

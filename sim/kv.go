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
	// blocks holds each block's state in one record, so that the
	// operations on a block (a prefix hit, a release, an eviction) touch
	// one cache line: a day of long sessions does little else.
	blocks []blockMeta

	head, tail int32
	numFree    int
	caching    bool
	index      *blockIndex

	evictions int64
}

// blockMeta is one block's state.
type blockMeta struct {
	hash       uint64 // 0: block not in the prefix-cache index
	refs       int32
	prev, next int32 // free-queue links; -1 at the ends
	inFree     bool
}

const noBlock = -1

func newBlockPool(numBlocks int, caching bool) *blockPool {
	p := &blockPool{
		blocks:  make([]blockMeta, numBlocks),
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

func (p *blockPool) size() int { return len(p.blocks) }

// usage is the fraction of blocks held by requests, vLLM's
// kv_cache_usage_perc: cached blocks nobody holds count as free.
func (p *blockPool) usage() float64 {
	if len(p.blocks) == 0 {
		return 0
	}
	return 1 - float64(p.numFree)/float64(len(p.blocks))
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

// allocate takes the block at the head of the free queue, evicting its
// cached contents. The caller has checked numFree.
func (p *blockPool) allocate() int32 {
	b := p.head
	p.unlink(b)
	m := &p.blocks[b]
	if h := m.hash; h != 0 {
		p.index.del(h)
		m.hash = 0
		p.evictions++
	}
	m.refs = 1
	return b
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
	if !p.caching || h == 0 || p.blocks[b].hash != 0 {
		return
	}
	if p.index.put(h, b) {
		p.blocks[b].hash = h
	}
}

// resetPrefixCache forgets every cached block, so no later request hits
// what earlier ones computed. Like vLLM's BlockPool it refuses (false)
// while any request holds a block: those blocks' hashes stay valid for the
// requests that own them. Blocks keep their place in the free queue.
func (p *blockPool) resetPrefixCache() bool {
	if p.numFree != len(p.blocks) {
		return false
	}
	if !p.caching {
		return true
	}
	for b := range p.blocks {
		if h := p.blocks[b].hash; h != 0 {
			p.index.del(h)
			p.blocks[b].hash = 0
		}
	}
	return true
}

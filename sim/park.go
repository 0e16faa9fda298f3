package sim

// Parked runs: a finished turn's own blocks released as one entry of the
// free queue.
//
// A session's history is nearly all its own blocks: computed by its
// earlier turns, held by no other request, and taken back whole as prefix
// hits by its next turn. Releasing them one by one at the end of a turn
// (a pass over the history) and taking them back one by one at the next
// (two more: the lookup and the touch) were half the CPU of a simulated
// day. A parked run is those blocks released as one node of the free
// queue, a sentinel, standing for them in their release order (last block
// first, as freeBlocks pushes them); the blocks' records are left as they
// were while held (one reference, not in the queue), and the run's list
// of ids says which they are. The next turn of the same request takes the
// run back in one step when the lookup reaches it (takeParked). Whatever
// else needs a parked block as the one-block-at-a-time pool would have it
// unparks the run first (unpark: the blocks take the sentinel's place in
// the queue, in its order): the queue's head evicting them (evictParked
// takes one at a time from the run's end), another request's lookup
// reaching one (lookup, parkedHolding), a reset. So every observable —
// which blocks the queue holds and in which order, what is evicted and
// when, the counts — is the one-block pool's (FuzzBlockPoolMatchesTheReference).
//
// A request may park a run only of blocks it took fresh or took back
// parked, that no other request holds (ownerState.foreign is zero) and
// that it holds once: blocks whose release would take every one of them
// to zero references and into the queue.

// parkStats count what parked runs did, for the tests that check they
// are used.
type parkStats struct {
	Parked, Taken, TakenBlocks, Unparked int64
	// CachedAfter counts taken blocks cached after their run parked
	CachedAfter int64
}

// noOwner marks a block no request owns, and a request the pool does not
// track.
const noOwner = -1

// maxParked is how many parked runs one pool holds at a time; a finished
// turn with none left releases block by block.
const maxParked = 4096

// ownerState is one owner's standing in the pool: an owner is a request
// (one virtual user's, over its turns) as this pool knows it.
type ownerState struct {
	// foreign counts the references other requests hold on blocks this
	// owner owns: while any do, its release cannot park them.
	foreign int32
	// parked is the owner's parked run, −1 for none.
	parked int32
}

// parkedRun is a run of blocks released as one entry of the free queue.
// ids[k] is the block at place from+k of its owner's list; ids[:n] are
// still parked, ids[n−1] the next to be evicted; places [from, fastTo)
// are known to hold their hashes (Request.heldTo at the release).
type parkedRun struct {
	ids       []int32
	from, n   int32
	fastTo    int32
	owner     int32
	sentinel  int32
	inService bool
}

// newOwner registers an owner and returns its id.
func (p *blockPool) newOwner() int32 {
	p.owners = append(p.owners, ownerState{parked: -1})
	return int32(len(p.owners) - 1)
}

// park releases blocks[from:], last block first, as one parked run of
// owner's, whose places [from, fastTo) hold their hashes, and reports
// whether it could (a parked run was free). The caller has checked that
// owner took every one of them fresh or back from its parked run, holds
// each once and that no other request holds any (ownerState.foreign).
func (p *blockPool) park(owner int32, blocks []int32, from, fastTo int) bool {
	if len(p.freeParked) == 0 || from >= len(blocks) || p.owners[owner].parked >= 0 {
		return false
	}
	i := p.freeParked[len(p.freeParked)-1]
	p.freeParked = p.freeParked[:len(p.freeParked)-1]
	r := &p.parked[i]
	r.ids = append(r.ids[:0], blocks[from:]...)
	r.from, r.n, r.fastTo, r.owner = int32(from), int32(len(blocks)-from), int32(max(from, fastTo)), owner
	r.sentinel, r.inService = p.arena+i, true
	p.owners[owner].parked = i
	p.parkedCount++
	p.parkStats.Parked++
	p.linkTail(r.sentinel)
	p.numFree += int(r.n)
	return true
}

// endParked returns run i to the free list; its sentinel has left the
// queue.
func (p *blockPool) endParked(i int32) {
	r := &p.parked[i]
	if o := &p.owners[r.owner]; o.parked == i {
		o.parked = -1
	}
	r.inService, r.n = false, 0
	p.freeParked = append(p.freeParked, i)
	p.parkedCount--
}

// evictParked takes the next block to evict from the parked run whose
// sentinel s is at the head of the queue, counting it out of the free
// blocks, and returns it.
func (p *blockPool) evictParked(s int32) int32 {
	i := s - p.arena
	r := &p.parked[i]
	r.n--
	b := r.ids[r.n]
	if r.n == 0 {
		p.unlinkNode(s)
		p.endParked(i)
	}
	p.numFree--
	return b
}

// unpark puts run i's blocks ids[k:n] into the queue in the sentinel's
// place, in its order, unheld, and ends the run; ids[:k] are taken
// (takeParked) and stay as they are.
func (p *blockPool) unpark(i int32, k int32) {
	r := &p.parked[i]
	if k == 0 {
		p.parkStats.Unparked++
	}
	meta := p.blocks
	s := r.sentinel
	prev, next := meta[s].prev, meta[s].next
	for j := r.n - 1; j >= k; j-- {
		b := r.ids[j]
		m := &meta[b]
		m.refs, m.inFree, m.prev = 0, true, prev
		if prev != noBlock {
			meta[prev].next = b
		} else {
			p.head = b
		}
		prev = b
	}
	p.join(prev, next)
	meta[s].prev, meta[s].next, meta[s].inFree = noBlock, noBlock, false
	p.endParked(i)
}

// takeParked gives the run's owner back the run's first k blocks, held
// once as before it parked them (its next turn's prefix hits), and puts
// the rest into the queue in the run's place.
func (p *blockPool) takeParked(i int32, k int) {
	p.parkStats.Taken++
	p.parkStats.TakenBlocks += int64(k)
	p.numFree -= k
	p.unpark(i, int32(k))
}

// unparkAll unparks every parked run.
func (p *blockPool) unparkAll() {
	for i := range p.parked {
		if p.parked[i].inService {
			p.unpark(int32(i), 0)
		}
	}
}

// parkedHolding returns the parked run that holds block b, whose record
// shows one reference and no place in the queue, or −1.
func (p *blockPool) parkedHolding(b int32) int32 {
	m := &p.blocks[b]
	if m.owner < 0 || int(m.owner) >= len(p.owners) {
		return -1
	}
	i := p.owners[m.owner].parked
	if i < 0 {
		return -1
	}
	r := &p.parked[i]
	if k := m.pos - r.from; k >= 0 && k < r.n && r.ids[k] == b {
		return i
	}
	return -1
}

// compactParked rewrites the parked runs' ids after a compaction moved
// the blocks (remap) and relinks their sentinels.
func (p *blockPool) compactParked(relink func(*blockMeta)) {
	if p.parkedCount == 0 {
		return
	}
	for i := range p.parked {
		r := &p.parked[i]
		if !r.inService {
			continue
		}
		for k, b := range r.ids[:r.n] {
			r.ids[k] = p.remap[b]
		}
		relink(&p.blocks[r.sentinel])
	}
}

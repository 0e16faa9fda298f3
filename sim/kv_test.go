package sim

import (
	"math/rand/v2"
	"testing"
)

// refPool is the block pool as it was before slots and compaction: one
// record per physical block, the index a Go map that forgets a hash when
// its block is evicted. FuzzBlockPoolMatchesTheReference holds the pool to
// it.
type refPool struct {
	refs       []int32
	hash       []uint64
	prev, next []int32
	inFree     []bool
	head, tail int32
	numFree    int
	index      map[uint64]int32
	evictions  int64
}

func newRefPool(n int) *refPool {
	p := &refPool{refs: make([]int32, n), hash: make([]uint64, n), prev: make([]int32, n), next: make([]int32, n),
		inFree: make([]bool, n), head: noBlock, tail: noBlock, index: map[uint64]int32{}}
	for b := range n {
		p.pushTail(int32(b))
	}
	return p
}

func (p *refPool) pushTail(b int32) {
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

func (p *refPool) unlink(b int32) {
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

func (p *refPool) allocate() int32 {
	b := p.head
	p.unlink(b)
	if h := p.hash[b]; h != 0 {
		delete(p.index, h)
		p.hash[b] = 0
		p.evictions++
	}
	p.refs[b] = 1
	return b
}

func (p *refPool) touch(b int32) {
	if p.refs[b] == 0 && p.inFree[b] {
		p.unlink(b)
	}
	p.refs[b]++
}

func (p *refPool) release(b int32) {
	p.refs[b]--
	if p.refs[b] == 0 {
		p.pushTail(b)
	}
}

func (p *refPool) lookup(hashes []uint64, limit int) []int32 {
	var dst []int32
	for _, h := range hashes[:min(limit, len(hashes))] {
		b, ok := p.index[h]
		if !ok {
			break
		}
		dst = append(dst, b)
	}
	return dst
}

func (p *refPool) cache(b int32, h uint64) {
	if p.hash[b] != 0 {
		return
	}
	if _, ok := p.index[h]; !ok {
		p.index[h] = b
		p.hash[b] = h
	}
}

func (p *refPool) reset() bool {
	if p.numFree != len(p.refs) {
		return false
	}
	for b, h := range p.hash {
		if h != 0 {
			delete(p.index, h)
			p.hash[b] = 0
		}
	}
	return true
}

// poolReq is one request of the property test, held in both pools.
type poolReq struct {
	hashes    []uint64
	got, want []int32 // its blocks in the pool under test and in the reference
	hint      []int32 // its previous turn's blocks in the pool under test
	owner     int32   // its session's owner id in the pool under test
	tail      int     // got[tail:] are cached after its release, if at all
	// got[:heldTo] hold their hashes; got[privateFrom:] are its own
	heldTo, privateFrom int
}

// FuzzBlockPoolMatchesTheReference drives the pool and refPool with the
// same requests — sessions whose turns extend their history over prefixes
// shared between sessions, prompts computed twice in one step, requests
// that give up, releases in either order, cache resets, blocks taken from
// reservations with slots left unused — on a cache small
// enough to compact every few requests, and checks after every operation
// that both agree on every prefix hit, every hash a held block carries,
// every reference count, the free count and the evictions, that every
// cached hash is held once and found (indexed, or following its parent's
// block), and that a previous turn's ids passed as hints (stale after a
// compaction) never change a lookup.
func FuzzBlockPoolMatchesTheReference(f *testing.F) {
	f.Add(uint64(1), uint16(400), uint8(48))
	f.Add(uint64(2), uint16(2000), uint8(120))
	f.Add(uint64(3), uint16(3000), uint8(90))
	f.Fuzz(func(t *testing.T, seed uint64, ops uint16, size uint8) {
		const maxLen = 16
		n := int(size)%100 + maxLen + 1
		rng := rand.New(rand.NewPCG(seed, 7))
		// a few parked runs at a time, so that a release sometimes finds
		// none left
		p, ref := newBlockPoolParking(n, true, 1+int(seed%8)), newRefPool(n)
		sessions := make([]*poolReq, 10)
		gen := make([]int, len(sessions))
		owners := make([]int32, len(sessions))
		for i := range owners {
			owners[i] = p.newOwner()
		}
		var held []*poolReq
		chain := func(doc, length int) []uint64 {
			shared := 1 + doc%5
			hs := make([]uint64, length)
			for i := range hs {
				owner := doc
				if i < shared {
					owner = 0 // a prefix every session shares
				}
				hs[i] = uint64(owner)<<32 | uint64(i) + 1
			}
			return hs
		}
		compactions, requests, hitBlocks, parks, taken := 0, 0, 0, 0, 0
		// sameQueues: the free queues hold the same blocks in the same order.
		sameQueues := func(op int) {
			w, queued := ref.head, 0
			p.eachQueued(func(g int32) {
				refs, inFree := p.state(g)
				if w == noBlock || p.blocks[g].hash != ref.hash[w] || refs != 0 || !inFree {
					t.Fatalf("op %d: free queues differ at %d: hash %x refs %d", op, queued, p.blocks[g].hash, refs)
				}
				w, queued = ref.next[w], queued+1
			})
			if w != noBlock || queued != p.numFree {
				t.Fatalf("op %d: free queues differ in length (%d queued, %d free)", op, queued, p.numFree)
			}
		}
		for op := range int(ops) {
			switch k := rng.IntN(10); {
			case k < 5: // a session's next turn, or a new session
				s := rng.IntN(len(sessions))
				r := sessions[s]
				if r != nil && len(r.got) > 0 {
					break // its turn is still running
				}
				if r != nil && rng.IntN(12) == 0 {
					// the session's request comes back from another
					// engine: a new owner here, its parked run orphaned
					owners[s] = p.newOwner()
					r.owner = owners[s]
				}
				if r == nil || len(r.hashes) >= maxLen || rng.IntN(8) == 0 {
					// A new session, on new content, with the old one's
					// blocks for a (wrong) hint.
					gen[s]++
					nr := &poolReq{owner: owners[s]}
					if r != nil {
						nr.hint = r.hint
					}
					r, sessions[s] = nr, nr
				}
				r.hashes = chain(s+1+len(sessions)*gen[s], min(maxLen, len(r.hashes)+1+rng.IntN(5)))
				limit := len(r.hashes) - rng.IntN(2)
				hits, free, fast := p.lookup(nil, r.hashes, limit, r.hint, r.owner, false)
				want := ref.lookup(r.hashes, limit)
				hitBlocks += len(hits)
				if len(hits) != len(want) {
					t.Fatalf("op %d: %d hits, the reference %d", op, len(hits), len(want))
				}
				fresh, evictable := len(r.hashes)-len(hits), 0
				for _, b := range hits {
					if refs, _ := p.state(b); refs == 0 {
						evictable++
					}
				}
				if fast.run >= 0 && rng.IntN(8) == 0 {
					// a router's probe finds the same and changes nothing
					if probe, _, _ := p.lookup(nil, r.hashes, limit, nil, noOwner, true); len(probe) != len(hits) {
						t.Fatalf("op %d: a probe finds %d hits, the lookup %d", op, len(probe), len(hits))
					}
				}
				if free != evictable {
					t.Fatalf("op %d: lookup counts %d of its hits unheld, %d are", op, free, evictable)
				}
				if fresh > p.numFree-evictable {
					break
				}
				if fresh > p.room() {
					compactions++
					p.compact(func(rewrite func([]int32)) {
						for _, x := range held {
							rewrite(x.got)
						}
						rewrite(hits)
					})
				}
				switch {
				case fast.run >= 0:
					taken += fast.n
					p.touchAll(nil, hits[:fast.from], r.owner)
					p.takeParked(fast.run, fast.n)
					p.touchAll(nil, hits[fast.from+fast.n:], r.owner)
				case rng.IntN(2) == 0:
					p.touchAll(nil, hits, r.owner)
				default:
					for _, b := range hits {
						p.touch(b, r.owner)
					}
				}
				r.heldTo, r.privateFrom = len(hits), len(hits)
				if fast.run >= 0 && fast.from+fast.n == len(hits) {
					r.privateFrom = fast.from
				}
				for i := range hits {
					ref.touch(want[i])
				}
				r.got, r.want = hits, want
				// Half the requests take their blocks from a reservation,
				// some of it left unused, as the engine's requests do.
				var res reservation
				if extra := rng.IntN(3); rng.IntN(2) == 0 && fresh+extra <= p.room() {
					res = p.reserve(fresh + extra)
				}
				if k := min(len(r.hashes)-len(r.got), res.left()); k > 0 {
					r.got = p.allocateRunIn(r.got, &res, r.owner, k)
					for range k {
						r.want = append(r.want, ref.allocate())
					}
				}
				for len(r.got) < len(r.hashes) {
					r.got = append(r.got, p.allocate(r.owner, int32(len(r.got))))
					r.want = append(r.want, ref.allocate())
				}
				// Runs of computed blocks; some blocks stay uncomputed.
				// The first chains from the hits, which hold their hashes
				// (known); cacheRun says whether its last block holds its.
				// A tail of some is cached only after the request released
				// them (finishing), as the engine's last step does.
				known := len(hits) > 0
				r.tail = len(r.hashes)
				if rng.IntN(3) == 0 {
					r.tail -= rng.IntN(len(r.hashes) - len(hits) + 1)
				}
				for i := len(hits); i < r.tail; {
					j := i
					for j < r.tail && rng.IntN(6) > 0 {
						ref.cache(r.want[j], r.hashes[j])
						j++
					}
					if known && p.holder(r.got, r.hashes, i-1) != r.got[i-1] {
						t.Fatalf("op %d: block %d was known to hold its hash and does not", op, i-1)
					}
					run := filledRun{blocks: r.got, hashes: r.hashes, from: i, to: j, known: known && rng.IntN(2) == 0, heldTo: &r.heldTo}
					var holds bool
					run.holdsLast = &holds
					p.cacheAll([]filledRun{run})
					if holds != (j > i && p.holder(r.got, r.hashes, j-1) == r.got[j-1]) {
						t.Fatalf("op %d: cacheRun's report on block %d is wrong", op, j-1)
					}
					for x := range r.heldTo {
						if p.blocks[r.got[x]].hash != r.hashes[x] {
							t.Fatalf("op %d: block %d of %d said to hold its hash does not", op, x, r.heldTo)
						}
					}
					known = false // the next run starts after an uncomputed block
					i = j + 1
				}
				held = append(held, r)
				requests++
			case k < 9 && len(held) > 0: // a request finishes
				i := rng.IntN(len(held))
				r := held[i]
				held = append(held[:i], held[i+1:]...)
				switch k := rng.IntN(8); {
				case k < 4 && p.owners[r.owner].foreign == 0 && p.park(r.owner, r.got, r.privateFrom, r.heldTo):
					// its own blocks as one parked run (when one is
					// left), then the rest
					parks++
					p.freeBlocks(r.got[:r.privateFrom], r.owner)
					for j := len(r.want) - 1; j >= 0; j-- {
						ref.release(r.want[j])
					}
				case k < 7:
					p.freeBlocks(r.got, r.owner)
					for j := len(r.want) - 1; j >= 0; j-- {
						ref.release(r.want[j])
					}
				default:
					// First block first, as the engine never does: a
					// parent then goes before its child in the free queue,
					// which leaves the child cached without its parent.
					for j := range r.want {
						p.release(r.got[j], r.owner)
						ref.release(r.want[j])
					}
				}
				if end := r.tail + rng.IntN(len(r.got)-r.tail+1); end > r.tail {
					// the last step's blocks, cached after the release
					for j := r.tail; j < end; j++ {
						ref.cache(r.want[j], r.hashes[j])
					}
					p.cacheAll([]filledRun{{blocks: r.got, hashes: r.hashes, from: r.tail, to: end, heldTo: &r.heldTo}})
				}
				r.hint = r.got // the engine keeps the array: the next turn's hint
				r.got, r.want = nil, nil
			case k == 9:
				if a, b := p.resetPrefixCache(), ref.reset(); a != b {
					t.Fatalf("op %d: reset %v, the reference %v", op, a, b)
				}
			}
			sameQueues(op)
			if p.numFree != ref.numFree || p.evictions != ref.evictions || p.size() != n {
				t.Fatalf("op %d: free %d evictions %d size %d, the reference free %d evictions %d size %d",
					op, p.numFree, p.evictions, p.size(), ref.numFree, ref.evictions, n)
			}
			// An owner's foreign count is the references other requests
			// hold on its blocks.
			foreign := make([]int32, len(p.owners))
			for _, r := range held {
				for _, b := range r.got {
					if o := p.blocks[b].owner; o >= 0 && o != r.owner {
						foreign[o]++
					}
				}
			}
			for o := range foreign {
				if foreign[o] != p.owners[o].foreign {
					t.Fatalf("op %d: owner %d: foreign count %d, other requests hold %d of its blocks", op, o, p.owners[o].foreign, foreign[o])
				}
			}
			for _, r := range held {
				for j, b := range r.got {
					if m := p.blocks[b]; m.hash != ref.hash[r.want[j]] || m.refs != ref.refs[r.want[j]] {
						t.Fatalf("op %d: block %d holds hash %x refs %d, the reference %x refs %d",
							op, j, m.hash, m.refs, ref.hash[r.want[j]], ref.refs[r.want[j]])
					}
				}
			}
			// Every cached hash is held by one block, in the state the
			// reference's block has, and that block is indexed or follows
			// its parent's block.
			holders := map[uint64]int32{}
			for b := range p.used {
				m := p.blocks[b]
				if m.hash == 0 {
					if m.follows {
						t.Fatalf("op %d: block %d follows without a hash", op, b)
					}
					continue
				}
				if _, dup := holders[m.hash]; dup {
					t.Fatalf("op %d: hash %x held twice", op, m.hash)
				}
				holders[m.hash] = b
				if m.follows {
					if b == 0 || p.blocks[b-1].hash == 0 {
						t.Fatalf("op %d: block %d follows a block without a hash", op, b)
					}
				} else if got, ok := p.indexedBlock(m.hash); !ok || got != b {
					t.Fatalf("op %d: block %d neither follows nor is indexed", op, b)
				}
			}
			if len(holders) != len(ref.index) {
				t.Fatalf("op %d: %d hashes cached, the reference %d", op, len(holders), len(ref.index))
			}
			for h, b := range ref.index {
				got, ok := holders[h]
				if refs, inFree := p.state(got); !ok || refs != ref.refs[b] || inFree != ref.inFree[b] {
					t.Fatalf("op %d: hash %x not cached as the reference has it", op, h)
				}
			}
		}
		t.Logf("%d blocks: %d requests, %d prefix hits (%d from parked runs), %d evictions, %d compactions, %d parked runs", n, requests, hitBlocks, taken, p.evictions, compactions, parks)
		if ops > 1000 && (compactions == 0 || p.evictions == 0 || hitBlocks == 0) {
			t.Fatalf("%d operations on %d blocks: %d compactions, %d evictions, %d hits: the test exercises nothing", ops, n, compactions, p.evictions, hitBlocks)
		}
		// The seed corpus's long inputs go through every path of parked
		// runs (a fuzzed input may not: a cache of a few blocks).
		if s := p.parkStats; (seed == 2 && ops == 2000 && size == 120 || seed == 3 && ops == 3000 && size == 90) &&
			(parks == 0 || taken == 0 || s.Unparked == 0 || s.CachedAfter == 0) {
			t.Fatalf("%d operations on %d blocks: %d parked runs, %d hits from them (%d cached after they parked), %d unparked: parked runs are not exercised",
				ops, n, parks, taken, s.CachedAfter, s.Unparked)
		}
	})
}

// The index finds every key put and none other, through its filter of
// seen keys, and forgets them all on reset.
func TestBlockIndexFindsWhatWasPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	x := newBlockIndex(1000)
	put := map[uint64]int32{}
	for i := range 1000 {
		h := rng.Uint64() | 1
		s, _ := x.entry(h)
		s.val = int32(i)
		put[h] = int32(i)
	}
	for h, v := range put {
		if got, ok := x.get(h); !ok || got != v {
			t.Fatalf("get(%x) = %d, %v; want %d", h, got, ok, v)
		}
	}
	for range 100000 {
		h := rng.Uint64() | 1
		if _, was := put[h]; !was {
			if _, ok := x.get(h); ok {
				t.Fatalf("get(%x) found a key never put", h)
			}
		}
	}
	x.reset()
	for h := range put {
		if _, ok := x.get(h); ok {
			t.Fatalf("get(%x) found a key after reset", h)
		}
	}
}

// state is block b's reference count and whether it is in the free
// queue, as the one-block pool has them: a parked block is unheld and
// queued.
func (p *blockPool) state(b int32) (int32, bool) {
	m := &p.blocks[b]
	if m.refs == 1 && !m.inFree && p.parkedHolding(b) >= 0 {
		return 0, true
	}
	return m.refs, m.inFree
}

// eachQueued calls f for every block in the free queue, head first, a
// parked run's blocks in its order.
func (p *blockPool) eachQueued(f func(b int32)) {
	for b := p.head; b != noBlock; b = p.blocks[b].next {
		if b < p.arena {
			f(b)
			continue
		}
		r := &p.parked[b-p.arena]
		for j := r.n - 1; j >= 0; j-- {
			f(r.ids[j])
		}
	}
}

package sim

import "math/bits"

// blockIndex maps block hashes (nonzero) to block ids: an open-addressing
// table with linear probing that never deletes. An evicted block's entry
// stays behind, stale, until its hash is cached again (the entry is
// reused) or the block pool rebuilds the table (when it compacts, or when
// the table is half full): a deletion would be one more probe per
// eviction. So the table answers only "where was h last put": the pool
// checks the block still holds h. The pool indexes only the blocks its
// runs of blocks do not reach (blockPool.cacheRun), a small share of the
// cache, so the table is a fraction of the size one entry per cached
// block took.
type blockIndex struct {
	slots []indexSlot
	mask  uint64
	shift uint
	n     int // occupied slots, stale entries included
	// seen has a bit set for every key ever put (one hash, 8 bits per
	// slot): most gets are for a hash the table does not hold — the
	// duplicate check of every block a step caches — and a clear bit
	// answers them from a few kilobytes instead of a probe sequence.
	seen      []uint64
	seenShift uint
}

// indexSlot keeps a key beside its value: a hit reads one cache line.
type indexSlot struct {
	key uint64 // 0: empty slot
	val int32
}

// newBlockIndex returns a table that holds capacity entries at a load
// factor of at most one half.
func newBlockIndex(capacity int) *blockIndex {
	size := 16
	for size < 2*capacity {
		size <<= 1
	}
	return &blockIndex{
		slots:     make([]indexSlot, size),
		mask:      uint64(size - 1),
		shift:     uint(64 - bits.TrailingZeros(uint(size))),
		seen:      make([]uint64, size/8),
		seenShift: uint(64 - bits.TrailingZeros(uint(size*8))),
	}
}

// seenBit returns h's word and bit in seen.
func (x *blockIndex) seenBit(h uint64) (int, uint64) {
	v := (h * 0xc2b2ae3d27d4eb4f) >> x.seenShift
	return int(v >> 6), 1 << (v & 63)
}

func (x *blockIndex) slot(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> x.shift }

// get returns the value last put under h.
func (x *blockIndex) get(h uint64) (int32, bool) {
	if w, bit := x.seenBit(h); x.seen[w]&bit == 0 {
		return 0, false
	}
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		switch x.slots[i].key {
		case h:
			return x.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// entry returns h's slot, claiming an empty one when h is absent; fresh
// says which. The caller stores the value.
func (x *blockIndex) entry(h uint64) (slot *indexSlot, fresh bool) {
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		s := &x.slots[i]
		switch s.key {
		case h:
			return s, false
		case 0:
			s.key = h
			x.n++
			w, bit := x.seenBit(h)
			x.seen[w] |= bit
			return s, true
		}
	}
}

// full reports whether one more entry would take the table past half full.
func (x *blockIndex) full() bool { return 2*(x.n+1) > len(x.slots) }

// reset empties the table.
func (x *blockIndex) reset() {
	clear(x.slots)
	clear(x.seen)
	x.n = 0
}

package sim

import "math/bits"

// blockIndex maps block hashes (nonzero) to block ids: an open-addressing
// table with linear probing and backward-shift deletion, so the constant
// churn of a prefix cache (every eviction deletes, every full block inserts)
// leaves no tombstones and probes stay short. It holds at most the number of
// blocks it was sized for, at a load factor of at most one half.
type blockIndex struct {
	slots []indexSlot
	mask  uint64
	shift uint
	n     int
}

// indexSlot keeps a key beside its value: a hit reads one cache line.
type indexSlot struct {
	key uint64 // 0: empty slot
	val int32
}

func newBlockIndex(capacity int) *blockIndex {
	size := 16
	for size < 2*capacity {
		size <<= 1
	}
	return &blockIndex{
		slots: make([]indexSlot, size),
		mask:  uint64(size - 1),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
	}
}

func (x *blockIndex) slot(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> x.shift }

func (x *blockIndex) get(h uint64) (int32, bool) {
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		switch x.slots[i].key {
		case h:
			return x.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// put inserts h → b unless h is present; it reports whether it inserted.
func (x *blockIndex) put(h uint64, b int32) bool {
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		switch x.slots[i].key {
		case h:
			return false
		case 0:
			x.slots[i] = indexSlot{h, b}
			x.n++
			return true
		}
	}
}

// del removes h if present, shifting later entries of its probe run back.
func (x *blockIndex) del(h uint64) {
	i := x.slot(h)
	for {
		k := x.slots[i].key
		if k == 0 {
			return
		}
		if k == h {
			break
		}
		i = (i + 1) & x.mask
	}
	x.n--
	for j := (i + 1) & x.mask; ; j = (j + 1) & x.mask {
		k := x.slots[j].key
		if k == 0 {
			break
		}
		// Move k back to the hole at i if its home slot is not in (i, j].
		home := x.slot(k)
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
}

package sim

import "math/bits"

// blockIndex maps block hashes (nonzero) to block ids: an open-addressing
// table with linear probing and backward-shift deletion, so the constant
// churn of a prefix cache (every eviction deletes, every full block inserts)
// leaves no tombstones and probes stay short. It holds at most the number of
// blocks it was sized for, at a load factor of at most one half.
type blockIndex struct {
	keys  []uint64 // 0: empty slot
	vals  []int32
	mask  uint64
	shift uint
	n     int
}

func newBlockIndex(capacity int) *blockIndex {
	size := 16
	for size < 2*capacity {
		size <<= 1
	}
	return &blockIndex{
		keys:  make([]uint64, size),
		vals:  make([]int32, size),
		mask:  uint64(size - 1),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
	}
}

func (x *blockIndex) slot(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> x.shift }

func (x *blockIndex) get(h uint64) (int32, bool) {
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case h:
			return x.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put inserts h → b unless h is present; it reports whether it inserted.
func (x *blockIndex) put(h uint64, b int32) bool {
	for i := x.slot(h); ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case h:
			return false
		case 0:
			x.keys[i], x.vals[i] = h, b
			x.n++
			return true
		}
	}
}

// del removes h if present, shifting later entries of its probe run back.
func (x *blockIndex) del(h uint64) {
	i := x.slot(h)
	for {
		k := x.keys[i]
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
		k := x.keys[j]
		if k == 0 {
			break
		}
		// Move k back to the hole at i if its home slot is not in (i, j].
		home := x.slot(k)
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.keys[i], x.vals[i] = k, x.vals[j]
			i = j
		}
	}
	x.keys[i] = 0
}

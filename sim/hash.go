package sim

import "math/bits"

// BlockHasher computes the chained hashes of a token sequence's full KV
// blocks incrementally, the way vLLM's prefix cache identifies blocks: a
// block's hash covers its own tokens and the hash of the block before it, so
// equal hashes mean equal prefixes.
//
// Tokens are never materialised. A run of content-addressed tokens is
// described by a key and an offset — workload.Segment's Key, where equal key
// and offset mean identical tokens — and contiguous runs of one key are
// merged before hashing, so the same content hashes the same however it was
// split into segments. Real token ids (the HTTP server) hash one by one.
type BlockHasher struct {
	blockSize int
	hashes    []uint64

	state uint64 // running hash of the partial block, seeded by the parent
	fill  int    // tokens in the partial block

	// pending run not yet folded into state
	pendKey, pendOff, pendLen uint64
	pending                   bool
}

// NewBlockHasher returns a hasher for blocks of blockSize tokens.
func NewBlockHasher(blockSize int) *BlockHasher {
	h := &BlockHasher{blockSize: blockSize}
	h.Reset()
	return h
}

// Reset starts a new sequence, keeping the buffer. Slices returned by Hashes
// before Reset must no longer be read.
func (h *BlockHasher) Reset() {
	h.hashes = h.hashes[:0]
	h.state, h.fill, h.pending = seedHash, 0, false
}

// reserve makes room for n blocks' hashes; call it before Reset.
func (h *BlockHasher) reserve(n int) {
	if cap(h.hashes) < n {
		h.hashes = make([]uint64, 0, n)
	}
}

// Hashes returns the hashes of the full blocks so far. Later appends never
// change the returned elements.
func (h *BlockHasher) Hashes() []uint64 { return h.hashes }

// Tokens is the sequence length so far.
func (h *BlockHasher) Tokens() int { return len(h.hashes)*h.blockSize + h.fill }

const (
	seedHash  = 0x6a09e667f3bcc908
	tokenSalt = 0x243f6a8885a308d3
	runSalt   = 0xa0761d6478bd642f
	lenSalt   = 0xe7037ed1a0b428db
)

func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h *= 0xff51afd7ed558ccd
	return h ^ h>>29
}

func fmix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	if h == 0 {
		h = 1 // 0 marks "not cached" in the block pool
	}
	return h
}

// flushPending folds the pending run into the state with one 128-bit
// multiply (three chained mixes were a second of a simulated day): the
// key, salted, with the state, times the offset and length, which never
// overlap (a run's length is at most a block, ≤ 1,024 tokens by
// EngineParams.Validate, and offsets stay below 2⁴⁸).
// TestBlockHashesNameTheirPrefix checks that each of the three counts.
func (h *BlockHasher) flushPending() {
	if h.pending {
		h.state = mum(h.state^h.pendKey^runSalt, (h.pendOff<<16|h.pendLen)^lenSalt)
		h.pending = false
	}
}

// mum folds the 128-bit product of a and b into 64 bits.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func (h *BlockHasher) closeBlock() {
	h.flushPending()
	parent := fmix(h.state)
	h.hashes = append(h.hashes, parent)
	h.state, h.fill = parent, 0
}

// AppendRun appends n tokens of the content identified by key, starting at
// offset within it.
func (h *BlockHasher) AppendRun(key uint64, offset, n int) {
	for n > 0 {
		take := min(n, h.blockSize-h.fill)
		if h.pending && h.pendKey == key && h.pendOff+h.pendLen == uint64(offset) {
			h.pendLen += uint64(take)
		} else {
			h.flushPending()
			h.pendKey, h.pendOff, h.pendLen, h.pending = key, uint64(offset), uint64(take), true
		}
		h.fill += take
		offset += take
		n -= take
		if h.fill == h.blockSize {
			h.closeBlock()
		}
	}
}

// AppendTokens appends real token ids.
func (h *BlockHasher) AppendTokens(ids []int) {
	for _, id := range ids {
		h.flushPending()
		h.state = mix(h.state, uint64(id)^tokenSalt)
		h.fill++
		if h.fill == h.blockSize {
			h.closeBlock()
		}
	}
}

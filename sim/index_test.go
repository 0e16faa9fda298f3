package sim

import (
	"math/rand/v2"
	"testing"
)

// FuzzBlockIndex checks the open-addressing table against a Go map under a
// random mix of inserts and deletes.
func FuzzBlockIndex(f *testing.F) {
	f.Add(uint64(1), uint16(500), uint8(8))
	f.Add(uint64(2), uint16(3000), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, ops uint16, keyBits uint8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const capacity = 64
		x := newBlockIndex(capacity)
		ref := map[uint64]int32{}
		space := uint64(1) << (keyBits%12 + 1)
		for i := range int(ops) {
			h := rng.Uint64N(space) + 1
			if rng.IntN(2) == 0 && len(ref) < capacity {
				_, had := ref[h]
				if x.put(h, int32(i)) == had {
					t.Fatalf("put %d: inserted=%v but present=%v", h, !had, had)
				}
				if !had {
					ref[h] = int32(i)
				}
			} else {
				x.del(h)
				delete(ref, h)
			}
			if x.n != len(ref) {
				t.Fatalf("size %d, want %d", x.n, len(ref))
			}
		}
		for h, v := range ref {
			if got, ok := x.get(h); !ok || got != v {
				t.Fatalf("get %d = %d,%v want %d", h, got, ok, v)
			}
		}
		for h := uint64(1); h <= space; h++ {
			if _, ok := ref[h]; !ok {
				if _, found := x.get(h); found {
					t.Fatalf("get %d found a deleted key", h)
				}
			}
		}
	})
}

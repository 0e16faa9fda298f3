package sim

import (
	"fmt"
	"slices"
	"testing"
)

// A block's hash is its prefix's: the same tokens give the same hashes
// however the runs that carry them are split, and any other prefix gives
// another hash. Sequences here share a prefix of varying length, then go
// on in one of a few contents from one of several offsets, so that blocks
// differ only in their key, only in their offset, or only in their
// parent; none of some 300,000 blocks may share a hash with a block of
// another prefix.
func TestBlockHashesNameTheirPrefix(t *testing.T) {
	const bs = 16
	type run struct{ key, off, n int }
	byHash := map[uint64]string{}
	byPrefix := map[string]uint64{}
	blocks := 0
	for s := range 1000 {
		// groups of eight share a prefix; in a group, four contents from
		// two offsets each
		g := s / 8
		var runs []run
		if p := bs*(g%40) + g%7; p > 0 {
			runs = append(runs, run{1, 0, p})
		}
		runs = append(runs, run{2 + s/2%4 + 4*(g%10), s % 2 * (bs + 3), bs * 300})
		// the same content in one call per run, and in pieces of 5 tokens
		whole, pieces := NewBlockHasher(bs), NewBlockHasher(bs)
		for _, r := range runs {
			whole.AppendRun(uint64(r.key), r.off, r.n)
			for i := 0; i < r.n; i += 5 {
				pieces.AppendRun(uint64(r.key), r.off+i, min(5, r.n-i))
			}
		}
		if !slices.Equal(whole.Hashes(), pieces.Hashes()) {
			t.Fatalf("sequence %d: hashes depend on how its runs were split", s)
		}
		for i, h := range whole.Hashes() {
			// the prefix up to block i's end, as runs of (key, offset, tokens)
			prefix, left := "", (i+1)*bs
			for _, r := range runs {
				n := min(r.n, left)
				prefix += fmt.Sprintf("%d@%d+%d;", r.key, r.off, n)
				if left -= n; left == 0 {
					break
				}
			}
			if other, ok := byHash[h]; ok && other != prefix {
				t.Fatalf("blocks of prefixes %s and %s share hash %#x", other, prefix, h)
			}
			if other, ok := byPrefix[prefix]; ok && other != h {
				t.Fatalf("prefix %s hashed %#x and %#x", prefix, other, h)
			}
			byHash[h], byPrefix[prefix] = prefix, h
			blocks++
		}
	}
	if len(byHash) < 100000 {
		t.Fatalf("%d distinct prefixes of %d blocks: the test did not reach what it tests", len(byHash), blocks)
	}
}

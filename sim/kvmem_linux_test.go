//go:build linux

package sim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// residentBytes is the process's resident set (/proc/self/statm).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// The KV cache's arrays live outside the Go heap (huge pages): a pool that
// is no longer reachable gives them back, so a plan that builds engine
// after engine does not grow. Sixteen pools of 200,000 blocks (half
// the reference replica's) would hold 73 MiB of block records if none
// were freed.
func TestKVArraysAreFreed(t *testing.T) {
	const blocks, pools = 200_000, 16
	before := residentBytes(t)
	for i := range pools {
		p := newBlockPool(blocks, true, true)
		if p.size() != blocks || p.numFree != blocks {
			t.Fatalf("pool %d: %d blocks, %d free", i, p.size(), p.numFree)
		}
		if i%4 == 3 {
			runtime.GC()
		}
	}
	leaked := int64(pools) * blocks * 24 // bytes of block records
	var grown int64
	for range 50 { // cleanups run on their own goroutine after a collection
		runtime.GC()
		if grown = residentBytes(t) - before; grown < leaked/4 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("after %d pools the resident set grew %d MiB, a quarter of leaking them all is %d MiB", pools, grown>>20, leaked>>22)
}

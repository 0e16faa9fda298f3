//go:build linux

package sim

import (
	"runtime"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on x86-64 (and arm64
// with 4 KiB base pages).
const hugePage = 2 << 20

// kvSlice returns n zeroed Ts for the KV cache's per-block records and its
// prefix index, in anonymous memory the kernel is asked to back with
// transparent huge pages (madvise MADV_HUGEPAGE, honoured where
// /sys/kernel/mm/transparent_hugepage/enabled is madvise or always). A day
// of the reference fleet touches these arrays at random, one cache line per
// KV block, across tens of megabytes a replica: with 4 KiB pages nearly
// every access also misses the TLB. T must hold no Go pointers (the
// garbage collector does not scan this memory). The memory is returned to
// the kernel when owner becomes unreachable. Faulting huge pages in costs
// the kernel time (tens of milliseconds an engine), which only a long run
// earns back: without huge, for arrays under a huge page, or where the
// mapping fails, it is ordinary heap memory.
func kvSlice[T, O any](owner *O, n int, huge bool) []T {
	var zero T
	size := int(unsafe.Sizeof(zero)) * n
	if !huge || size < hugePage {
		return make([]T, n)
	}
	size = (size + hugePage - 1) / hugePage * hugePage
	mem, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]T, n)
	}
	off := (hugePage - int(uintptr(unsafe.Pointer(&mem[0]))%hugePage)) % hugePage
	aligned := mem[off : off+size]
	_ = syscall.Madvise(aligned, syscall.MADV_HUGEPAGE) // advice: without it the pages are small
	runtime.AddCleanup(owner, func(m []byte) { _ = syscall.Munmap(m) }, mem)
	return unsafe.Slice((*T)(unsafe.Pointer(&aligned[0])), n)
}

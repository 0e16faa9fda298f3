//go:build !linux

package sim

// kvSlice returns n zeroed Ts (kvmem_linux.go asks for huge pages).
func kvSlice[T, O any](_ *O, n int, _ bool) []T { return make([]T, n) }

package tally

import (
	"sync/atomic"
	"unsafe"
)

// arena is memory of a live tally mapped outside the Go heap.
// A tally of 1,000,000 accounts is about 80 MiB of keys and tables that
// hold no pointer: in the Go heap the garbage collector lets the heap
// grow to twice what is live before it collects, so the process peaked
// near twice the tally (195 MiB, docs/benchmarks.md). Outside it, the
// tally costs its own size and the collector paces only the rest.
//
// The tally's memory is returned when its Live is no longer reachable
// (a cleanup NewLive attaches), and a table replaced by a larger one at
// once. A tally is used by one goroutine at a time (the enumeration that
// seeds it, then the Follower of services/holders/follow under its
// lock), so an arena has no lock.
type arena struct {
	regions map[uintptr][]byte // by the address of their first byte
	mapped  atomic.Int64       // (atomic: read by tests while a cleanup runs)
}

// mappedTotal is the memory of every arena not yet released, for
// MappedBytes.
var mappedTotal atomic.Int64

// MappedBytes is the memory the live tallies hold outside the Go heap:
// the sum of their Bytes while they are reachable.
func MappedBytes() int64 { return mappedTotal.Load() }

func newArena() *arena { return &arena{regions: map[uintptr][]byte{}} }

// arenaSlice returns n zeroed elements in a, or in the Go heap when a is
// nil (a Count's set, short-lived).
func arenaSlice[T any](a *arena, n int) []T {
	if a == nil {
		return make([]T, n)
	}
	var zero T
	b := mapAnon(n * int(unsafe.Sizeof(zero)))
	a.regions[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = b
	a.mapped.Add(int64(len(b)))
	mappedTotal.Add(int64(len(b)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// arenaFree returns s, made by arenaSlice in a, at once: nothing may use
// it after.
func arenaFree[T any](a *arena, s []T) {
	if a == nil || len(s) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	if b, ok := a.regions[p]; ok {
		delete(a.regions, p)
		a.unmap(b)
	}
}

func (a *arena) unmap(b []byte) {
	a.mapped.Add(-int64(len(b)))
	mappedTotal.Add(-int64(len(b)))
	unmapAnon(b)
}

// release returns every region of a (the cleanup of its Live).
func (a *arena) release() {
	for p, b := range a.regions {
		delete(a.regions, p)
		a.unmap(b)
	}
}

//go:build unix

package tally

import (
	"fmt"
	"syscall"
)

// mapAnon maps n bytes of zeroed private memory. A failure is the
// machine's memory exhausted, as a failed allocation in the Go heap is,
// and ends the process the same way.
func mapAnon(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("holders: mapping %d bytes for the live count: %v", n, err))
	}
	return b
}

func unmapAnon(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic(fmt.Sprintf("holders: unmapping %d bytes of the live count: %v", len(b), err))
	}
}

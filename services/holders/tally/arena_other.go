//go:build !unix

package tally

// Without mmap the tally lives in the Go heap.
func mapAnon(n int) []byte { return make([]byte, n) }

func unmapAnon([]byte) {}

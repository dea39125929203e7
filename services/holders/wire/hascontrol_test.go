package wire

import "testing"

// TestHasControl checks the eight-bytes-at-a-time test against the
// definition: every byte value, at every position of a 17-byte string
// (both halves of a word and the tail), among fillers on both sides of
// 0x20 and of the high bit.
func TestHasControl(t *testing.T) {
	for pos := range 17 {
		for c := range 256 {
			for _, fill := range []byte{' ', '!', 'a', 0x7f, 0x80, 0xff} {
				b := make([]byte, 17)
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				if got, want := hasControl(b), c < 0x20; got != want {
					t.Fatalf("byte %#x at %d among %#x: hasControl %v, want %v", c, pos, fill, got, want)
				}
			}
		}
	}
}

package serve

import (
	"net"
	"strings"
	"testing"
)

// TestConsume: what a partial writev took is dropped from the front of
// the buffers, whole buffers and part of one.
func TestConsume(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "ab|cde|f"}, {1, "b|cde|f"}, {2, "cde|f"}, {4, "e|f"}, {5, "f"}, {6, ""}} {
		bufs := net.Buffers{[]byte("ab"), []byte("cde"), []byte("f")}
		consume(&bufs, c.n)
		var got []string
		for _, b := range bufs {
			got = append(got, string(b))
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("consume %d: %q, want %q", c.n, strings.Join(got, "|"), c.want)
		}
	}
}

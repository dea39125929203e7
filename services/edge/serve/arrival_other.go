//go:build !linux

package serve

import "net"

// rxStamps is Linux's read with the kernel's receive timestamps
// (arrival_linux.go). Elsewhere a request's duration starts at the
// handler's clock.
type rxStamps struct{}

func stampListener(net.Listener) {}

func newRxStamps(net.Conn) *rxStamps { return nil }

func (*rxStamps) read([]byte) (int, int64, error) { return 0, 0, nil }

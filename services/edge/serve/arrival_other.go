//go:build !linux || !(amd64 || arm64 || riscv64 || ppc64le || loong64)

package serve

import "net"

// rxStamps is 64-bit Linux's read with the kernel's receive timestamps
// (arrival_linux.go). Elsewhere a request's duration starts at the
// handler's clock.
type rxStamps struct{}

func stampListener(net.Listener) {}

func newRxStamps(net.Conn) *rxStamps { return nil }

func (*rxStamps) read([]byte) (int, int64, error) { return 0, 0, nil }

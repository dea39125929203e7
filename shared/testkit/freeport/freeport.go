// Package freeport hands tests free loopback TCP ports, never one of the
// last ones it handed out in the process.
//
// A port is found by listening on 127.0.0.1:0 and closing the listener,
// so the kernel may give the same port to the next caller: two ports
// asked for one after the other (an API and an operations listener) could
// be equal, and the second server then failed with "address already in
// use". The last `recent` ports handed out are remembered and skipped; an
// older one is long bound by its user or free again, and remembering every
// port would exhaust the kernel's range in a long test process.
package freeport

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

// recent is how many of the last ports handed out are skipped: far more
// than one process asks for at once, far fewer than the kernel's range
// (about 28,000 ports).
const recent = 4096

var (
	mu     sync.Mutex
	issued = map[int]bool{}
	order  []int // issued's ports, oldest first
)

// Port returns a loopback port that was free a moment ago and that none
// of the last calls in this process returned.
func Port(tb testing.TB) int {
	tb.Helper()
	p, err := Take()
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	return p
}

// Addr is Port as "127.0.0.1:port".
func Addr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(tb)))
}

// Take is Port for code without a testing.TB.
func Take() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	// Listeners on ports handed out lately are held open until a new one
	// is found, so the kernel cannot offer the same one again.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		if issued[p] {
			held = append(held, l)
			continue
		}
		_ = l.Close()
		if len(order) == recent {
			delete(issued, order[0])
			order = order[1:]
		}
		issued[p] = true
		order = append(order, p)
		return p, nil
	}
}

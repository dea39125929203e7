// Package freeport hands tests free loopback TCP ports, never the same one
// twice in a process.
//
// A port is found by listening on 127.0.0.1:0 and closing the listener,
// so the kernel may give the same port to the next caller: two ports
// asked for one after the other (an API and an operations listener) could
// be equal, and the second server then failed with "address already in
// use". Every port handed out is remembered, and one already handed out
// is skipped.
package freeport

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	issued = map[int]bool{}
)

// Port returns a loopback port that was free a moment ago and that no
// earlier call in this process returned.
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
	// Listeners on ports already handed out are held open until a new one
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
		if !issued[p] {
			_ = l.Close()
			issued[p] = true
			return p, nil
		}
		held = append(held, l)
	}
}

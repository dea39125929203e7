//go:build !linux

package serve

// hangups is Linux's watch of the streams' sockets (hangup_linux.go).
// Elsewhere a stream whose client left is found at its next write, a
// heartbeat at the latest.
type hangups struct{}

func newHangups(func(*stream)) (*hangups, error) { return nil, nil }
func (*hangups) watch(*stream)                   {}
func (*hangups) unwatch(*stream)                 {}
func (*hangups) close()                          {}
